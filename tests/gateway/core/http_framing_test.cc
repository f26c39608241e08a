#include "gateway/core/http_framing.h"

#include <string>

#include <gtest/gtest.h>

namespace relay::gateway {
namespace {

TEST(HttpFramingTest, AWholeResponse) {
  EXPECT_EQ(EncodeResponse(404, "application/json", R"({"error":"x"})", "", true),
            "HTTP/1.1 404 Not Found\r\nServer: mcp-tab-relay\r\n"
            "Content-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"error\":\"x\"}");
  EXPECT_EQ(EncodeResponse(202, "application/json", "", "Mcp-Session-Id: s\r\n", false),
            "HTTP/1.1 202 Accepted\r\nServer: mcp-tab-relay\r\nMcp-Session-Id: s\r\n"
            "Content-Length: 0\r\nConnection: close\r\n\r\n");
}

TEST(HttpFramingTest, AKeptAliveAnswerSaysForHowLong) {
  // A client's pool lets the connection go before the gateway's idle close,
  // instead of sending its next request on it as it closes.
  EXPECT_EQ(EncodeResponse(200, "text/plain", "ok\n", "", true, 120),
            "HTTP/1.1 200 OK\r\nServer: mcp-tab-relay\r\nContent-Type: text/plain\r\n"
            "Content-Length: 3\r\nKeep-Alive: timeout=120\r\n\r\nok\n");
  // Under a second: 0, "do not count on it" (Node's fetch then reuses nothing).
  EXPECT_NE(EncodeResponse(200, "text/plain", "ok\n", "", true, 0).find("Keep-Alive: timeout=0\r\n"),
            std::string::npos);
  // Closing: said so, and no hint.
  const std::string closing = EncodeResponse(200, "text/plain", "ok\n", "", false, 120);
  EXPECT_NE(closing.find("Connection: close\r\n"), std::string::npos);
  EXPECT_EQ(closing.find("Keep-Alive"), std::string::npos);
}

TEST(HttpFramingTest, AnAnswerIsSizedOnce) {
  // Grown as it was written, an answer is copied as it grows and keeps up to
  // as many bytes spare as it holds; sized once, no more than the fixed
  // parts' reserve.
  const std::string headers = "Mcp-Session-Id: " + std::string(64, 's') + "\r\n";
  for (size_t body_bytes : {0, 100, 300, 10000}) {
    const std::string body(body_bytes, 'x');
    for (int status : {200, 431, 2147483647}) {
      for (bool keep_alive : {false, true}) {
        std::string answer =
            EncodeResponse(status, "application/json", body, headers, keep_alive, 2147483647);
        EXPECT_EQ(answer.substr(answer.size() - body.size()), body);
        // Never grown: what was reserved held it all, with no more spare than the fixed parts'.
        EXPECT_LE(answer.capacity() - answer.size(), 160u) << status << " " << body_bytes;
        EXPECT_LE(answer.size(), answer.capacity());
      }
    }
  }
}

TEST(HttpFramingTest, ReasonPhrases) {
  EXPECT_EQ(ReasonPhrase(200), "OK");
  EXPECT_EQ(ReasonPhrase(429), "Too Many Requests");
  EXPECT_EQ(ReasonPhrase(503), "Service Unavailable");
  EXPECT_EQ(ReasonPhrase(299), "Unknown");
}

TEST(HttpFramingTest, ErrorBodiesAreJsonWhateverTheMessage) {
  EXPECT_EQ(JsonErrorBody("bad \"quote\""), R"({"error":"bad \"quote\""})");
}

TEST(HttpFramingTest, SseEventsAreChunks) {
  EXPECT_NE(EncodeSseHead("").find("Transfer-Encoding: chunked\r\n\r\n"), std::string::npos);
  EXPECT_NE(EncodeSseHead("").find("Content-Type: text/event-stream"), std::string::npos);
  // Chunk sizes in hex: the event is 25 bytes (0x19), 32 (0x20) with its id line.
  EXPECT_EQ(EncodeSseEvent("{}", 0), "19\r\nevent: message\ndata: {}\n\n\r\n");
  EXPECT_EQ(EncodeSseEvent("{}", 42), "20\r\nid: 42\nevent: message\ndata: {}\n\n\r\n");
  EXPECT_EQ(EncodeSseKeepAlive(), "e\r\n: keep-alive\n\n\r\n");
}

TEST(HttpFramingTest, AMessageWithLineBreaksIsOneDataLineOfItsOwnSize) {
  // JSON may break lines between tokens: a raw break inside the data line
  // would end the event early, and a data line per line would multiply a
  // message of line breaks seven times. White space they are; spaces they
  // become.
  std::string event = EncodeSseEvent("{\"a\":1,\n\"b\":[]\r\n}\r", 0);
  std::string body = event.substr(event.find("\r\n") + 2);
  EXPECT_EQ(body, "event: message\ndata: {\"a\":1, \"b\":[]  } \n\n\r\n");
  std::string breaks = EncodeSseEvent(std::string(1 << 20, '\n') + "{}", 0);
  EXPECT_LT(breaks.size(), (1u << 20) + 64);
  EXPECT_EQ(kLastChunk, "0\r\n\r\n");
}

TEST(OutputQueueTest, OneWriteTakesEverythingQueuedBeforeIt) {
  OutputQueue out(1000);
  EXPECT_TRUE(out.idle());
  ASSERT_TRUE(out.Push("a"));
  ASSERT_TRUE(out.Push("bb"));
  ASSERT_TRUE(out.ready());
  EXPECT_EQ(out.StartWrite(), (std::vector<std::string>{"a", "bb"}));
  EXPECT_FALSE(out.ready());  // one write in flight
  ASSERT_TRUE(out.Push("ccc"));
  EXPECT_FALSE(out.ready());
  EXPECT_EQ(out.queued_bytes(), 6u);
  out.Written();
  EXPECT_EQ(out.queued_bytes(), 3u);
  ASSERT_TRUE(out.ready());
  EXPECT_EQ(out.StartWrite(), (std::vector<std::string>{"ccc"}));
  out.Written();
  EXPECT_TRUE(out.idle());
  EXPECT_EQ(out.queued_bytes(), 0u);
}

TEST(OutputQueueTest, BoundedIncludingWhatIsBeingWritten) {
  OutputQueue out(10);
  ASSERT_TRUE(out.Push(std::string(6, 'x')));
  out.StartWrite();
  EXPECT_FALSE(out.Push(std::string(5, 'y')));  // 6 in flight + 5 > 10
  EXPECT_TRUE(out.Push(std::string(4, 'y')));
  out.Written();
  EXPECT_TRUE(out.Push(std::string(6, 'z')));
}

}  // namespace
}  // namespace relay::gateway
