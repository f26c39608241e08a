#include "gateway/core/trusted_proxies.h"

#include "gtest/gtest.h"

namespace relay::gateway {
namespace {

TrustedProxies Make(std::vector<std::string> cidrs) { return *TrustedProxies::Parse(cidrs); }

TEST(TrustedProxies, ContainsByPrefix) {
  TrustedProxies p = Make({"10.0.0.0/8", "192.168.1.7", "fd00::/8"});
  EXPECT_TRUE(p.Contains("10.200.3.4"));
  EXPECT_FALSE(p.Contains("11.0.0.1"));
  EXPECT_TRUE(p.Contains("192.168.1.7"));
  EXPECT_FALSE(p.Contains("192.168.1.8"));
  EXPECT_TRUE(p.Contains("fd12::1"));
  EXPECT_TRUE(p.Contains("::ffff:10.1.1.1"));  // a v4 peer on a dual-stack socket
  EXPECT_FALSE(p.Contains("not an address"));
}

TEST(TrustedProxies, BadEntriesAreRefused) {
  for (const char* bad : {"10.0.0.0/33", "nonsense", "10.0.0.0/8/1", "::/129", "1.2.3.4/x"}) {
    EXPECT_FALSE(TrustedProxies::Parse({bad}).ok()) << bad;
  }
}

TEST(TrustedProxies, HeadersCountOnlyFromATrustedPeer) {
  TrustedProxies p = Make({"127.0.0.1"});
  EXPECT_EQ(p.ClientAddress("203.0.113.9", "198.51.100.1", std::nullopt), "203.0.113.9");
  EXPECT_EQ(p.ClientAddress("127.0.0.1", "198.51.100.1", std::nullopt), "198.51.100.1");
  EXPECT_EQ(p.ClientAddress("127.0.0.1", std::nullopt, std::nullopt), "127.0.0.1");
}

TEST(TrustedProxies, ForwardedForIsReadFromTheRight) {
  TrustedProxies p = Make({"127.0.0.1", "10.0.0.0/8"});
  // A client may forge the left part; the right-most untrusted hop is the agent.
  EXPECT_EQ(p.ClientAddress("127.0.0.1", std::nullopt, "6.6.6.6, 198.51.100.2, 10.1.2.3"),
            "198.51.100.2");
  EXPECT_EQ(p.ClientAddress("127.0.0.1", "junk", "198.51.100.3"), "198.51.100.3");
}

}  // namespace
}  // namespace relay::gateway
