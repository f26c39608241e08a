#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace relay::common {

// A monotonically increasing count, cheap enough for the hot path.
class Counter {
 public:
  void Add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// Builds the Prometheus text exposition format.
class MetricsText {
 public:
  void Add(const std::string& name, const std::string& help, const std::string& type,
           double value, const std::string& labels = "");
  std::string str() const { return text_; }

 private:
  std::string text_;
  std::string last_name_;
};

// A minimal HTTP listener for /metrics and /healthz on its own thread (router
// and authsvc, whose main port speaks gRPC). render runs on that thread.
class MetricsServer {
 public:
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& listen,
                                                              std::function<std::string()> render);
  virtual ~MetricsServer() = default;
  virtual int port() const = 0;
};

}  // namespace relay::common
