#include "common/text.h"

#include <cstdint>
#include <cstring>

#include "absl/strings/str_format.h"

namespace relay::common {

std::string TruncateUtf8(absl::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) {
    return std::string(text);
  }
  size_t end = max_bytes;
  // Back up over continuation bytes (10xxxxxx) to the start of a character.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
    --end;
  }
  return std::string(text.substr(0, end));
}

bool IsValidUtf8(absl::string_view text) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(text.data());
  const unsigned char* end = p + text.size();
  while (p < end) {
    if (end - p >= 8) {
      uint64_t word;
      std::memcpy(&word, p, 8);
      if ((word & 0x8080808080808080ULL) == 0) {
        p += 8;
        continue;
      }
    }
    const unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int length = Utf8SequenceLength(p, end);
    if (length == 0) {
      return false;
    }
    p += length;
  }
  return true;
}

int Utf8SequenceLength(const unsigned char* p, const unsigned char* end) {
  const unsigned char c = *p;
  int more;
  unsigned char low = 0x80, high = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) {
    more = 1;
  } else if (c == 0xE0) {
    more = 2, low = 0xA0;
  } else if (c == 0xED) {
    more = 2, high = 0x9F;
  } else if (c >= 0xE1 && c <= 0xEF) {
    more = 2;
  } else if (c == 0xF0) {
    more = 3, low = 0x90;
  } else if (c >= 0xF1 && c <= 0xF3) {
    more = 3;
  } else if (c == 0xF4) {
    more = 3, high = 0x8F;
  } else {
    return 0;
  }
  if (end - p <= more || p[1] < low || p[1] > high) {
    return 0;
  }
  for (int i = 2; i <= more; ++i) {
    if (p[i] < 0x80 || p[i] > 0xBF) {
      return 0;
    }
  }
  return more + 1;
}

std::string EscapeForTerminal(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F) {
      absl::StrAppendFormat(&out, "\\x%02x", c);
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == 0xC2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      // U+0080..U+009F: C1 controls (CSI is U+009B).
      absl::StrAppendFormat(&out, "\\x%02x\\x%02x", c, static_cast<unsigned char>(text[i + 1]));
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace relay::common
