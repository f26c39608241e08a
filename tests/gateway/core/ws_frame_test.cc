#include "gateway/core/ws_frame.h"

#include <gtest/gtest.h>

namespace relay::gateway {
namespace {

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) {
    out.push_back(static_cast<char>(b));
  }
  return out;
}

TEST(TextFrameHeaderTest, ShortMessagesTakeTheLengthInTheSecondByte) {
  EXPECT_EQ(TextFrameHeader(0), Bytes({0x81, 0}));
  EXPECT_EQ(TextFrameHeader(125), Bytes({0x81, 125}));
}

TEST(TextFrameHeaderTest, MediumMessagesTakeTwoBytesOfLength) {
  EXPECT_EQ(TextFrameHeader(126), Bytes({0x81, 126, 0x00, 0x7e}));
  EXPECT_EQ(TextFrameHeader(65535), Bytes({0x81, 126, 0xff, 0xff}));
}

TEST(TextFrameHeaderTest, LargeMessagesTakeEightBytesOfLength) {
  EXPECT_EQ(TextFrameHeader(65536), Bytes({0x81, 127, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00}));
  EXPECT_EQ(TextFrameHeader(16 * 1024 * 1024 + 3),
            Bytes({0x81, 127, 0, 0, 0, 0, 0x01, 0x00, 0x00, 0x03}));
}

}  // namespace
}  // namespace relay::gateway
