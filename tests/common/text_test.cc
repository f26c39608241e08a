#include "common/text.h"

#include <gtest/gtest.h>

namespace relay::common {
namespace {

TEST(TextTest, TruncateKeepsWholeCharacters) {
  EXPECT_EQ(TruncateUtf8("editor", 64), "editor");
  EXPECT_EQ(TruncateUtf8("editor", 3), "edi");
  // "é" is two bytes: cutting inside it drops it whole.
  EXPECT_EQ(TruncateUtf8("caf\xC3\xA9", 4), "caf");
  EXPECT_EQ(TruncateUtf8("caf\xC3\xA9", 5), "caf\xC3\xA9");
  // A four-byte character cut anywhere inside.
  EXPECT_EQ(TruncateUtf8("a\xF0\x9F\x98\x80", 3), "a");
  EXPECT_EQ(TruncateUtf8("", 0), "");
}

TEST(TextTest, IsValidUtf8FollowsRfc3629) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9, \xE2\x82\xAC, \xF0\x9F\x98\x80 and a long ASCII tail"));
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));           // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));       // overlong, three bytes
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));       // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));   // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xFF"));
  // Cut short, after eight ASCII bytes checked at once.
  EXPECT_FALSE(IsValidUtf8("12345678\xE2\x82"));
  EXPECT_FALSE(IsValidUtf8("1234567890abcdef\x80"));
}

TEST(TextTest, EscapeForTerminalDisarmsControlSequences) {
  EXPECT_EQ(EscapeForTerminal("Editor 2.1"), "Editor 2.1");
  // ESC [ 2 J clears the screen; a newline would forge a table row.
  EXPECT_EQ(EscapeForTerminal("\x1b[2Jevil\nalice"), "\\x1b[2Jevil\\x0aalice");
  EXPECT_EQ(EscapeForTerminal("a\x7f"), "a\\x7f");
  EXPECT_EQ(EscapeForTerminal("back\\slash"), "back\\\\slash");
  // C1 CSI (U+009B) in UTF-8.
  EXPECT_EQ(EscapeForTerminal("x\xC2\x9B" "31m"), "x\\xc2\\x9b31m");
  // Other non-ASCII text passes.
  EXPECT_EQ(EscapeForTerminal("caf\xC3\xA9"), "caf\xC3\xA9");
}

}  // namespace
}  // namespace relay::common
