// Subscriber's defaults (subscriber.h).
#include <heartwheel/pubsub/hub.h>
#include <heartwheel/pubsub/subscriber.h>

namespace heartwheel::pubsub {

DeliveryOutcome Subscriber::on_presence(const PresenceEvent&, const Frame&) {
  return DeliveryOutcome::delivered;
}

std::size_t Subscriber::channel_count() const noexcept {
  std::size_t n = 0;
  for (const detail::Subscription* s = subscriptions_; s != nullptr; s = s->next_of_subscriber) ++n;
  return n;
}

Subscriber::~Subscriber() {
  if (hub_ != nullptr) hub_->unsubscribe_all(*this);
}

}  // namespace heartwheel::pubsub
