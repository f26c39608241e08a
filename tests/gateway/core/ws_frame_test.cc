#include "gateway/core/ws_frame.h"

#include <cstdint>
#include <string>
#include <vector>

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

namespace relay::gateway {
namespace {

// A frame as a client sends it: masked (RFC 6455 §5.3), its length in the shortest form.
std::string ClientFrame(int opcode, const std::string& payload, bool fin = true,
                        std::string mask = "\x12\x34\x56\x78") {
  std::string frame;
  frame.push_back(static_cast<char>((fin ? 0x80 : 0) | opcode));
  if (payload.size() < 126) {
    frame.push_back(static_cast<char>(0x80 | payload.size()));
  } else if (payload.size() <= 0xffff) {
    frame.push_back(static_cast<char>(0x80 | 126));
    frame.push_back(static_cast<char>(payload.size() >> 8));
    frame.push_back(static_cast<char>(payload.size() & 0xff));
  } else {
    frame.push_back(static_cast<char>(0x80 | 127));
    for (int shift = 56; shift >= 0; shift -= 8) {
      frame.push_back(static_cast<char>((uint64_t{payload.size()} >> shift) & 0xff));
    }
  }
  frame += mask;
  for (size_t i = 0; i < payload.size(); ++i) {
    frame.push_back(static_cast<char>(payload[i] ^ mask[i % 4]));
  }
  return frame;
}

// What the reader told, in order, as text: "text:…", "ping:…", "close:CODE:…", "fail:N".
class Recorder : public WsFrameReader::Visitor {
 public:
  void OnWsText(std::string text) override { events.push_back("text:" + text); }
  void OnWsPing(absl::string_view payload) override {
    events.push_back("ping:" + std::string(payload));
  }
  void OnWsClose(uint16_t code, absl::string_view reason) override {
    events.push_back("close:" + std::to_string(code) + ":" + std::string(reason));
  }
  void OnWsFailure(WsFailure failure, absl::string_view) override {
    events.push_back("fail:" + std::to_string(static_cast<int>(failure)));
  }
  std::vector<std::string> events;
};

std::vector<std::string> Read(const std::string& bytes, size_t limit = 1 << 20) {
  WsFrameReader reader(limit);
  Recorder recorder;
  reader.Feed(bytes, recorder);
  return recorder.events;
}

const std::string kProtocol = "fail:" + std::to_string(static_cast<int>(WsFailure::kProtocol));
const std::string kBadUtf8 = "fail:" + std::to_string(static_cast<int>(WsFailure::kBadUtf8));
const std::string kBinary = "fail:" + std::to_string(static_cast<int>(WsFailure::kBinary));
const std::string kTooBig = "fail:" + std::to_string(static_cast<int>(WsFailure::kTooBig));
using Events = std::vector<std::string>;

TEST(WsFrameReaderTest, MessagesOfEveryLengthFormAreUnmasked) {
  const std::string medium(300, 'm');
  const std::string large(70000, 'L');
  EXPECT_EQ(Read(ClientFrame(1, "{\"id\":1}") + ClientFrame(1, medium) + ClientFrame(1, large) +
                 ClientFrame(1, "")),
            (Events{"text:{\"id\":1}", "text:" + medium, "text:" + large, "text:"}));
}

TEST(WsFrameReaderTest, BytesSplitAnywhereReadTheSame) {
  const std::string bytes = ClientFrame(1, "caf\xC3\xA9 au lait", false) +
                            ClientFrame(9, "are you there") + ClientFrame(0, std::string(200, 'x')) +
                            ClientFrame(8, std::string("\x03\xe8") + "bye");
  const Events whole = Read(bytes);
  EXPECT_EQ(whole, (Events{"ping:are you there",
                           "text:caf\xC3\xA9 au lait" + std::string(200, 'x'), "close:1000:bye"}));
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    WsFrameReader reader(1 << 20);
    Recorder recorder;
    reader.Feed(bytes.substr(0, cut), recorder);
    reader.Feed(bytes.substr(cut), recorder);
    ASSERT_EQ(recorder.events, whole) << "cut at " << cut;
  }
  // One byte at a time.
  WsFrameReader reader(1 << 20);
  Recorder recorder;
  for (char c : bytes) {
    reader.Feed(std::string(1, c), recorder);
  }
  EXPECT_EQ(recorder.events, whole);
}

TEST(WsFrameReaderTest, NothingIsReadAfterTheClose) {
  WsFrameReader reader(1 << 20);
  Recorder recorder;
  reader.Feed(ClientFrame(8, "") + ClientFrame(1, "late"), recorder);
  EXPECT_EQ(recorder.events, (Events{"close:0:"}));
  EXPECT_TRUE(reader.done());
  reader.Feed(ClientFrame(1, "later"), recorder);
  EXPECT_EQ(recorder.events.size(), 1u);
}

TEST(WsFrameReaderTest, AnUnmaskedFrameIsAProtocolError) {
  EXPECT_EQ(Read(std::string("\x81\x02hi", 4)), (Events{kProtocol}));
}

TEST(WsFrameReaderTest, FramesTheProtocolForbidsAreProtocolErrors) {
  // Reserved bits (no extension was agreed), a reserved opcode.
  std::string rsv = ClientFrame(1, "x");
  rsv[0] = static_cast<char>(rsv[0] | 0x40);
  EXPECT_EQ(Read(rsv), (Events{kProtocol}));
  EXPECT_EQ(Read(ClientFrame(3, "x")), (Events{kProtocol}));
  EXPECT_EQ(Read(ClientFrame(0xB, "x")), (Events{kProtocol}));
  // Control frames: fragmented, or over 125 bytes.
  EXPECT_EQ(Read(ClientFrame(9, "x", /*fin=*/false)), (Events{kProtocol}));
  EXPECT_EQ(Read(ClientFrame(9, std::string(126, 'p'))), (Events{kProtocol}));
  // A continuation of nothing; a new message inside a fragmented one.
  EXPECT_EQ(Read(ClientFrame(0, "x")), (Events{kProtocol}));
  EXPECT_EQ(Read(ClientFrame(1, "a", false) + ClientFrame(1, "b")), (Events{kProtocol}));
  // A length not in its shortest form.
  std::string longhand = ClientFrame(1, std::string(300, 'x'));
  longhand[1] = static_cast<char>(0x80 | 126);
  longhand[2] = 0;
  longhand[3] = 5;  // 5 in two bytes
  EXPECT_EQ(Read(longhand), (Events{kProtocol}));
  // Close frames: half a code; a code no peer may send.
  EXPECT_EQ(Read(ClientFrame(8, "\x03")), (Events{kProtocol}));
  EXPECT_EQ(Read(ClientFrame(8, "\x03\xed")), (Events{kProtocol}));  // 1005
  EXPECT_EQ(Read(ClientFrame(8, "\x03\xe8\xff")), (Events{kBadUtf8}));
}

TEST(WsFrameReaderTest, TextMustBeUtf8EvenAcrossFragments) {
  EXPECT_EQ(Read(ClientFrame(1, "\xC3\x28")), (Events{kBadUtf8}));
  EXPECT_EQ(Read(ClientFrame(1, "\xED\xA0\x80")), (Events{kBadUtf8}));  // a surrogate
  // A character split between two fragments is whole in the message.
  EXPECT_EQ(Read(ClientFrame(1, "caf\xC3", false) + ClientFrame(0, "\xA9")),
            (Events{"text:caf\xC3\xA9"}));
}

TEST(WsFrameReaderTest, BinaryIsRefusedAtItsHeader) {
  EXPECT_EQ(Read(ClientFrame(2, "\x00\x01").substr(0, 6)), (Events{kBinary}));
}

TEST(WsFrameReaderTest, AMessageOverTheLimitIsRefusedBeforeItsPayloadArrives) {
  // The header alone: the limit is measured against what it announces.
  EXPECT_EQ(Read(ClientFrame(1, std::string(101, 'x')).substr(0, 8), 100), (Events{kTooBig}));
  // Fragments that add up to more.
  EXPECT_EQ(Read(ClientFrame(1, std::string(60, 'x'), false) + ClientFrame(0, std::string(60, 'y')),
                 100),
            (Events{kTooBig}));
  EXPECT_EQ(Read(ClientFrame(1, std::string(100, 'x')), 100),
            (Events{"text:" + std::string(100, 'x')}));
}

TEST(WsFrameReaderTest, TheLimitChangesBetweenMessages) {
  WsFrameReader reader(10);
  Recorder recorder;
  reader.Feed(ClientFrame(1, "short"), recorder);
  reader.set_limit(1000);
  reader.Feed(ClientFrame(1, std::string(500, 'x')), recorder);
  EXPECT_EQ(recorder.events, (Events{"text:short", "text:" + std::string(500, 'x')}));
}

TEST(WsFramesTest, ControlFramesTheGatewaySends) {
  EXPECT_EQ(PingFrame(), Bytes({0x89, 0}));
  EXPECT_EQ(PongFrame("abc"), Bytes({0x8A, 3, 'a', 'b', 'c'}));
  EXPECT_EQ(PongFrame(std::string(200, 'p')).size(), 2u + 125u);
  EXPECT_EQ(CloseFrame(0, "ignored"), Bytes({0x88, 0}));
  EXPECT_EQ(CloseFrame(4409, "new tab"),
            Bytes({0x88, 9, 0x11, 0x39, 'n', 'e', 'w', ' ', 't', 'a', 'b'}));
  EXPECT_EQ(CloseFrame(1000, std::string(300, 'r')).size(), 2u + 125u);
}

TEST(WsHandshakeTest, TheAcceptKeyIsTheRfcsExample) {
  // RFC 6455 §1.3.
  EXPECT_EQ(WsAccept("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  EXPECT_NE(WsUpgradeAnswer("dGhlIHNhbXBsZSBub25jZQ==")
                .find("\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"),
            std::string::npos);
}

TEST(WsHandshakeTest, AKeyIsSixteenBytesInBase64) {
  EXPECT_TRUE(IsWsKey("dGhlIHNhbXBsZSBub25jZQ=="));
  EXPECT_FALSE(IsWsKey(""));
  EXPECT_FALSE(IsWsKey("dGhlIHNhbXBsZSBub25jZQ"));
  EXPECT_FALSE(IsWsKey("dGhlIHNhbXBsZSBub25jZQ==="));
  EXPECT_FALSE(IsWsKey("dGhlIHNhbXBsZSBub25j\r\n=="));
}

TEST(WsFramesTest, OnlyCodesAPeerMaySendAreValid) {
  for (uint16_t code : {1000, 1001, 1002, 1003, 1007, 1011, 1013, 3000, 4400, 4999}) {
    EXPECT_TRUE(IsValidCloseCode(code)) << code;
  }
  for (uint16_t code : {0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000}) {
    EXPECT_FALSE(IsValidCloseCode(code)) << code;
  }
}

}  // namespace
}  // namespace relay::gateway
