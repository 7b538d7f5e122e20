// One chat connection: its WebSocket, who it is, and the pub/sub subscriber
// that delivers publications and presence events to it. The hub's frame for
// an event is shared by every subscriber of the worker and handed to
// ws::Connection::deliver: queued by reference, never copied, under the
// slow-consumer policy.
//
// Memory: this is paid once per connection (100,000 of them in the proof
// run), so it holds no more than it must (120 bytes, a 128-byte malloc
// chunk): the id as one number, the name only when the client gave one (a
// guest's is derived from its id),
// the channel list as one string (one short channel name: no heap), and the
// presence info (JSON) only when presence events need it for join/leave
// (Subscriber::presence_info); otherwise info() formats it when asked.
#pragma once

#include <heartwheel/pubsub/subscriber.h>
#include <heartwheel/ws/connection.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "protocol.h"
#include "uring_fanout.h"

namespace chat {

class Client final : public heartwheel::pubsub::Subscriber {
 public:
  // `name` empty: a guest, shown as "guest-" + id().
  Client(heartwheel::ws::Connection& connection, unsigned worker, std::uint64_t number,
         std::string_view name)
      : ws(connection), id_(std::uint64_t{worker} << kWorkerShift | number) {
    if (!name.empty()) {
      name_ = std::make_unique<char[]>(name.size() +
                                       1);  // no NUL: name_from_query refuses control characters
      std::memcpy(name_.get(), name.data(), name.size());
    }
  }
  ~Client() override = default;  // ~Subscriber unsubscribes what is left

  // With --uring-fanout the worker's batch takes the frame when it can
  // (uring_fanout.h); it is sent when the hub's walk of the channel ends.
  heartwheel::pubsub::DeliveryOutcome on_publication(const heartwheel::pubsub::Publication&,
                                                     const heartwheel::pubsub::Frame& f) override {
    return deliver(f);
  }
  heartwheel::pubsub::DeliveryOutcome on_presence(const heartwheel::pubsub::PresenceEvent&,
                                                  const heartwheel::pubsub::Frame& f) override {
    return deliver(f);
  }

  // The channels subscribed (for the roster), as one string of names each
  // followed by a space: channel names are printable ASCII without spaces.
  void add_channel(std::string_view channel) {
    channels_.append(channel);
    channels_ += ' ';
  }
  void remove_channel(std::string_view channel) {
    for (std::size_t at = 0; at < channels_.size();) {
      const std::size_t end = channels_.find(' ', at);
      if (std::string_view(channels_).substr(at, end - at) == channel) {
        channels_.erase(at, end - at + 1);
        return;
      }
      at = end + 1;
    }
  }
  template <class F>
  void for_each_channel(F&& f) const {
    for (std::size_t at = 0; at < channels_.size();) {
      const std::size_t end = channels_.find(' ', at);
      f(std::string_view(channels_).substr(at, end - at));
      at = end + 1;
    }
  }

  // Unique in the process for the connection's life (and never reused):
  // how answers that come after the client closed find it gone.
  std::uint64_t key() const noexcept { return id_; }
  // "W-N": worker W, its Nth connection (short: no heap).
  std::string id() const {
    return std::to_string(id_ >> kWorkerShift) + "-" +
           std::to_string(id_ & ((std::uint64_t{1} << kWorkerShift) - 1));
  }
  // Valid until keep_info() (then inside the presence info).
  std::string name() const { return name_ ? std::string(name_.get()) : "guest-" + id(); }
  // {"client":..,"name":..}: the stored presence info, or made now. Reads
  // only what never changes after construction: other threads may call it
  // (the roster, under its mutex, while the client is listed).
  std::string info() const {
    return presence_info().empty() ? client_info(id(), name()) : presence_info();
  }
  // For join/leave events: the info made once and kept, the name then only
  // inside it (name() is not asked after this: the greeting went first).
  void keep_info() {
    set_presence_info(info());
    name_.reset();
  }

  // With authentication on (auth_gate.h): the connect's verified user
  // ("" anonymous) and info, kept where a v1 client keeps its name and
  // presence info (no byte more per connection than the user id).
  void set_user(std::string_view user, std::string info) {
    name_.reset();
    if (!user.empty()) {
      name_ = std::make_unique<char[]>(user.size() + 1);  // zeroed: NUL-terminated
      std::memcpy(name_.get(), user.data(), user.size());
    }
    set_presence_info(std::move(info));
  }
  std::string_view user() const noexcept { return name_ ? name_.get() : std::string_view(); }
  // Authenticated (a connect succeeded): the info is set then, never before.
  bool connected() const noexcept { return !presence_info().empty(); }

  heartwheel::ws::Connection& ws;

 private:
  heartwheel::pubsub::DeliveryOutcome deliver(const heartwheel::pubsub::Frame& f) {
    if (UringFanout* batch = UringFanout::current(); batch != nullptr && batch->take(ws, f))
      return heartwheel::pubsub::DeliveryOutcome::delivered;
    return outcome(ws.deliver(f));
  }
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

  static constexpr unsigned kWorkerShift = 48;  // worker (< 64) above, its counter below
  const std::uint64_t id_;
  std::unique_ptr<char[]> name_;  // null: a guest
  std::string channels_;
};

}  // namespace chat
