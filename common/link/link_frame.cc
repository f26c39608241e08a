#include "common/link/link_frame.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace relay::common {

namespace {
// A link's read buffer keeps up to this much after a large frame: two batches.
constexpr size_t kKeepBytes = 2 << 20;
}  // namespace

void WriteLinkFrameHeader(size_t length, char* at) {
  const uint32_t n = static_cast<uint32_t>(length);
  at[0] = static_cast<char>(n >> 24);
  at[1] = static_cast<char>(n >> 16);
  at[2] = static_cast<char>(n >> 8);
  at[3] = static_cast<char>(n);
}

void AppendLinkFrameHeader(size_t length, std::string& out) {
  char header[kLinkFrameHeaderBytes];
  WriteLinkFrameHeader(length, header);
  out.append(header, sizeof(header));
}

void AppendLinkControl(LinkControl control, std::string& out) {
  AppendLinkFrameHeader(kLinkControlBit | static_cast<uint32_t>(control), out);
}

absl::Span<char> LinkFrameReader::Prepare(size_t min_bytes) {
  // What was taken is dropped first: the unframed rest moves to the front.
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  size_t target = end_ + min_bytes;
  if (want_ > target) {
    // A large frame: its memory is taken as its bytes arrive, doubling, never
    // on the word of its header alone.
    target = std::min(want_, std::max(target, 2 * end_));
  }
  if (buffer_.size() > kKeepBytes && target <= kKeepBytes / 2) {
    // A frame larger than a batch has passed: give its memory back. (Up to
    // kKeepBytes stays: a busy link would otherwise reallocate for every
    // batch, and a sanitizer build would hold each freed buffer for a while.)
    std::vector<char>(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(end_)).swap(buffer_);
  }
  if (buffer_.size() < target) {
    buffer_.resize(target);
  }
  return absl::Span<char>(buffer_.data() + end_, buffer_.size() - end_);
}

absl::StatusOr<bool> LinkFrameReader::Next(absl::string_view& frame, LinkControl* control) {
  const size_t held = end_ - begin_;
  if (held < kLinkFrameHeaderBytes) {
    return false;
  }
  const auto* p = reinterpret_cast<const unsigned char*>(buffer_.data() + begin_);
  const size_t length = (size_t{p[0]} << 24) | (size_t{p[1]} << 16) | (size_t{p[2]} << 8) | p[3];
  if (length & kLinkControlBit) {
    const size_t kind = length & ~size_t{kLinkControlBit};
    if (control == nullptr ||
        (kind != static_cast<size_t>(LinkControl::kPing) &&
         kind != static_cast<size_t>(LinkControl::kPong))) {
      return absl::InvalidArgumentError(absl::StrCat("an unknown link control frame (", kind, ")"));
    }
    *control = static_cast<LinkControl>(kind);
    frame = absl::string_view();
    begin_ += kLinkFrameHeaderBytes;
    want_ = 0;
    return true;
  }
  if (control != nullptr) {
    *control = LinkControl::kNone;
  }
  if (length > max_frame_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a link frame of ", length, " bytes is beyond the limit of ", max_frame_));
  }
  if (held < kLinkFrameHeaderBytes + length) {
    want_ = kLinkFrameHeaderBytes + length;
    return false;
  }
  frame = absl::string_view(buffer_.data() + begin_ + kLinkFrameHeaderBytes, length);
  begin_ += kLinkFrameHeaderBytes + length;
  want_ = 0;
  return true;
}

}  // namespace relay::common
