#pragma once

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace relay::common {

// Text that came from outside (a tab's client name, an account) and is shown
// to people.

// At most max_bytes of text, cut at a UTF-8 character boundary (valid UTF-8
// stays valid).
std::string TruncateUtf8(absl::string_view text, size_t max_bytes);

// Whether text is well-formed UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF). Runs of ASCII are checked eight bytes
// at a time: a tab's messages are mostly ASCII JSON.
bool IsValidUtf8(absl::string_view text);

// The length (2 to 4) of the well-formed multi-byte UTF-8 sequence at p, by
// RFC 3629's table, or 0 when there is none before end. p < end, *p >= 0x80.
int Utf8SequenceLength(const unsigned char* p, const unsigned char* end);

// text for a terminal: control characters (C0, DEL, and C1 written as UTF-8)
// and the backslash are written as \xNN / \\, so that a name cannot move the
// cursor, recolour or rewrite an operator's screen. Other bytes pass.
std::string EscapeForTerminal(absl::string_view text);

}  // namespace relay::common
