#include "common/crypto.h"

#include "gtest/gtest.h"

namespace relay::common {
namespace {

TEST(Crypto, Sha256HexKnownAnswer) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Crypto, HmacSha256KnownAnswer) {
  // RFC 4231, test case 2.
  EXPECT_EQ(HexEncode(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(Crypto, SecureEquals) {
  EXPECT_TRUE(SecureEquals("abc", "abc"));
  EXPECT_FALSE(SecureEquals("abc", "abd"));
  EXPECT_FALSE(SecureEquals("abc", "abcd"));
}

TEST(Crypto, RandomBytesDiffer) {
  EXPECT_EQ(RandomBytes(16).size(), 16u);
  EXPECT_NE(RandomBytes(16), RandomBytes(16));
}

}  // namespace
}  // namespace relay::common
