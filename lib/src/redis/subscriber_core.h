// Private: what redis::Subscriber forwards to (SubscriberImpl): one
// connection in subscribed mode (SubscriberCore), or sharded pub/sub over a
// Redis Cluster (ClusterSubscriberCore, cluster_subscriber.cpp), which keeps
// one SubscriberCore in sharded mode per master.
//
// SubscriberCore's wanted set: name -> state on this connection (unsent,
// sent, confirmed). Redis answers each name of a (P|S)SUBSCRIBE with
// ["subscribe", name, count] in order; `unconfirmed_` counts the wanted
// names not confirmed yet, so the end of a re-subscribe round is one
// comparison. An UNSUBSCRIBE's confirmation needs nothing: the name already
// left the wanted set when unsubscribe() was called, and if it was wanted
// again since, its new SUBSCRIBE's confirmation comes after it.
//
// Sharded mode (one master of a cluster): SSUBSCRIBE / SUNSUBSCRIBE /
// "smessage"; the names go out from a queue (`pending_`) at most
// subscribe_batch per subscribe_interval (an Alarm), each command holding
// names of one slot only. A "sunsubscribe" Redis sends by itself for a name
// still wanted and confirmed means its slot moved away (a migration, a
// failover): the name is queued again (Redis answers -MOVED if it moved,
// which the cluster link follows) and hooks.dropped tells the cluster link.
#pragma once

#include <heartwheel/redis/subscriber.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "deferred.h"
#include "link.h"

namespace heartwheel::redis::detail {

class SlotMapSource;

class SubscriberImpl {
 public:
  virtual ~SubscriberImpl() = default;
  virtual void start() = 0;
  virtual void stop() = 0;
  virtual bool started() const noexcept = 0;
  virtual void want(std::string_view name, bool pattern) = 0;
  virtual void unwant(std::string_view name, bool pattern) = 0;
  virtual bool wants(std::string_view name, bool pattern) const noexcept = 0;
  virtual bool active(std::string_view name, bool pattern) const noexcept = 0;
  virtual std::size_t wanted() const noexcept = 0;
  virtual bool connected() const noexcept = 0;
  virtual void flush() = 0;
  virtual LinkStats stats() const noexcept = 0;
  virtual std::vector<MasterStats> masters() const = 0;
  virtual const SubscriberOptions& options() const noexcept = 0;
  // Cluster mode: take the slot map from `source` (a client's) instead of
  // reading one (Subscriber::follow checks the preconditions).
  virtual void follow(std::shared_ptr<SlotMapSource> /*source*/) {}
};

// A SubscriberCore or a ClusterSubscriberCore, as `options` asks.
std::unique_ptr<SubscriberImpl> make_subscriber(LoopWheel& wheel, SubscriberOptions options);
// cluster_subscriber.cpp
std::unique_ptr<SubscriberImpl> make_cluster_subscriber(LoopWheel& wheel,
                                                        SubscriberOptions options);

// Transparent lookups by string_view.
struct NameHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};

class SubscriberCore final : public Link, public SubscriberImpl {
 public:
  // For a cluster link's use of one master's connection (sharded mode).
  struct Hooks {
    // Redis dropped a confirmed channel by itself (its slot moved).
    std::function<void(std::string_view name)> dropped;
  };

  SubscriberCore(LoopWheel& wheel, SubscriberOptions options, bool sharded = false,
                 Hooks hooks = {});
  ~SubscriberCore() override;

  void start() override { start_link(); }
  void stop() override { stop_link(); }
  bool started() const noexcept override { return link_started(); }
  void want(std::string_view name, bool pattern) override;
  void unwant(std::string_view name, bool pattern) override;
  bool wants(std::string_view name, bool pattern) const noexcept override {
    return set(pattern).find(name) != set(pattern).end();
  }
  bool active(std::string_view name, bool pattern) const noexcept override {
    const auto it = set(pattern).find(name);
    return it != set(pattern).end() && it->second == State::confirmed && connection();
  }
  std::size_t wanted() const noexcept override { return channels_.size() + patterns_.size(); }
  bool connected() const noexcept override { return connection() != nullptr; }
  void flush() override { Link::flush(); }
  LinkStats stats() const noexcept override;
  std::vector<MasterStats> masters() const override { return {}; }
  const SubscriberOptions& options() const noexcept override { return options_; }

 private:
  enum class State : std::uint8_t { unsent, sent, confirmed };
  using Set = std::unordered_map<std::string, State, NameHash, std::equal_to<>>;
  const Set& set(bool pattern) const noexcept { return pattern ? patterns_ : channels_; }
  Set& set(bool pattern) noexcept { return pattern ? patterns_ : channels_; }

  void link_opened(net::Connection& conn) override;
  void link_reply(net::Connection& conn, Reply&& reply) override;
  void link_closed(net::CloseReason, std::error_code) override;
  void send_ping(net::Connection&) override;
  void send_names(std::string_view verb, const std::vector<std::string_view>& names);
  void send_step();  // sharded: the next batch from pending_
  void confirmed(Set::iterator it, bool pattern);
  void dropped(std::string_view name);
  void finish_round_if_done();
  void message(std::string_view channel, std::string_view payload, std::string_view pattern);

  SubscriberOptions options_;
  const bool sharded_;
  Hooks hooks_;
  Set channels_;
  Set patterns_;
  std::size_t unconfirmed_ = 0;  // wanted names Redis has not confirmed on this connection
  bool resubscribing_ = false;   // a reconnect's round is under way
  std::deque<std::string> pending_;  // sharded: names to send, in order
  Alarm pacer_;                      // sharded: the next step of pending_
};

}  // namespace heartwheel::redis::detail
