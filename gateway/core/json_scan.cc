#include "gateway/core/json_scan.h"

#include <locale.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"
#include "common/text.h"
#include "nlohmann/json.hpp"

namespace relay::gateway {
namespace {

bool IsDigit(unsigned char c) { return c >= '0' && c <= '9'; }

class Scanner {
 public:
  // nlohmann reads a NUL byte outside a string as the end of the input (and
  // inside one as a control character: an error either way), so the text
  // ends at its first NUL.
  Scanner(absl::string_view text, int max_depth)
      : p_(reinterpret_cast<const unsigned char*>(text.data())),
        end_(p_ + text.substr(0, text.find('\0')).size()),
        max_depth_(static_cast<size_t>(max_depth)) {}

  ScannedJson Run() {
    ScannedJson out;
    // nlohmann skips a UTF-8 byte-order mark, and refuses a broken one.
    if (p_ < end_ && *p_ == 0xEF) {
      if (end_ - p_ < 3 || p_[1] != 0xBB || p_[2] != 0xBF) return out;
      p_ += 3;
    }
    SkipSpace();
    out.is_object = p_ < end_ && *p_ == '{';
    // The containers the scan is inside, innermost last; inline up to a
    // depth that messages seldom pass.
    absl::InlinedVector<char, 32> open;
    const unsigned char* value_start = nullptr;  // a top-level member's value
    // A member's key, recorded (and its value's start kept) at the top level.
    auto member = [&] {
      const bool top = open.size() == 1 && out.is_object;
      if (!Key(top ? &out : nullptr)) return false;
      if (top) value_start = p_;
      return true;
    };
    bool expect_value = true;
    while (true) {
      if (expect_value) {
        if (p_ >= end_) return out;
        const unsigned char c = *p_;
        if (c == '{' || c == '[') {
          open.push_back(static_cast<char>(c));
          if (open.size() > max_depth_) {
            out.too_deep = true;
            return out;
          }
          ++p_;
          SkipSpace();
          if (p_ < end_ && *p_ == (c == '{' ? '}' : ']')) {
            ++p_;
            open.pop_back();
            expect_value = false;
            continue;
          }
          if (c == '{' && !member()) return out;
          continue;  // a value follows
        }
        bool ok = c == '"'   ? String(nullptr)
                  : c == 't' ? Literal("true")
                  : c == 'f' ? Literal("false")
                  : c == 'n' ? Literal("null")
                             : Number();
        if (!ok) return out;
        expect_value = false;
        continue;
      }
      // A value just ended.
      if (open.size() == 1 && out.is_object && value_start != nullptr) {
        out.members.back().value =
            absl::string_view(reinterpret_cast<const char*>(value_start), p_ - value_start);
        value_start = nullptr;
      }
      SkipSpace();
      if (open.empty()) {
        out.valid = p_ == end_;
        return out;
      }
      if (p_ >= end_) return out;
      const char close = open.back() == '{' ? '}' : ']';
      if (*p_ == close) {
        ++p_;
        open.pop_back();
        continue;
      }
      if (*p_ != ',') return out;
      ++p_;
      SkipSpace();
      if (open.back() == '{' && !member()) return out;
      expect_value = true;
    }
  }

 private:
  void SkipSpace() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }

  // A member's key, the colon and the space before its value; a top-level
  // member's key is recorded in top.
  bool Key(ScannedJson* top) {
    if (p_ >= end_ || *p_ != '"') return false;
    const unsigned char* start = p_;
    bool escaped = false;
    if (!String(&escaped)) return false;
    if (top != nullptr) {
      JsonMember& member = top->members.emplace_back();
      if (!escaped) {
        member.key.assign(reinterpret_cast<const char*>(start + 1), p_ - start - 2);
      } else {
        // Rare: let nlohmann unescape a key that String has already checked.
        member.key = nlohmann::json::parse(start, p_).get<std::string>();
      }
    }
    SkipSpace();
    if (p_ >= end_ || *p_ != ':') return false;
    ++p_;
    SkipSpace();
    return true;
  }

