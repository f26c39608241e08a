#include "gateway/core/jsonrpc.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gateway/core/json_scan.h"

namespace relay::gateway {
namespace {

bool IsValidId(const nlohmann::json& id) {
  return id.is_string() || id.is_number_integer() || id.is_number_unsigned();
}

}  // namespace

std::string DumpJson(const nlohmann::json& value) {
  // An id as most clients send it, written without a serializer (each one
  // allocates its buffers): exactly what dump() writes for it.
  if (value.is_number_unsigned()) {
    return absl::StrCat(value.get<uint64_t>());
  }
  if (value.is_number_integer()) {
    return absl::StrCat(value.get<int64_t>());
  }
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (std::all_of(text.begin(), text.end(),
                    [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; })) {
      return absl::StrCat("\"", text, "\"");
    }
  }
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool NestsDeeperThan(absl::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // whatever is escaped cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth) {
          return true;
        }
        break;
      case ']':
      case '}':
        --depth;
        break;
      default:
        break;
    }
  }
  return false;
}

namespace {

// Keeps the scalar value of the top-level "id" member and nothing else.
class TopLevelIdReader : public nlohmann::json_sax<nlohmann::json> {
 public:
  nlohmann::json id = nullptr;

  bool null() override { return Scalar(nullptr); }
  bool boolean(bool v) override { return Scalar(v); }
  bool number_integer(number_integer_t v) override { return Scalar(v); }
  bool number_unsigned(number_unsigned_t v) override { return Scalar(v); }
  bool number_float(number_float_t v, const string_t&) override { return Scalar(v); }
  bool string(string_t& v) override { return Scalar(v); }
  bool binary(binary_t&) override { return Scalar(nullptr); }
  bool start_object(std::size_t) override { return Open(); }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override { return Open(); }
  bool end_array() override { return Close(); }
  bool key(string_t& k) override {
    next_is_id_ = depth_ == 1 && k == "id";
    return true;
  }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool Scalar(nlohmann::json value) {
    if (next_is_id_) {
      id = std::move(value);
      next_is_id_ = false;
    }
    return true;
  }
  bool Open() {
    next_is_id_ = false;
    ++depth_;
    return true;
  }
  bool Close() {
    --depth_;
    return true;
  }
  int depth_ = 0;
  bool next_is_id_ = false;
};

}  // namespace

nlohmann::json TopLevelId(absl::string_view text) {
  TopLevelIdReader reader;
  nlohmann::json::sax_parse(text.begin(), text.end(), &reader, nlohmann::json::input_format_t::json,
                            /*strict=*/false);
  return std::move(reader.id);
}

RpcFailure TooDeep(absl::string_view text, int max_depth) {
  nlohmann::json id = TopLevelId(text);
  if (!IsValidId(id)) {
    id = nullptr;
  }
  return RpcFailure{kParseError,
                    absl::StrCat("Parse error: JSON nested deeper than ", max_depth,
                                 " levels; send flatter JSON"),
                    std::move(id), /*too_deep=*/true};
}

