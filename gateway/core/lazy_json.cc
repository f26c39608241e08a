#include "gateway/core/lazy_json.h"

#include <utility>

#include "gateway/core/jsonrpc.h"

namespace relay::gateway {

LazyJson& LazyJson::operator=(const LazyJson& other) {
  if (this == &other) {
    return *this;
  }
  present_ = other.present_;
  text_ = other.text_;
  value_ = other.value_;
  changed_ = other.changed_;
  scan_.reset();
  return *this;
}

LazyJson& LazyJson::operator=(LazyJson&& other) noexcept {
  if (this == &other) {
    return *this;
  }
  present_ = other.present_;
  text_ = std::move(other.text_);
  value_ = std::move(other.value_);
  changed_ = other.changed_;
  scan_.reset();
  other.scan_.reset();
  return *this;
}

LazyJson LazyJson::FromText(std::string text) {
  LazyJson json;
  json.present_ = true;
  json.text_ = std::move(text);
  return json;
}

LazyJson LazyJson::FromValue(nlohmann::json value) {
  LazyJson json;
  json.value_ = std::move(value);
  json.changed_ = true;
  return json;
}

bool LazyJson::is_object() const {
  return value_ ? value_->is_object() : !text_.empty() && text_.front() == '{';
}

std::optional<absl::string_view> LazyJson::RawMember(absl::string_view key) const {
  if (!scan_) {
    scan_ = ScanJson(text_);
  }
  const JsonMember* member = FindMember(*scan_, key);
  // A view into text_, which outlives the scan.
  return member != nullptr ? std::optional<absl::string_view>(member->value) : std::nullopt;
}

std::optional<char> LazyJson::KindOf(absl::string_view key) const {
  if (!is_object()) {
    return std::nullopt;
  }
  if (!value_) {
    std::optional<absl::string_view> raw = RawMember(key);
    return raw && !raw->empty() ? std::optional<char>(raw->front()) : std::nullopt;
  }
  auto it = value_->find(key);
  if (it == value_->end()) {
    return std::nullopt;
  }
  switch (it->type()) {
    case nlohmann::json::value_t::string:
      return '"';
    case nlohmann::json::value_t::object:
      return '{';
    case nlohmann::json::value_t::array:
      return '[';
    case nlohmann::json::value_t::boolean:
      return it->get<bool>() ? 't' : 'f';
    case nlohmann::json::value_t::null:
      return 'n';
    default:
      return '0';
  }
}

std::optional<std::string> LazyJson::StringOf(absl::string_view key) const {
  if (!is_object()) {
    return std::nullopt;
  }
  if (value_) {
    auto it = value_->find(key);
    if (it == value_->end() || !it->is_string()) {
      return std::nullopt;
    }
    return it->get<std::string>();
  }
  std::optional<absl::string_view> raw = RawMember(key);
  if (!raw || raw->empty() || raw->front() != '"') {
    return std::nullopt;
  }
  if (raw->find('\\') == absl::string_view::npos) {
    return std::string(raw->substr(1, raw->size() - 2));
  }
  // Rare: let the parser unescape a string the scan has checked.
  return nlohmann::json::parse(*raw, nullptr, /*allow_exceptions=*/false).get<std::string>();
}

LazyJson LazyJson::ObjectOf(absl::string_view key) const {
  if (!is_object()) {
    return LazyJson();
  }
  if (value_) {
    auto it = value_->find(key);
    return it != value_->end() && it->is_object() ? FromValue(*it) : LazyJson();
  }
  std::optional<absl::string_view> raw = RawMember(key);
  return raw && !raw->empty() && raw->front() == '{' ? FromText(std::string(*raw)) : LazyJson();
}

const nlohmann::json& LazyJson::value() const {
  if (!value_) {
    // The text has been checked: this parse cannot fail.
    value_ = present_ ? nlohmann::json::parse(text_, nullptr, /*allow_exceptions=*/false)
                      : nlohmann::json(nullptr);
  }
  return *value_;
}

nlohmann::json& LazyJson::mutable_value() {
  value();
  changed_ = true;
  return *value_;
}

bool LazyJson::present() const { return changed_ ? !value_->is_null() : present_; }

std::string LazyJson::text() const& {
  if (changed_) {
    return value_->is_null() ? "" : DumpJson(*value_);
  }
  return text_;
}

std::string LazyJson::text() && {
  if (changed_) {
    return value_->is_null() ? "" : DumpJson(*value_);
  }
  scan_.reset();  // its views were into text_
  return std::move(text_);
}

}  // namespace relay::gateway
