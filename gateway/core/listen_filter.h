#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace relay::gateway {

// One 2026-07-28 subscriptions/listen stream's rules: what its agent asked to
// hear (list changes by kind, updates of some resources), the first message
// (acknowledged, with the honored subset) and the last (the listen request's
// result, on a clean end), and every notification tagged with the stream's
// subscription id (the listen request's JSON-RPC id, echoed exactly).
class ListenFilter {
 public:
  // From the listen request's id and params; an error text for params the
  // agent must fix (no notifications object, URIs that are not strings, more
  // URIs than max_uris).
  static std::variant<ListenFilter, std::string> Parse(const nlohmann::json& id,
                                                       const nlohmann::json& params,
                                                       size_t max_uris);

  std::string Acknowledged() const;
  // The message as the agent gets it on this stream, or none when it did not
  // ask for its kind.
  std::optional<std::string> Pass(absl::string_view message) const;
  // The response that ends the stream cleanly (the gateway shuts down).
  std::string Closed() const;
  // The response that ends it because it missed notifications (its account
  // fanned out beyond its budget): an error, so that the agent listens again
  // rather than take the end for a clean one.
  std::string Failed(absl::string_view why) const;

  const std::vector<std::string>& uris() const { return uris_; }
  // Updates of uri never pass (a resource the agent may not see: it is
  // acknowledged as an unknown one would be).
  void Mute(const std::string& uri) { muted_.push_back(uri); }

 private:
  std::string Tagged(nlohmann::json message) const;

  nlohmann::json id_;
  bool tools_ = false;
  bool prompts_ = false;
  bool resources_ = false;
  std::vector<std::string> uris_;
  std::vector<std::string> muted_;
};

}  // namespace relay::gateway
