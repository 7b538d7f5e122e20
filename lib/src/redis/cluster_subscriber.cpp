// redis::Subscriber in cluster mode: sharded pub/sub (subscriber.h, "Redis
// Cluster"). Each wanted channel is placed on its slot's master, whose
// connection is a SubscriberCore in sharded mode (it batches by slot and
// paces the SSUBSCRIBEs); this file decides where each channel lives and
// moves channels when the cluster changes: a new slot map (a failover, a
// migration), a -MOVED answer to an SSUBSCRIBE, a transient error
// (CLUSTERDOWN: asked again after retry_delay). The map comes from a
// SlotMapSource of its own, or from the Client it follows (follow()).
#include <heartwheel/common/error.h>
#include <heartwheel/net/address.h>
#include <heartwheel/redis/error.h>
#include <heartwheel/redis/slot.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "slot_map_source.h"
#include "slot_table.h"
#include "subscriber_core.h"

namespace heartwheel::redis::detail {

namespace {
const SubscriberOptions& validated(const SubscriberOptions& o) {
  o.validate();
  return o;
}
}  // namespace

class ClusterSubscriberCore final : public SubscriberImpl {
 public:
  ClusterSubscriberCore(LoopWheel& wheel, SubscriberOptions options)
      : wheel_(wheel),
        options_(validated(options)),
        graveyard_(wheel),
        recheck_(wheel, [this] { recheck(); }),
        source_(std::make_shared<SlotMapSource>(wheel, options_)),
        member_(join(*source_)),
        counts_(counters_only(LinkStats{})) {}
  ~ClusterSubscriberCore() override { source_->leave(member_); }

  void start() override {
    if (started_) return;
    started_ = true;
    for (auto& n : table_.nodes())
      if (n->link) n->link->start();
    source_->run(member_, true);
  }
  void stop() override {
    started_ = false;
    source_->run(member_, false);
    recheck_.cancel();
    for (auto& n : table_.nodes())
      if (n->link) n->link->stop();
  }
  bool started() const noexcept override { return started_; }

  void want(std::string_view name, bool pattern) override {
    if (pattern)
      throw std::logic_error(
          "redis: psubscribe is not available in cluster mode (sharded pub/sub has no patterns)");
    auto [it, added] = channels_.try_emplace(std::string(name));
    if (!added) return;
    it->second.slot = key_slot(name);
    ++counts_.subscribes;
    if (table_.known()) place(it->first, it->second);
  }

  void unwant(std::string_view name, bool pattern) override {
    if (pattern) return;
    const auto it = channels_.find(name);
    if (it == channels_.end()) return;
    unplace(it->first, it->second);
    channels_.erase(it);
    ++counts_.unsubscribes;
    finish_round_if_done();
    retire_idle();
  }

  bool wants(std::string_view name, bool pattern) const noexcept override {
    return !pattern && channels_.find(name) != channels_.end();
  }
  bool active(std::string_view name, bool pattern) const noexcept override {
    if (pattern) return false;
    const auto it = channels_.find(name);
    return it != channels_.end() && it->second.confirmed && it->second.node != nullptr &&
           it->second.node->link && it->second.node->link->connected();
  }
  std::size_t wanted() const noexcept override { return channels_.size(); }
  bool connected() const noexcept override {
    if (!table_.known()) return false;
    for (const auto& n : table_.nodes())
      if (n->channels > 0 && (!n->link || !n->link->connected())) return false;
    return true;
  }
  void flush() override {
    for (auto& n : table_.nodes())
      if (n->link) n->link->flush();
  }
  LinkStats stats() const noexcept override;
  std::vector<MasterStats> masters() const override;
  const SubscriberOptions& options() const noexcept override { return options_; }
  // Reads no map of its own from now on: the client's (Subscriber::follow).
  void follow(std::shared_ptr<SlotMapSource> source) override {
    source_->leave(member_);
    source_ = std::move(source);
    own_source_ = false;
    member_ = join(*source_);
  }

 private:
  struct Node : ClusterNode {
    std::unique_ptr<SubscriberCore> link;
    std::size_t channels = 0;  // wanted channels placed here
  };
  struct Channel {
    std::uint16_t slot = 0;
    Node* node = nullptr;    // the master it is wanted on
    bool confirmed = false;  // by that master, on its current connection
    bool ever = false;       // confirmed at least once (on_subscribed's `again`)
  };

