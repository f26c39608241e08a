#include "absl/strings/string_view.h"
#include "gateway/core/jsonrpc.h"

#include "absl/strings/str_cat.h"

namespace relay::gateway {
namespace {

bool IsValidId(const nlohmann::json& id) {
  return id.is_string() || id.is_number_integer() || id.is_number_unsigned();
}

}  // namespace

std::string DumpJson(const nlohmann::json& value) {
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
                    std::move(id)};
}

std::variant<RpcMessage, RpcFailure> DecodeMessage(absl::string_view text, int max_depth) {
  if (NestsDeeperThan(text, max_depth)) {
    return TooDeep(text, max_depth);
  }
  nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    return RpcFailure{kParseError, "Parse error: the body is not valid JSON", nullptr};
  }
  return DecodeValue(std::move(value));
}

std::variant<RpcMessage, RpcFailure> DecodeValue(nlohmann::json value) {
  if (!value.is_object()) {
    return RpcFailure{kInvalidRequest, "Invalid Request: expected a JSON-RPC object", nullptr};
  }
  nlohmann::json id = nullptr;
  bool has_id = false;
  if (auto it = value.find("id"); it != value.end()) {
    if (!IsValidId(*it)) {
      return RpcFailure{kInvalidRequest, "Invalid Request: id must be a string or an integer",
                        nullptr};
    }
    id = std::move(*it);
    has_id = true;
  }
  auto version = value.find("jsonrpc");
  if (version == value.end() || !version->is_string() || *version != "2.0") {
    return RpcFailure{kInvalidRequest, "Invalid Request: jsonrpc must be \"2.0\"", id};
  }
  RpcMessage message;
  message.id = std::move(id);
  auto method = value.find("method");
  if (method != value.end()) {
    if (!method->is_string()) {
      return RpcFailure{kInvalidRequest, "Invalid Request: method must be a string", message.id};
    }
    message.method = method->get<std::string>();
    message.kind = has_id ? RpcMessage::Kind::kRequest : RpcMessage::Kind::kNotification;
    if (auto params = value.find("params"); params != value.end()) {
      if (!params->is_object() && !params->is_array()) {
        return RpcFailure{kInvalidRequest, "Invalid Request: params must be an object or array",
                          message.id};
      }
      message.params = std::move(*params);
    }
    return message;
  }
  auto result = value.find("result");
  auto error = value.find("error");
  if (!has_id || (result == value.end()) == (error == value.end())) {
    return RpcFailure{kInvalidRequest,
                      "Invalid Request: expected a method, or an id with result or error",
                      message.id};
  }
  message.kind = RpcMessage::Kind::kResponse;
  message.is_error = error != value.end();
  if (message.is_error && !error->is_object()) {
    return RpcFailure{kInvalidRequest, "Invalid Request: error must be an object", message.id};
  }
  message.payload = std::move(message.is_error ? *error : *result);
  return message;
}

std::string EncodeResult(const nlohmann::json& id, absl::string_view raw_result) {
  return absl::StrCat(R"({"jsonrpc":"2.0","id":)", DumpJson(id), R"(,"result":)", raw_result,
                      "}");
}

std::string EncodeRawError(const nlohmann::json& id, absl::string_view raw_error) {
  return absl::StrCat(R"({"jsonrpc":"2.0","id":)", DumpJson(id), R"(,"error":)", raw_error,
                      "}");
}

std::string EncodeError(const nlohmann::json& id, int code, absl::string_view message) {
  nlohmann::json error = {{"code", code}, {"message", message}};
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
