#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace relay::authsvc {

// One HTTP answer of the host API, as far as authsvc cares.
struct HostReply {
  int status = 0;
  std::string body;
  std::string retry_after;  // the Retry-After header, when present
};

// POSTs JSON to the host API's relay routes with the relay key.
// Thread-safe; callbacks run on the client's io_context thread and must not block.
class HostApi {
 public:
  using Callback = std::function<void(absl::StatusOr<HostReply>)>;
  virtual ~HostApi() = default;
  // route: "agent/verify" or "agent/redeem". An error status means no HTTP
  // answer came within the timeout (connection refused, reset, hung).
  virtual void Post(std::string route, std::string json_body, Callback done) = 0;
};

struct HostApiOptions {
  // http:// or https://host:port/path, the route appended as ?r=ROUTE. Over
  // https the host API's certificate must name the host and chain to ca_file's
  // certificates (empty: the system's).
  std::string api_base;
  std::string ca_file;
  std::string relay_key;
  absl::Duration timeout = absl::Seconds(2);
  int max_connections = 16;
  // Requests waiting for a free connection; beyond, a request fails at once
  // (UNAVAILABLE: the gateway answers 503) instead of queueing without bound.
  size_t max_pending = 1024;
};

// The Boost.Beast implementation: a keep-alive connection pool with bounded
// concurrency; requests beyond max_connections wait in a queue of at most
// max_pending. Each request's timeout covers its wait in the queue, the name
// lookup, connecting, TLS, and the exchange.
absl::StatusOr<std::unique_ptr<HostApi>> NewHostApiClient(boost::asio::io_context& io,
                                                          HostApiOptions options);

}  // namespace relay::authsvc
