#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
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

// A latency histogram in seconds with fixed buckets (0.5 ms to 30 s), cheap
// enough for the hot path: two relaxed atomic adds per observation.
class Histogram {
 public:
  static constexpr double kBounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                       0.25,   0.5,   1,      2.5,   5,    10,    30};
  static constexpr size_t kBuckets = sizeof(kBounds) / sizeof(kBounds[0]) + 1;  // and +Inf

  void Observe(double seconds);
  // The upper bound of the bucket that holds the q-quantile (the largest
  // finite bound for +Inf), 0 when nothing was observed.
  double Quantile(double q) const;
  uint64_t count() const;
  // Per bucket (not cumulative) and the sum, as read now.
  uint64_t bucket(size_t i) const { return buckets_[i].load(std::memory_order_relaxed); }
  double sum() const { return static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9; }

 private:
  std::atomic<uint64_t> buckets_[kBuckets] = {};
  std::atomic<uint64_t> sum_ns_{0};
};

// Builds the Prometheus text exposition format.
class MetricsText {
 public:
  void Add(const std::string& name, const std::string& help, const std::string& type,
           double value, const std::string& labels = "");
  // name_bucket{le=...}, name_sum and name_count, cumulative as Prometheus wants.
  void AddHistogram(const std::string& name, const std::string& help, const Histogram& histogram,
                    const std::string& labels = "");
  std::string str() const { return text_; }

 private:
  std::string text_;
  std::string last_name_;
};

// A request to an operator port other than GET /metrics and /healthz.
struct OperatorRequest {
  std::string method;
  std::string target;
  // X-Relay-Signature, for routes only the host API may call: the body
  // signed with the relay key (authsvc/forget_hook.h), never the key itself.
  std::string relay_signature;
  std::string body;
};
struct OperatorReply {
  int status = 404;
  std::string body;  // JSON
};
// Answers a route of its own, or nullopt (404).
using OperatorHandler = std::function<std::optional<OperatorReply>(const OperatorRequest&)>;

// A minimal HTTP listener for /metrics and /healthz on its own thread (router
// and authsvc, whose main port speaks gRPC). render and handler run on that
// thread, one request at a time (bodies up to 1 MiB).
class MetricsServer {
 public:
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& listen,
                                                              std::function<std::string()> render,
                                                              OperatorHandler handler = nullptr);
  virtual ~MetricsServer() = default;
  virtual int port() const = 0;
};

}  // namespace relay::common
