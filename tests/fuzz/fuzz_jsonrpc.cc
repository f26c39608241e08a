// The JSON-RPC codec on anything: decode, and encode back what was decoded. The
// scanner that stands in for a parse must judge every text as nlohmann does.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "gateway/core/json_scan.h"
#include "gateway/core/jsonrpc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace relay::gateway;
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  if (ScanJson(text).valid != nlohmann::json::accept(text)) std::abort();
  auto decoded = DecodeMessage(text);
  if (auto* message = std::get_if<RpcMessage>(&decoded)) {
    std::string params = DumpJson(message->params);
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
