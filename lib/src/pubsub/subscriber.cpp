// Subscriber's defaults (subscriber.h).
#include <heartwheel/pubsub/hub.h>
#include <heartwheel/pubsub/subscriber.h>

namespace heartwheel::pubsub {

DeliveryOutcome Subscriber::on_presence(const PresenceEvent&, const Frame&) {
  return DeliveryOutcome::delivered;
}

Subscriber::~Subscriber() {
  if (hub_ != nullptr) hub_->unsubscribe_all(*this);
}

}  // namespace heartwheel::pubsub