  void place(const std::string& name, Channel& c);
  void unplace(const std::string& name, Channel& c);
  void move(const std::string& name, Channel& c);
  void unconfirm(Channel& c) noexcept;
  void ensure_link(Node& n);
  void retire_idle();
  void apply(SlotMap&& map);
  void node_subscribed(Node& n, std::string_view name);
  void node_lost(Node& n);
  void node_error(Node& n, std::string_view detail);
  void node_dropped(Node& n, std::string_view name);
  void recheck();
  void update_watch();
  void finish_round_if_done();
  SlotMapSource::Member join(SlotMapSource& source) {
    return source.join([this](const SlotMap& map) { apply(SlotMap(map)); });
  }
  template <class F>
  void guard(F&& f) noexcept {
    try {
      f();
    } catch (...) {
      ++counts_.callback_exceptions;
    }
  }

  LoopWheel& wheel_;
  SubscriberOptions options_;
  SlotTable<Node> table_;
  std::unordered_map<std::string, Channel, NameHash, std::equal_to<>> channels_;
  std::size_t confirmed_ = 0;
  bool recovering_ = false;  // a channel lost its subscription: on_resubscribed is due
  bool started_ = false;
  Graveyard graveyard_;
  Alarm recheck_;  // channels a transient error left unconfirmed are asked again
  std::shared_ptr<SlotMapSource> source_;
  SlotMapSource::Member member_;
  bool own_source_ = true;  // its reader's figures are this link's
  LinkStats counts_;
};

std::unique_ptr<SubscriberImpl> make_cluster_subscriber(LoopWheel& wheel,
                                                        SubscriberOptions options) {
  return std::make_unique<ClusterSubscriberCore>(wheel, std::move(options));
}

// ---- where channels live --------------------------------------------------------

void ClusterSubscriberCore::place(const std::string& name, Channel& c) {
  Node* n = table_.owner(c.slot);
  if (n == nullptr) return;  // an uncovered slot: the next map may cover it
  ensure_link(*n);
  if (!n->link) return;
  c.node = n;
  ++n->channels;
  n->link->want(name, false);
}

void ClusterSubscriberCore::unplace(const std::string& name, Channel& c) {
  unconfirm(c);
  if (c.node == nullptr) return;
  if (c.node->link) c.node->link->unwant(name, false);
  --c.node->channels;
  c.node = nullptr;
}

// To the slot's master now (a new map, a MOVED).
void ClusterSubscriberCore::move(const std::string& name, Channel& c) {
  if (c.node != nullptr) ++counts_.channels_moved;
  if (c.confirmed || c.ever) recovering_ = true;
  unplace(name, c);
  place(name, c);
}

void ClusterSubscriberCore::unconfirm(Channel& c) noexcept {
  if (!c.confirmed) return;
  c.confirmed = false;
  --confirmed_;
  recovering_ = true;
}

void ClusterSubscriberCore::ensure_link(Node& n) {
  if (n.link) return;
  SubscriberOptions o = options_;
  o.cluster.seeds.clear();
  try {
    aim_at(o, n.address);
  } catch (const std::invalid_argument&) {
    return;  // not an address the connector takes
  }
  Node* node = &n;
  o.on_subscribed = [this, node](std::string_view name, bool, bool) {
    node_subscribed(*node, name);
  };
  o.on_resubscribed = nullptr;  // this link's own round is computed over all masters
  o.on_connect = [this, node, user = options_.on_connect] {
    // A lost master's connection is back: the map is read once more. A
    // killed master that restarted after its replica took over comes back
    // as that replica's replica, and a replica takes SSUBSCRIBE for its
    // master's slots without a -MOVED: nothing else would show this link
    // the failover (its channels would stay on a replica, masters() would
    // call it a master, and `failovers` would depend on whether a read
    // happened to fall between the promotion and the restart).
    if (std::exchange(node->lost, false)) source_->request();
    update_watch();
    if (user) user();
  };
  o.on_disconnect = [this, node, user = options_.on_disconnect](net::CloseReason r,
                                                                std::error_code e) {
    node_lost(*node);
    if (user) user(r, e);
  };
  o.on_error = [this, node, user = options_.on_error](std::error_code e, std::string_view d) {
    node_error(*node, d);
    if (user) user(e, d);
  };
  SubscriberCore::Hooks hooks;
  hooks.dropped = [this, node](std::string_view name) { node_dropped(*node, name); };
  n.link = std::make_unique<SubscriberCore>(wheel_, std::move(o), true, std::move(hooks));
  if (started_) n.link->start();
}

// A master with no channel wanted keeps no connection.
void ClusterSubscriberCore::retire_idle() {
  for (auto& n : table_.nodes()) {
    if (!n->link || n->channels > 0) continue;
    n->link->stop();
    n->past.merge(counters_only(n->link->stats()));
    graveyard_.bury(std::move(n->link));
  }
}

void ClusterSubscriberCore::apply(SlotMap&& map) {
  const auto change = table_.apply(std::move(map));
  counts_.slots_moved += change.slots_moved;
  counts_.failovers += change.failovers;
  for (auto& [name, c] : channels_)
    if (c.node != table_.owner(c.slot)) move(name, c);
  retire_idle();
  update_watch();
}

// ---- what the masters' connections report -------------------------------------------

void ClusterSubscriberCore::node_subscribed(Node& n, std::string_view name) {
  const auto it = channels_.find(name);
  if (it == channels_.end() || it->second.node != &n || it->second.confirmed) return;
  Channel& c = it->second;
  c.confirmed = true;
  ++confirmed_;
  const bool again = c.ever;
  c.ever = true;
  if (options_.on_subscribed) guard([&] { options_.on_subscribed(name, false, again); });
  finish_round_if_done();
}

void ClusterSubscriberCore::node_lost(Node& n) {
  n.lost = true;
  for (auto& [name, c] : channels_)
    if (c.node == &n) unconfirm(c);
  source_->request();
  update_watch();
}

// -MOVED to an SSUBSCRIBE: the slot's channels go to the new master now,
// and the map is read again. CLUSTERDOWN and the like: asked again later.
void ClusterSubscriberCore::node_error(Node& n, std::string_view detail) {
  if (auto redirect = parse_redirect(detail)) {
    if (redirect->address.front() == ':') redirect->address = host_of(n.address) + redirect->address;
    source_->request();
    if (redirect->ask) {
      ++counts_.redirects_ask;
      recheck_.no_later_than(wheel_.now() + options_.cluster.retry_delay);
      return;
    }
    ++counts_.redirects_moved;
    table_.moved(redirect->slot, table_.node(redirect->address));
    for (auto& [name, c] : channels_)
      if (c.slot == redirect->slot && c.node == &n) move(name, c);
    retire_idle();
    return;
  }
  if (is_transient(detail)) {
    ++counts_.cluster_retries;
    source_->request();
    recheck_.no_later_than(wheel_.now() + options_.cluster.retry_delay);
  }
}

// Redis dropped a channel (its slot moved): the master's connection asks
// for it again, and the map is read again.
void ClusterSubscriberCore::node_dropped(Node& n, std::string_view name) {
  const auto it = channels_.find(name);
  if (it != channels_.end() && it->second.node == &n) unconfirm(it->second);
  source_->request();
}

// Channels still unconfirmed on an open connection are asked for again.
void ClusterSubscriberCore::recheck() {
  for (auto& [name, c] : channels_) {
    if (c.confirmed || c.node == nullptr || !c.node->link || !c.node->link->connected())
      continue;
    ++counts_.cluster_retries;
    unplace(name, c);
    place(name, c);
  }
}

// While a master holding wanted channels is unreachable, the map is read
// every refresh_interval: its replica's promotion shows there.
void ClusterSubscriberCore::update_watch() {
  bool down = false;
  for (const auto& n : table_.nodes())
    if (n->channels > 0 && n->link && !n->link->connected()) down = true;
  source_->keep_reading(member_, down);
}

void ClusterSubscriberCore::finish_round_if_done() {
  if (!recovering_ || confirmed_ < channels_.size()) return;
  recovering_ = false;
  ++counts_.resubscribe_rounds;
  if (options_.on_resubscribed) guard([&] { options_.on_resubscribed(channels_.size()); });
}

// ---- figures ------------------------------------------------------------------------

LinkStats ClusterSubscriberCore::stats() const noexcept {
  LinkStats s = own_source_ ? source_->stats() : counters_only(LinkStats{});
  for (const auto& n : table_.nodes()) {
    s.merge(n->past);
    if (n->link) s.merge(n->link->stats());
  }
  for (const auto field : {&LinkStats::subscribes, &LinkStats::unsubscribes,
                           &LinkStats::resubscribe_rounds, &LinkStats::channels_moved,
                           &LinkStats::slots_moved, &LinkStats::failovers,
                           &LinkStats::redirects_moved, &LinkStats::redirects_ask,
                           &LinkStats::cluster_retries})
    s.*field = counts_.*field;
  s.resubscribes += counts_.channels_moved;
  s.callback_exceptions += counts_.callback_exceptions;
  s.links = 1;
  s.subscriptions = channels_.size();
  s.active_subscriptions = confirmed_;
  s.cluster_masters = table_.masters();
  return s;
}

std::vector<MasterStats> ClusterSubscriberCore::masters() const {
  return master_stats(table_, [](const Node& n) { return n.channels; });
}

}  // namespace heartwheel::redis::detail
