#include "common/link_frame.h"

#include <algorithm>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace relay::common {

void AppendLinkFrameHeader(size_t length, std::string& out) {
  const uint32_t n = static_cast<uint32_t>(length);
  const char header[kLinkFrameHeaderBytes] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                                              static_cast<char>(n >> 8), static_cast<char>(n)};
  out.append(header, sizeof(header));
}

absl::Span<char> LinkFrameReader::Prepare(size_t min_bytes) {
  // What was taken is dropped first: the unframed rest moves to the front.
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  size_t need = std::max(end_ + min_bytes, want_);
  if (buffer_.size() < need) {
    buffer_.resize(std::max(need, buffer_.size() * 2));
  } else if (end_ == 0 && buffer_.size() > 4 * min_bytes && want_ == 0) {
    // A large frame has passed: give its memory back (an idle link holds little).
    buffer_.resize(min_bytes);
    buffer_.shrink_to_fit();
  }
  return absl::Span<char>(buffer_.data() + end_, buffer_.size() - end_);
}

absl::StatusOr<bool> LinkFrameReader::Next(absl::string_view& frame) {
  const size_t held = end_ - begin_;
  if (held < kLinkFrameHeaderBytes) {
    return false;
  }
  const auto* p = reinterpret_cast<const unsigned char*>(buffer_.data() + begin_);
  const size_t length = (size_t{p[0]} << 24) | (size_t{p[1]} << 16) | (size_t{p[2]} << 8) | p[3];
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
