// What a tab's gateway does with a tab's message before anything else: the depth check,
// the top-level id of a refused message, the decode, and the re-encoding of an answer's
// payload and a notification's params that goes on to the router.
#include <cstddef>
#include <cstdint>

#include "gateway/core/jsonrpc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace relay::gateway;
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  if (NestsDeeperThan(text, kDefaultMaxJsonDepth)) {
    TooDeep(text, kDefaultMaxJsonDepth);
    return 0;
  }
  TopLevelId(text);
  auto decoded = DecodeMessage(text);
  if (auto* message = std::get_if<RpcMessage>(&decoded)) {
    DumpJson(message->payload);
    DumpJson(message->params.ObjectOf("_meta").value());
    DumpJson(message->params.value());
  }
  return 0;
}
