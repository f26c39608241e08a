#include "router/core/outbox.h"

#include <utility>

namespace relay::router {

namespace {

// An arena of its own starts with this (the hub's reuses a block of its own).
constexpr size_t kFirstBlockBytes = 4096;

}  // namespace

relay::v1::RouterCommand& Outbox::Add(uint64_t link_id) {
  if (arena_ == nullptr) {
    google::protobuf::ArenaOptions options;
    options.start_block_size = kFirstBlockBytes;
    own_ = std::make_unique<google::protobuf::Arena>(options);
    arena_ = own_.get();
  }
  auto* command = google::protobuf::Arena::CreateMessage<relay::v1::RouterCommand>(arena_);
  items_.push_back(Outgoing{link_id, *command});
  return *command;
}

void Outbox::EraseFor(uint64_t link_id) {
  // (Outgoing holds a reference, so it is copied, not assigned, into place;
  // the commands dropped stay on the arena until the outbox goes.)
  std::vector<Outgoing> kept;
  kept.reserve(items_.size());
  for (const Outgoing& o : items_) {
    if (o.link_id != link_id) {
      kept.push_back(o);
    }
  }
  items_.swap(kept);
}

}  // namespace relay::router
