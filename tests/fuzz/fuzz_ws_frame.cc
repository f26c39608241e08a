// What a tab sends before anything else reads it: the WebSocket frames. The input's first
// byte picks a chunk size; the rest is fed once whole and once in chunks of that size, as
// reads would split it. Both must tell the same events, every text must be valid UTF-8 within
// the limit, and nothing is told after a close or a failure.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/text.h"
#include "gateway/core/ws_frame.h"

namespace {

constexpr size_t kLimit = 300;

class Recorder : public relay::gateway::WsFrameReader::Visitor {
 public:
  void OnWsText(std::string text) override {
    Check();
    if (text.size() > kLimit || !relay::common::IsValidUtf8(text)) {
      std::abort();
    }
    events.push_back(absl::StrCat("text:", text));
  }
  void OnWsPing(absl::string_view payload) override {
    Check();
    if (payload.size() > 125) {
      std::abort();
    }
    events.push_back(absl::StrCat("ping:", payload));
  }
  void OnWsClose(uint16_t code, absl::string_view reason) override {
    Check();
    ended = true;
    events.push_back(absl::StrCat("close:", code, ":", reason));
  }
  void OnWsFailure(relay::gateway::WsFailure failure, absl::string_view) override {
    Check();
    ended = true;
    events.push_back(absl::StrCat("failure:", static_cast<int>(failure)));
  }

  std::vector<std::string> events;
  bool ended = false;

 private:
  void Check() const {
    if (ended) {
      std::abort();  // told something after the end
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  size_t chunk = data[0] % 16 + 1;
  absl::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);

  relay::gateway::WsFrameReader whole_reader(kLimit);
  Recorder whole;
  whole_reader.Feed(input, whole);

  relay::gateway::WsFrameReader split_reader(kLimit);
  Recorder split;
  for (size_t at = 0; at < input.size() && !split_reader.done(); at += chunk) {
    split_reader.Feed(input.substr(at, chunk), split);
  }
  if (whole.events != split.events || whole_reader.done() != split_reader.done()) {
    std::abort();
  }
  return 0;
}
