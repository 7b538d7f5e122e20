// One chat connection: its WebSocket, who it is, and the pub/sub subscriber
// that delivers publications and presence events to it. The hub's frame for
// an event is shared by every subscriber of the worker and handed to
// ws::Connection::deliver: queued by reference, never copied, under the
// slow-consumer policy.
//
// Memory: this is paid once per connection (100,000 of them in the proof
// run), so it holds no more than it must (64 bytes with pubsub::Subscriber's
// 24, in its ws::Connection's own allocation: no chunk of its own, no pointer
// to the connection; docs/memory.md): the id as one number, and one string
// for the name and the channel list: the name (only when the client gave
// one: a guest's is derived from its id) ends at a NUL, the channel names
// follow, each ended by a space. A
// short name and one short channel name fit the string's inline 15 bytes:
// no heap (a separate name block cost a 32-byte chunk). The presence info
// (JSON) is kept only when presence events need it for join/leave
// (Subscriber::presence_info); otherwise info() formats it when asked.
//
// Threads: the worker's loop thread, except info() (see there). Because the
// name and the channels share one string, the channel list changes only
// under the roster's mutex (Roster::add/remove/remove_all call
// add_channel/remove_channel), the mutex under which other threads read the
// name through info().
#pragma once

#include <heartwheel/pubsub/hub.h>
#include <heartwheel/pubsub/subscriber.h>
#include <heartwheel/ws/connection.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <string>
#include <string_view>

#include "codec.h"
#include "protocol.h"

namespace chat {

class Client final : public heartwheel::pubsub::Subscriber {
 public:
  // Made in `connection`'s user storage (ws::NetHandlerOptions::
  // user_storage_bytes = sizeof(Client): one malloc chunk for both, and
  // ws() is a fixed offset, not a field), destroyed in on_close.
  // `name` empty: a guest, shown as "guest-" + id(). `protocol`: the codec
  // its frames are read and written with (codec.h).
  static Client* make_in(heartwheel::ws::Connection& connection, unsigned worker,
                         std::uint64_t number, std::string_view name,
                         Codec::Kind protocol = Codec::Kind::chat) {
    static_assert(alignof(Client) <= heartwheel::ws::Connection::kUserStorageAlign);
    // Made before the name is set: should that throw (out of memory), the
    // client exists all the same and on_close destroys it.
    Client* c = new (connection.user_storage()) Client(worker, number, protocol, false);
    c->set_name(name);
    return c;
  }
  // An /echo connection's: no name, never subscribed; only marks the
  // connection as one that echoes (of() is null for it).
  static void make_echo_in(heartwheel::ws::Connection& connection, unsigned worker,
                           std::uint64_t number) {
    new (connection.user_storage()) Client(worker, number, Codec::Kind::chat, true);
  }
  // The chat client of `connection`, or null for an /echo connection.
  static Client* of(heartwheel::ws::Connection& connection) noexcept {
    auto* c = static_cast<Client*>(connection.user_storage());
    return c->echo() ? nullptr : c;
  }
  static const Client* of(const heartwheel::ws::Connection& connection) noexcept {
    return of(const_cast<heartwheel::ws::Connection&>(connection));
  }
  // Destroys the client (either kind) of `connection`, in on_close.
  static void destroy_in(heartwheel::ws::Connection& connection) noexcept {
    static_cast<Client*>(connection.user_storage())->~Client();
  }
  bool echo() const noexcept { return (id_ & kEchoBit) != 0; }
  ~Client() override = default;  // ~Subscriber unsubscribes what is left

  // Inside the hub's walk the frame waits for the loop thread's io_uring
  // batch and leaves when the walk ends (net::ConnectionOptions::
  // batch_shared_writes; --no-uring-fanout turns that off).
  // A Centrifugo client takes the hub's second encoding of the event
  // (Worker: HubOptions::more_encodings), made once per event for all of them.
  heartwheel::pubsub::DeliveryOutcome on_publication(const heartwheel::pubsub::Publication&,
                                                     const heartwheel::pubsub::Frame& f) override {
    return deliver(centrifuge() ? hub()->frame_as(kCentrifugeEncoding) : f);
  }
  void prefetch() const noexcept override { ws().prefetch(); }
  heartwheel::pubsub::DeliveryOutcome on_presence(const heartwheel::pubsub::PresenceEvent&,
                                                  const heartwheel::pubsub::Frame& f) override {
    return deliver(centrifuge() ? hub()->frame_as(kCentrifugeEncoding) : f);
  }

  // The protocol this client speaks.
  bool centrifuge() const noexcept { return (id_ & kCentrifugeBit) != 0; }
  Codec::Kind protocol() const noexcept {
    return centrifuge() ? Codec::Kind::centrifuge : Codec::Kind::chat;
  }
  // HubOptions::more_encodings[kCentrifugeEncoding] is Centrifugo's push.
  static constexpr std::size_t kCentrifugeEncoding = 0;

