#pragma once

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "gateway/core/json_scan.h"
#include "nlohmann/json.hpp"

namespace relay::gateway {

// A JSON value kept as the text a peer sent, and parsed only when a rule must
// look deep inside it. The hot path reads the few top-level members it routes
// on (a tool's name, a progress token) straight from the text and forwards
// the text unchanged, so that a call's params are not parsed into a tree and
// written back out in every gateway (ARCHITECTURE.md: each message parsed once
// per process, passed on as bytes where it need not be read).
//
// A member's lookup follows a parsed object: the last of duplicate keys wins,
// and keys are compared unescaped, so that what a rule checks is what a peer
// that parses the same text reads.
class LazyJson {
 public:
  LazyJson() = default;  // absent
  // The scan kept for lookups holds views into text_, which a move of a short
  // (inline) string would leave behind: copies and moves scan again.
  LazyJson(const LazyJson& other) { *this = other; }
  LazyJson(LazyJson&& other) noexcept { *this = std::move(other); }
  LazyJson& operator=(const LazyJson& other);
  LazyJson& operator=(LazyJson&& other) noexcept;

  // Text that has been checked to be one JSON value (ScanJson), without
  // surrounding spaces: nothing here checks it again.
  static LazyJson FromText(std::string text);
  static LazyJson FromValue(nlohmann::json value);

  bool present() const;
  bool is_object() const;

  // The first character of a top-level member's text ('"' a string, '{' an
  // object, '[' an array, 't', 'f', 'n', or a number's first), or none when
  // there is no such member (or this is not an object).
  std::optional<char> KindOf(absl::string_view key) const;
  // A top-level member that is a string, unescaped.
  std::optional<std::string> StringOf(absl::string_view key) const;
  // A top-level member that is an object; absent otherwise.
  LazyJson ObjectOf(absl::string_view key) const;

  // The value, parsed on first use (null when absent).
  const nlohmann::json& value() const;
  // The value to change; text() then writes it out.
  nlohmann::json& mutable_value();
  // The text to forward: as received unless changed; empty when absent.
  std::string text() const&;
  // The same, taken out of a LazyJson that is done with (no copy).
  std::string text() &&;

 private:
  // The raw text of a top-level member, when read from the text.
  std::optional<absl::string_view> RawMember(absl::string_view key) const;

  bool present_ = false;  // text_ holds a value
  std::string text_;
  mutable std::optional<nlohmann::json> value_;
  bool changed_ = false;  // value_ differs from text_
  // text_'s top-level members, scanned on the first lookup.
  mutable std::optional<ScannedJson> scan_;
};

}  // namespace relay::gateway