  bool Literal(absl::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() ||
        absl::string_view(reinterpret_cast<const char*>(p_), word.size()) != word) {
      return false;
    }
    p_ += word.size();
    return true;
  }

  bool Digits() {
    if (p_ >= end_ || !IsDigit(*p_)) return false;
    while (p_ < end_ && IsDigit(*p_)) ++p_;
    return true;
  }

  bool Number() {
    const unsigned char* start = p_;
    bool exponent = false;
    if (p_ < end_ && *p_ == '-') ++p_;
    if (p_ >= end_) return false;
    if (*p_ == '0') {
      ++p_;
    } else if (!Digits()) {
      return false;
    }
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      if (!Digits()) return false;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      exponent = true;
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!Digits()) return false;
    }
    // nlohmann refuses a number too large for a double ("number overflow").
    // Only an exponent or some 309 digits can make one.
    constexpr ptrdiff_t kDigitsThatMayOverflow = 300;
    if (exponent || p_ - start > kDigitsThatMayOverflow) {
      static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", locale_t{});
      const std::string token(start, p_);
      // Without a C locale object, plain strtod: the services never call
      // setlocale, so their locale is "C" anyway.
      const double value = c_locale != locale_t{} ? strtod_l(token.c_str(), nullptr, c_locale)
                                                  : strtod(token.c_str(), nullptr);
      return std::isfinite(value);
    }
    return true;
  }

  // Four hex digits after "\u"; p_ is on the 'u'.
  bool Hex4(unsigned* code) {
    ++p_;
    if (end_ - p_ < 4) return false;
    *code = 0;
    for (int i = 0; i < 4; ++i, ++p_) {
      const unsigned char c = *p_;
      unsigned digit;
      if (IsDigit(c)) {
        digit = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        digit = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        digit = c - 'A' + 10;
      } else {
        return false;
      }
      *code = *code * 16 + digit;
    }
    return true;
  }

  bool Escape() {  // p_ is on the backslash
    ++p_;
    if (p_ >= end_) return false;
    switch (*p_) {
      case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
        ++p_;
        return true;
      case 'u': {
        unsigned code;
        if (!Hex4(&code)) return false;
        if (code >= 0xDC00 && code <= 0xDFFF) return false;  // a low surrogate alone
        if (code >= 0xD800 && code <= 0xDBFF) {
          // A high surrogate must be followed at once by a low one.
          if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
          ++p_;
          unsigned low;
          return Hex4(&low) && low >= 0xDC00 && low <= 0xDFFF;
        }
        return true;
      }
      default:
        return false;
    }
  }

  // One well-formed UTF-8 sequence of two to four bytes (RFC 3629's table:
  // no overlong forms, no surrogates, nothing above U+10FFFF).
  bool Utf8() {
    int length = common::Utf8SequenceLength(p_, end_);
    p_ += length;
    return length != 0;
  }

  // A string, quotes included; p_ is on the opening quote.
  bool String(bool* escaped) {
    ++p_;
    while (p_ < end_) {
      const unsigned char c = *p_;
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c == '\\') {
        if (escaped != nullptr) *escaped = true;
        if (!Escape()) return false;
      } else if (c < 0x20) {
        return false;  // control characters must be escaped
      } else if (c < 0x80) {
        ++p_;
      } else if (!Utf8()) {
        return false;
      }
    }
    return false;
  }

  const unsigned char* p_;
  const unsigned char* const end_;
  const size_t max_depth_;
};

}  // namespace

ScannedJson ScanJson(absl::string_view text, int max_depth) {
  return Scanner(text, std::max(0, max_depth)).Run();
}

const JsonMember* FindMember(const ScannedJson& scan, absl::string_view key) {
  for (auto it = scan.members.rbegin(); it != scan.members.rend(); ++it) {
    if (it->key == key) return &*it;
  }
  return nullptr;
}

}  // namespace relay::gateway
