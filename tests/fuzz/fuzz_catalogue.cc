// The catalogue reader on any file content.
#include <cstddef>
#include <cstdint>

#include "gateway/core/catalogue.h"
#include "gateway/core/jsonrpc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  auto catalogue = relay::gateway::Catalogue::Parse(text);
  if (catalogue.ok()) {
    // What a list request answers must be JSON again.
    if (relay::gateway::NestsDeeperThan(catalogue->tools, 1000)) {
      __builtin_trap();
    }
  }
  return 0;
}
