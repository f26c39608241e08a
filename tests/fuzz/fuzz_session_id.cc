// The session-id verifier on anything an agent may put in Mcp-Session-Id.
#include <cstddef>
#include <cstdint>

#include "gateway/core/session_id.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const relay::gateway::SessionIdSigner signer(std::string(32, 's'));
  absl::string_view id(reinterpret_cast<const char*>(data), size);
  auto account = signer.Verify(id);
  if (account.ok()) {
    // Only ids this signer made verify; a fuzzer cannot forge the HMAC.
    __builtin_trap();
  }
  return 0;
}
