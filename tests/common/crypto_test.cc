#include "common/crypto.h"

#include <string>
#include <thread>
#include <vector>

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

TEST(Crypto, KeyedHmacGivesTheOneShotMacEveryTime) {
  HmacSha256Key key("Jefe");
  // The first Sign copies the keyed context, the next ones reuse it.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(HexEncode(key.Sign("what do ya want for nothing?")),
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  }
  // A reused context must not carry the last message into the next.
  EXPECT_EQ(key.Sign("other"), HmacSha256("Jefe", "other"));
  EXPECT_EQ(key.Sign(""), HmacSha256("Jefe", ""));
}

TEST(Crypto, KeyedHmacTakesAnEmptyOrLongKey) {
  EXPECT_EQ(HmacSha256Key("").Sign("data"), HmacSha256("", "data"));
  // Longer than SHA-256's block: HMAC hashes the key first.
  std::string long_key(200, 'k');
  EXPECT_EQ(HmacSha256Key(long_key).Sign("data"), HmacSha256(long_key, "data"));
}

TEST(Crypto, KeyedHmacSignsFromManyThreadsAtOnce) {
  HmacSha256Key key("shared");
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        std::string data = std::to_string(t * 100000 + i);
        if (key.Sign(data) != HmacSha256("shared", data)) ++wrong[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
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
