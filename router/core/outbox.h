#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <google/protobuf/arena.h>

#include "relay/v1/router.pb.h"

namespace relay::router {

// A command for one gateway link. The command lives on its outbox's arena.
struct Outgoing {
  uint64_t link_id = 0;
  relay::v1::RouterCommand& command;
};

// The commands one entry point of the router core makes, in order, each for
// one gateway link. They live on the outbox's arena: a command's messages and
// strings cost no allocation each (the bytes of a string moved in are not
// copied), and all are freed at once with the outbox. Nothing may keep a
// command past its outbox: the links serialise each as it is queued. Plain
// C++, no sockets.
class Outbox {
 public:
  using value_type = Outgoing;
  using iterator = std::vector<Outgoing>::iterator;
  using const_iterator = std::vector<Outgoing>::const_iterator;

  // On arena, which must outlive the outbox (the router's hub reuses one
  // across its entry points); without one, on an arena of its own.
  explicit Outbox(google::protobuf::Arena* arena = nullptr) : arena_(arena) {}
  // A moved-from outbox is empty, on no arena (it makes its own if used again).
  Outbox(Outbox&& other) noexcept
      : arena_(std::exchange(other.arena_, nullptr)),
        own_(std::move(other.own_)),
        items_(std::exchange(other.items_, {})) {}
  Outbox& operator=(Outbox&& other) noexcept {
    arena_ = std::exchange(other.arena_, nullptr);
    own_ = std::move(other.own_);
    items_ = std::exchange(other.items_, {});
    return *this;
  }

  // A new, empty command for link_id, after the others; the caller fills it in.
  relay::v1::RouterCommand& Add(uint64_t link_id);
  // Drops every command for link_id (the link has gone).
  void EraseFor(uint64_t link_id);
  // Drops every command (an arena of its own is freed).
  void clear() {
    items_.clear();
    if (own_ != nullptr) {
      own_.reset();
      arena_ = nullptr;
    }
  }

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  Outgoing& operator[](size_t i) { return items_[i]; }
  const Outgoing& operator[](size_t i) const { return items_[i]; }
  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }

 private:
  google::protobuf::Arena* arena_;
  // Made at the first command, when none was given: many entry points make none.
  std::unique_ptr<google::protobuf::Arena> own_;
  std::vector<Outgoing> items_;
};

// Appends a command for link_id to out; the caller fills it in.
inline relay::v1::RouterCommand& AddCommand(Outbox& out, uint64_t link_id) {
  return out.Add(link_id);
}

}  // namespace relay::router