  // The channels subscribed (for the roster): names each followed by a
  // space (channel names are printable ASCII without spaces). Only under the
  // roster's mutex (see the top of this file): Roster calls these.
  void add_channel(std::string_view channel) {
    names_.append(channel);
    names_ += ' ';
  }
  void remove_channel(std::string_view channel) {
    for (std::size_t at = channels_begin(); at < names_.size();) {
      const std::size_t end = names_.find(' ', at);
      if (std::string_view(names_).substr(at, end - at) == channel) {
        names_.erase(at, end - at + 1);
        return;
      }
      at = end + 1;
    }
  }
  void clear_channels() { names_.erase(channels_begin()); }
  template <class F>
  void for_each_channel(F&& f) const {
    for (std::size_t at = channels_begin(); at < names_.size();) {
      const std::size_t end = names_.find(' ', at);
      f(std::string_view(names_).substr(at, end - at));
      at = end + 1;
    }
  }

  // Unique in the process for the connection's life (and never reused):
  // how answers that come after the client closed find it gone.
  std::uint64_t key() const noexcept { return id_ & ~kConnectedBit; }
  // "W-N": worker W, its Nth connection (short: no heap).
  std::string id() const {
    return std::to_string((id_ >> kWorkerShift) & kWorkerMask) + "-" +
           std::to_string(id_ & ((std::uint64_t{1} << kWorkerShift) - 1));
  }
  // Valid until keep_info() (then inside the presence info).
  std::string name() const { return has_name() ? std::string(name_view()) : "guest-" + id(); }
  // {"client":..,"name":..}: the stored presence info, or made now. Reads
  // only what never changes after construction: other threads may call it
  // (the roster, under its mutex, while the client is listed).
  std::string info() const {
    return presence_info().empty() ? client_info(id(), name()) : std::string(presence_info());
  }
  // For join/leave events: the info made once and kept, the name then only
  // inside it (name() is not asked after this: the greeting went first).
  void keep_info() {
    set_presence_info(info());
    set_name({});
  }

  // With authentication on (auth_gate.h): the connect's verified user
  // ("" anonymous) and info, kept where a v1 client keeps its name and
  // presence info (no byte more per connection than the user id).
  void set_user(std::string_view user, std::string info) {
    set_name(user);
    set_presence_info(std::move(info));
  }
  std::string_view user() const noexcept { return has_name() ? name_view() : std::string_view(); }
  // A connect succeeded with no info to keep (no tokens and no join/leave
  // events, which would need it): a bit of the id says so, as the
  // protocol's, where keep_info() would cost ~64 bytes per connection.
  void mark_connected() noexcept { id_ |= kConnectedBit; }
  // Authenticated (a connect succeeded): the info is set then (or the bit),
  // never before.
  bool connected() const noexcept { return (id_ & kConnectedBit) != 0 || !presence_info().empty(); }

  // The connection whose user storage this client lives in.
  heartwheel::ws::Connection& ws() const noexcept {
    return heartwheel::ws::Connection::from_user_storage(const_cast<Client*>(this));
  }

 private:
  Client(unsigned worker, std::uint64_t number, Codec::Kind protocol, bool echo) noexcept
      : id_(std::uint64_t{worker} << kWorkerShift | number |
            (protocol == Codec::Kind::centrifuge ? kCentrifugeBit : 0) | (echo ? kEchoBit : 0)) {}

  // The name, up to its NUL, at the front of names_; none: no NUL in names_
  // (channel names have none). Empty `name`: none. A name is kept up to its
  // first NUL, as the NUL-terminated block before did.
  bool has_name() const noexcept { return names_.find('\0') != std::string::npos; }
  std::string_view name_view() const noexcept {
    return std::string_view(names_).substr(0, names_.find('\0'));
  }
  std::size_t channels_begin() const noexcept {
    const std::size_t nul = names_.find('\0');
    return nul == std::string::npos ? 0 : nul + 1;
  }
  // Before any channel is listed (the greeting, keep_info, a connect): no
  // other thread reads the name yet.
  void set_name(std::string_view name) {
    names_.erase(0, channels_begin());
    if (name.empty()) return;
    name = name.substr(0, name.find('\0'));
    names_.insert(0, 1, '\0');
    names_.insert(0, name);
  }

  heartwheel::pubsub::DeliveryOutcome deliver(const heartwheel::pubsub::Frame& f) {
    if (!f) return heartwheel::pubsub::DeliveryOutcome::dropped;  // the encoder threw (counted)
    return outcome(ws().deliver(f));
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

  // id_: the connection counter in bits 0-47, the worker (< 64) in 48-53,
  // the protocol in bit 62, connected (mark_connected) in bit 61, which
  // key() leaves out, an /echo connection's in bit 60: the protocol and the
  // state cost no byte.
  static constexpr unsigned kWorkerShift = 48;
  static constexpr std::uint64_t kWorkerMask = 0x3f;
  static constexpr std::uint64_t kCentrifugeBit = std::uint64_t{1} << 62;
  static constexpr std::uint64_t kConnectedBit = std::uint64_t{1} << 61;
  static constexpr std::uint64_t kEchoBit = std::uint64_t{1} << 60;
  std::uint64_t id_;
  std::string names_;  // [name NUL] (channel SPACE)*: see the top of this file
};

}  // namespace chat
