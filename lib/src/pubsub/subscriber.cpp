// Subscriber's defaults (subscriber.h).
#include <heartwheel/pubsub/hub.h>
#include <heartwheel/pubsub/subscriber.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "local_channel.h"

namespace heartwheel::pubsub {

void Subscriber::set_presence_info(std::string_view info) {
  if (info.empty()) {
    presence_info_.reset();
    return;
  }
  if (info.size() > std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("pubsub::Subscriber: presence info over 4 GiB");
  const auto size = static_cast<std::uint32_t>(info.size());
  auto block = std::make_unique_for_overwrite<char[]>(sizeof size + info.size());
  std::memcpy(block.get(), &size, sizeof size);
  std::memcpy(block.get() + sizeof size, info.data(), info.size());
  presence_info_ = std::move(block);  // after the copy: `info` may view the old block
}

DeliveryOutcome Subscriber::on_presence(const PresenceEvent&, const Frame&) {
  return DeliveryOutcome::delivered;
}

std::size_t Subscriber::channel_count() const noexcept {
  std::size_t n = 0;
  for (const detail::Subscription* s = subscriptions_; s != nullptr; s = s->next_of_subscriber) ++n;
  return n;
}

Hub* Subscriber::hub() const noexcept {
  return subscriptions_ != nullptr ? subscriptions_->channel->hub : nullptr;
}

Subscriber::~Subscriber() {
  if (Hub* h = hub()) h->unsubscribe_all(*this);
}

}  // namespace heartwheel::pubsub
