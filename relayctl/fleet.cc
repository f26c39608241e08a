#include "relayctl/fleet.h"

#include "common/text.h"
#include "gateway/core/shard_picker.h"

namespace relay::relayctl {

std::string Cell(const std::string& text) { return common::EscapeForTerminal(text); }

std::shared_ptr<grpc::Channel> Fleet::ChannelTo(const std::string& address) const {
  return grpc::CreateChannel(address, common::ChannelCredentials(tls_));
}

std::string Fleet::OwnerOf(absl::string_view account) const {
  return shards_[gateway::ShardPicker(shards_).Pick(account)];
}

}  // namespace relay::relayctl
