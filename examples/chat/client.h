// One chat connection: its WebSocket, who it is, and the pub/sub subscriber
// that delivers publications and presence events to it. The hub's frame for
// an event is shared by every subscriber of the worker and handed to
// ws::Connection::deliver: queued by reference, never copied, under the
// slow-consumer policy.
#pragma once

#include <heartwheel/pubsub/subscriber.h>
#include <heartwheel/ws/connection.h>

#include <string>
#include <vector>

namespace chat {

class Client final : public heartwheel::pubsub::Subscriber {
 public:
  Client(heartwheel::ws::Connection& connection, std::string client_id, std::string client_name)
      : ws(connection), id(std::move(client_id)), name(std::move(client_name)) {}
  ~Client() override = default;  // ~Subscriber unsubscribes what is left

  heartwheel::pubsub::DeliveryOutcome on_publication(const heartwheel::pubsub::Publication&,
                                                     const heartwheel::pubsub::Frame& f) override {
    return outcome(ws.deliver(f));
  }
  heartwheel::pubsub::DeliveryOutcome on_presence(const heartwheel::pubsub::PresenceEvent&,
                                                  const heartwheel::pubsub::Frame& f) override {
    return outcome(ws.deliver(f));
  }

  heartwheel::ws::Connection& ws;
  const std::string id;               // "W-N": worker W, its Nth connection
  const std::string name;             // from /ws?name=..., or "guest-" + id
  std::vector<std::string> channels;  // as subscribed (for the roster)

 private:
  static heartwheel::pubsub::DeliveryOutcome outcome(heartwheel::ws::Delivery d) noexcept {
    using heartwheel::pubsub::DeliveryOutcome;
    switch (d) {
      case heartwheel::ws::Delivery::sent:
        return DeliveryOutcome::delivered;
      case heartwheel::ws::Delivery::skipped:
        return DeliveryOutcome::skipped;
      case heartwheel::ws::Delivery::closed:
        return DeliveryOutcome::closed;
      case heartwheel::ws::Delivery::dropped:
        break;
    }
    return DeliveryOutcome::dropped;
  }
};

}  // namespace chat
