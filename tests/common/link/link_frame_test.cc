#include "common/link/link_frame.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace relay::common {
namespace {

// Feeds bytes to the reader in pieces of `step`, collecting every frame.
std::vector<std::string> Feed(LinkFrameReader& reader, const std::string& bytes, size_t step) {
  std::vector<std::string> frames;
  size_t at = 0;
  while (at < bytes.size()) {
    absl::Span<char> room = reader.Prepare(16);
    const size_t n = std::min({step, bytes.size() - at, room.size()});
    std::memcpy(room.data(), bytes.data() + at, n);
    reader.Commit(n);
    at += n;
    absl::string_view frame;
    for (;;) {
      absl::StatusOr<bool> next = reader.Next(frame);
      EXPECT_TRUE(next.ok()) << next.status();
      if (!next.ok() || !*next) {
        break;
      }
      frames.emplace_back(frame);
    }
  }
  return frames;
}

std::string Framed(const std::vector<std::string>& payloads) {
  std::string out;
  for (const std::string& payload : payloads) {
    AppendLinkFrameHeader(payload.size(), out);
    out += payload;
  }
  return out;
}

TEST(LinkFrameTest, HeaderIsBigEndianLength) {
  std::string out;
  AppendLinkFrameHeader(0x01020304, out);
  EXPECT_EQ(out, std::string("\x01\x02\x03\x04", 4));
}

TEST(LinkFrameTest, FramesComeOutWholeHoweverTheBytesArrive) {
  std::vector<std::string> payloads = {"", "a", std::string(70000, 'x'), "tail", ""};
  payloads[2][69999] = 'y';
  const std::string bytes = Framed(payloads);
  for (size_t step : {size_t{1}, size_t{3}, size_t{4}, size_t{5}, size_t{4096}, bytes.size()}) {
    LinkFrameReader reader;
    EXPECT_EQ(Feed(reader, bytes, step), payloads) << "step " << step;
  }
}

TEST(LinkFrameTest, ControlFramesComeBetweenDataFramesInOrder) {
  std::string bytes;
  AppendLinkFrameHeader(2, bytes);
  bytes += "ab";
  AppendLinkControl(LinkControl::kPing, bytes);
  AppendLinkControl(LinkControl::kPong, bytes);
  AppendLinkFrameHeader(0, bytes);
  LinkFrameReader reader;
  absl::Span<char> room = reader.Prepare();
  std::memcpy(room.data(), bytes.data(), bytes.size());
  reader.Commit(bytes.size());
  std::vector<std::pair<LinkControl, std::string>> got;
  absl::string_view frame;
  LinkControl control;
  while (*reader.Next(frame, &control)) {
    got.emplace_back(control, std::string(frame));
  }
  EXPECT_EQ(got, (std::vector<std::pair<LinkControl, std::string>>{
                     {LinkControl::kNone, "ab"},
                     {LinkControl::kPing, ""},
                     {LinkControl::kPong, ""},
                     {LinkControl::kNone, ""}}));
}

TEST(LinkFrameTest, AnUnknownControlFrameIsAnError) {
  std::string bytes;
  AppendLinkFrameHeader(kLinkControlBit | 7, bytes);
  LinkFrameReader reader;
  absl::Span<char> room = reader.Prepare();
  std::memcpy(room.data(), bytes.data(), bytes.size());
  reader.Commit(bytes.size());
  absl::string_view frame;
  LinkControl control;
  EXPECT_FALSE(reader.Next(frame, &control).ok());
}

TEST(LinkFrameTest, AFrameBeyondTheLimitIsAnError) {
  LinkFrameReader reader(/*max_frame=*/10);
  std::string bytes;
  AppendLinkFrameHeader(11, bytes);
  absl::Span<char> room = reader.Prepare();
  std::memcpy(room.data(), bytes.data(), bytes.size());
  reader.Commit(bytes.size());
  absl::string_view frame;
  absl::StatusOr<bool> next = reader.Next(frame);
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(LinkFrameTest, MemoryOfALargeFrameIsGivenBack) {
  LinkFrameReader reader;
  // A batch's size stays (links carry them all the time); a 16 MiB answer's does not.
  const std::string batch = Framed({std::string(1 << 20, 'z')});
  EXPECT_EQ(Feed(reader, batch, batch.size()).size(), 1u);
  reader.Prepare();
  const size_t kept = reader.capacity();
  EXPECT_GE(kept, size_t{1 << 20});
  const std::string large = Framed({std::string(16 << 20, 'z')});
  EXPECT_EQ(Feed(reader, large, large.size()).size(), 1u);
  reader.Prepare();
  EXPECT_LE(reader.capacity(), size_t{64 << 10});
}

TEST(LinkFrameTest, AHeaderAloneDoesNotTakeTheFramesMemory) {
  LinkFrameReader reader;
  std::string header;
  AppendLinkFrameHeader(60 << 20, header);
  absl::Span<char> room = reader.Prepare();
  std::memcpy(room.data(), header.data(), header.size());
  reader.Commit(header.size());
  absl::string_view frame;
  ASSERT_FALSE(*reader.Next(frame));
  reader.Prepare();
  EXPECT_LE(reader.capacity(), size_t{128 << 10});
}

}  // namespace
}  // namespace relay::common
