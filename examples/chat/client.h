// One chat connection: its WebSocket, who it is, and the pub/sub subscriber
// that delivers publications and presence events to it. The hub's frame for
// an event is shared by every subscriber of the worker and handed to
// ws::Connection::deliver: queued by reference, never copied, under the
// slow-consumer policy.
#pragma once

#include <heartwheel/pubsub/subscriber.h>
#include <heartwheel/ws/connection.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace chat {

class Client;

// A connection's replies, sent in request order (the protocol's promise)
// although the broker may answer later requests first: each request takes a
// slot when it arrives; its reply fills the slot, at once or when the broker
// answers; filled slots at the front go out. Shared with the answers still
// pending, which may outlive the connection (then `client` is null and their
// replies are dropped: nobody is there to read them).
struct ReplyQueue {
  Client* client = nullptr;
  std::uint64_t next = 0;                          // the next slot to hand out
  std::deque<std::optional<std::string>> waiting;  // slots from next - size() on

  std::uint64_t reserve() {
    waiting.emplace_back();
    return next++;
  }
  void fill(std::uint64_t slot, std::string reply);
};

class Client final : public heartwheel::pubsub::Subscriber {
 public:
  Client(heartwheel::ws::Connection& connection, std::string client_id, std::string client_name)
      : ws(connection),
        id(std::move(client_id)),
        name(std::move(client_name)),
        replies(std::make_shared<ReplyQueue>()) {
    replies->client = this;
  }
  ~Client() override { replies->client = nullptr; }  // ~Subscriber unsubscribes what is left

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
  std::shared_ptr<ReplyQueue> replies;

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

inline void ReplyQueue::fill(std::uint64_t slot, std::string reply) {
  waiting[static_cast<std::size_t>(slot - (next - waiting.size()))] = std::move(reply);
  while (!waiting.empty() && waiting.front()) {
    if (client != nullptr) (void)client->ws.send_text(*waiting.front());
    waiting.pop_front();
  }
}

}  // namespace chat
