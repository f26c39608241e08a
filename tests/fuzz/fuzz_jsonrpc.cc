// The JSON-RPC codec on anything: decode, and encode back what was decoded. The
// scanner that stands in for a parse must judge every text as nlohmann does.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "gateway/core/json_scan.h"
#include "gateway/core/jsonrpc.h"
#include "gateway/core/lazy_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace relay::gateway;
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  if (ScanJson(text).valid != nlohmann::json::accept(text)) std::abort();
  auto decoded = DecodeMessage(text);
  if (auto* message = std::get_if<RpcMessage>(&decoded)) {
    std::string params = message->params.text();
    // What the hot path reads from the text is what a parse of it reads.
    LazyJson from_text = LazyJson::FromText(params);
    LazyJson parsed = LazyJson::FromValue(nlohmann::json::parse(params, nullptr, false));
    if (!params.empty() && parsed.value().is_discarded()) std::abort();
    for (const char* key : {"name", "uri", "ref", "_meta", "progressToken"}) {
      std::optional<char> lazy = from_text.KindOf(key), dom = parsed.KindOf(key);
      if (lazy.has_value() != dom.has_value() || (lazy && (*lazy == '"') != (*dom == '"')) ||
          (lazy && (*lazy == '{') != (*dom == '{')) ||
          from_text.StringOf(key) != parsed.StringOf(key) ||
          from_text.ObjectOf(key).StringOf("name") != parsed.ObjectOf(key).StringOf("name")) {
        std::abort();
      }
    }
    const std::string& payload = message->payload;
    EncodeResult(message->id, payload);
    EncodeRawError(message->id, payload);
    EncodeError(message->id, kInvalidParams, message->method);
    EncodeRequest(1, message->method, params);
  } else {
    const RpcFailure& failure = std::get<RpcFailure>(decoded);
    EncodeError(failure.id, failure.code, failure.message);
  }
  return 0;
}