namespace {

// An id or a method as most peers write them, an unescaped string or a short
// integer, made without a parser (each parse allocates its buffers): the
// value nlohmann would give for the same text, which the scan has checked.
std::optional<nlohmann::json> PlainScalar(absl::string_view raw) {
  if (raw.size() >= 2 && raw.front() == '"' && raw.find('\\') == absl::string_view::npos) {
    return nlohmann::json(std::string(raw.substr(1, raw.size() - 2)));
  }
  // Up to 18 digits cannot overflow; a fraction or an exponent makes a float.
  constexpr size_t kSafeDigits = 18;
  const bool negative = !raw.empty() && raw.front() == '-';
  absl::string_view digits = raw.substr(negative ? 1 : 0);
  if (digits.empty() || digits.size() > kSafeDigits ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  uint64_t magnitude = 0;
  for (char c : digits) magnitude = magnitude * 10 + static_cast<uint64_t>(c - '0');
  if (negative) {
    // nlohmann: a negative integer is signed, "-0" included.
    return nlohmann::json(-static_cast<int64_t>(magnitude));
  }
  return nlohmann::json(magnitude);
}

// A message's top-level members as DecodeMembers reads them, from the scan of
// its text (ScanJson) or from a parsed value (a batch's items).
class ScannedMembers {
 public:
  explicit ScannedMembers(const ScannedJson& scan) : scan_(scan) {}
  bool Has(absl::string_view key) const { return Find(key) != nullptr; }
  // '{', '[', '"' or another first character of the value's text.
  char Kind(absl::string_view key) const { return Find(key)->value.front(); }
  nlohmann::json Value(absl::string_view key) const {
    absl::string_view raw = Find(key)->value;
    if (std::optional<nlohmann::json> plain = PlainScalar(raw)) {
      return *std::move(plain);
    }
    // The scan has checked the text: this parse cannot fail.
    return nlohmann::json::parse(raw, nullptr, /*allow_exceptions=*/false);
  }
  std::string Text(absl::string_view key) const { return std::string(Find(key)->value); }
  LazyJson Json(absl::string_view key) const { return LazyJson::FromText(Text(key)); }
  bool IsString(absl::string_view key, absl::string_view expected) const {
    absl::string_view raw = Find(key)->value;
    if (raw.size() == expected.size() + 2 && raw.front() == '"' &&
        raw.substr(1, expected.size()) == expected) {
      return true;
    }
    nlohmann::json value = Value(key);  // an escaped spelling of it, perhaps
    return value.is_string() && value.get_ref<const std::string&>() == expected;
  }

 private:
  const JsonMember* Find(absl::string_view key) const { return FindMember(scan_, key); }
  const ScannedJson& scan_;
};

class ParsedMembers {
 public:
  explicit ParsedMembers(nlohmann::json& value) : value_(value) {}
  bool Has(absl::string_view key) const { return value_.contains(key); }
  char Kind(absl::string_view key) const {
    const nlohmann::json& v = value_[std::string(key)];
    return v.is_object() ? '{' : v.is_array() ? '[' : v.is_string() ? '"' : '0';
  }
  nlohmann::json Value(absl::string_view key) const { return std::move(value_[std::string(key)]); }
  std::string Text(absl::string_view key) const { return DumpJson(value_[std::string(key)]); }
  LazyJson Json(absl::string_view key) const { return LazyJson::FromValue(Value(key)); }
  bool IsString(absl::string_view key, absl::string_view expected) const {
    const nlohmann::json& v = value_[std::string(key)];
    return v.is_string() && v.get_ref<const std::string&>() == expected;
  }

 private:
  nlohmann::json& value_;
};

template <typename Members>
std::variant<RpcMessage, RpcFailure> DecodeMembers(const Members& members) {
  nlohmann::json id = nullptr;
  bool has_id = false;
  if (members.Has("id")) {
    id = members.Value("id");
    if (!IsValidId(id)) {
      return RpcFailure{kInvalidRequest, "Invalid Request: id must be a string or an integer",
                        nullptr};
    }
    has_id = true;
  }
  if (!members.Has("jsonrpc") || !members.IsString("jsonrpc", "2.0")) {
    return RpcFailure{kInvalidRequest, "Invalid Request: jsonrpc must be \"2.0\"", id};
  }
  RpcMessage message;
  message.id = std::move(id);
  if (members.Has("method")) {
    if (members.Kind("method") != '"') {
      return RpcFailure{kInvalidRequest, "Invalid Request: method must be a string", message.id};
    }
    message.method = members.Value("method").template get<std::string>();
    message.kind = has_id ? RpcMessage::Kind::kRequest : RpcMessage::Kind::kNotification;
    if (members.Has("params")) {
      if (members.Kind("params") != '{' && members.Kind("params") != '[') {
        return RpcFailure{kInvalidRequest, "Invalid Request: params must be an object or array",
                          message.id};
      }
      message.params = members.Json("params");
    }
    return message;
  }
  const bool has_result = members.Has("result");
  const bool has_error = members.Has("error");
  if (!has_id || has_result == has_error) {
    return RpcFailure{kInvalidRequest,
                      "Invalid Request: expected a method, or an id with result or error",
                      message.id};
  }
  message.kind = RpcMessage::Kind::kResponse;
  message.is_error = has_error;
  if (message.is_error && members.Kind("error") != '{') {
    return RpcFailure{kInvalidRequest, "Invalid Request: error must be an object", message.id};
  }
  message.payload = members.Text(message.is_error ? "error" : "result");
  return message;
}

}  // namespace

std::variant<RpcMessage, RpcFailure> DecodeMessage(absl::string_view text, int max_depth) {
  // One scan instead of a parse: only the members the relay reads become
  // values; a response's result or error stays the text the peer sent.
  ScannedJson scan = ScanJson(text, max_depth);
  // Too deep wins over malformed, wherever each is in the text (as when depth
  // was checked first): a tab's deep, broken answer still ends its call.
  if (scan.too_deep || (!scan.valid && NestsDeeperThan(text, max_depth))) {
    return TooDeep(text, max_depth);
  }
  if (!scan.valid) {
    return RpcFailure{kParseError, "Parse error: the body is not valid JSON", nullptr};
  }
  if (!scan.is_object) {
    return RpcFailure{kInvalidRequest, "Invalid Request: expected a JSON-RPC object", nullptr};
  }
  return DecodeMembers(ScannedMembers(scan));
}

std::variant<RpcMessage, RpcFailure> DecodeValue(nlohmann::json value) {
  if (!value.is_object()) {
    return RpcFailure{kInvalidRequest, "Invalid Request: expected a JSON-RPC object", nullptr};
  }
  return DecodeMembers(ParsedMembers(value));
}

std::string EncodeResult(const nlohmann::json& id, absl::string_view raw_result) {
  return absl::StrCat(R"({"jsonrpc":"2.0","id":)", DumpJson(id), R"(,"result":)", raw_result,
                      "}");
}

std::string EncodeRawError(const nlohmann::json& id, absl::string_view raw_error) {
  return absl::StrCat(R"({"jsonrpc":"2.0","id":)", DumpJson(id), R"(,"error":)", raw_error,
                      "}");
}

std::string EncodeErrorObject(int code, absl::string_view message) {
  return DumpJson(nlohmann::json{{"code", code}, {"message", message}});
}

std::string EncodeError(const nlohmann::json& id, int code, absl::string_view message) {
  return EncodeRawError(id, EncodeErrorObject(code, message));
}

std::string EncodeResourceNotFound(const nlohmann::json& id, absl::string_view uri) {
  nlohmann::json error = {{"code", kResourceNotFound},
                          {"message", "Resource not found"},
                          {"data", {{"uri", uri}}}};
  return EncodeRawError(id, DumpJson(error));
}

std::string EncodeRequest(uint64_t id, absl::string_view method, absl::string_view raw_params) {
  nlohmann::json name = method;
  if (raw_params.empty()) {
    return absl::StrCat(R"({"jsonrpc":"2.0","id":)", id, R"(,"method":)", DumpJson(name), "}");
  }
  return absl::StrCat(R"({"jsonrpc":"2.0","id":)", id, R"(,"method":)", DumpJson(name),
                      R"(,"params":)", raw_params, "}");
}

std::string EncodeNotification(absl::string_view method, const nlohmann::json& params) {
  nlohmann::json message = {{"jsonrpc", "2.0"}, {"method", method}, {"params", params}};
  return DumpJson(message);
}

}  // namespace relay::gateway
