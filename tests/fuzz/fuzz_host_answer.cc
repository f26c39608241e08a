// authsvc's reading of the host API's answers (agent/verify, agent/redeem): a
// host API that is broken, or not the one configured, answers anything. The
// first two bytes choose the status, the next up to 8 the Retry-After header,
// the rest is the body.
#include <cstddef>
#include <cstdint>
#include <string>

#include "authsvc/host_answer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) {
    return 0;
  }
  relay::authsvc::HostReply reply;
  static const int kStatuses[] = {200, 401, 429, 404, 500, 503, 302, 204};
  reply.status = (data[0] & 0x80) ? kStatuses[data[1] % 8] : (data[0] << 8 | data[1]) % 1000;
  const size_t header = std::min<size_t>(data[2] % 9, size - 3);
  reply.retry_after.assign(reinterpret_cast<const char*>(data + 3), header);
  reply.body.assign(reinterpret_cast<const char*>(data + 3 + header), size - 3 - header);
  auto answer = relay::authsvc::InterpretHostReply(reply);
  if (answer.ok() && answer->kind == relay::authsvc::HostAnswer::Kind::kOk && answer->user.empty()) {
    __builtin_trap();  // a verdict of "ok" always names whom
  }
  return 0;
}
