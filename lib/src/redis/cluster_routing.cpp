// redis::Client in cluster mode: the nodes and their links, the slot map,
// and the waiting room (commands no open connection can take now). See
// cluster_core.h.
#include <heartwheel/common/error.h>
#include <heartwheel/net/address.h>

#include <algorithm>
#include <utility>

#include "cluster_core.h"

namespace heartwheel::redis::detail {

// A connection to `n`, made when a command first needs it: the
// application's link options at n's address, no buffer of its own.
void ClusterCore::ensure_link(Node& n) {
  if (n.link) return;
  ClientOptions o = options_;
  o.cluster.seeds.clear();
  o.max_buffered = 0;
  try {
    aim_at(o, n.address);
  } catch (const std::invalid_argument&) {
    return;  // not an address the connector takes: its commands wait and time out
  }
  Node* node = &n;  // nodes are never erased (slot_table.h)
  o.on_connect = [this, node, user = options_.on_connect] {
    node_opened(*node);
    if (user) user();
  };
  o.on_disconnect = [this, node, user = options_.on_disconnect](net::CloseReason r,
                                                                std::error_code e) {
    node_lost(*node);
    if (user) user(r, e);
  };
  n.link = std::make_unique<ClientCore>(wheel_, std::move(o));
  if (started_) n.link->start();
}

// A node that is no longer a master keeps its connection until what it
// has in flight is answered, then lets it go (the graveyard: this may run
// inside one of its callbacks).
void ClusterCore::retire_idle_links() {
  for (auto& n : table_.nodes()) {
    if (n->master || !n->link || n->link->in_flight() > 0 || n->waiting > 0) continue;
    n->link->stop();
    n->past.merge(counters_only(n->link->stats()));
    graveyard_.bury(std::move(n->link));
  }
}

void ClusterCore::apply(SlotMap&& map) {
  const auto change = table_.apply(std::move(map));
  counts_.slots_moved += change.slots_moved;
  counts_.failovers += change.failovers;
  retire_idle_links();
  update_watch();
  pump();
}

// A lost master's connection is back: the map is read once more, as the
// cluster subscriber does (cluster_subscriber.cpp says why): the node may
// have come back as a replica, and the waiting commands would meet -MOVED.
void ClusterCore::node_opened(Node& n) {
  if (std::exchange(n.lost, false)) source_->request();
  update_watch();
  pump();
}

void ClusterCore::node_lost(Node& n) {
  n.lost = true;
  n.suspect = false;
  source_->request();
  update_watch();
}

// A command timed out on `n`'s connection (on), or `n` answered one (off).
// A master that is frozen, or cut off by a partition, keeps its connection
// open until the heartbeat gives up (3 intervals: 15 s by default), while
// its replica may take over after cluster-node-timeout: so the map is
// watched from the first timeout until it answers again. A master that is
// merely slow costs a map read per refresh_interval meanwhile.
void ClusterCore::suspect(Node& n, bool on) {
  if (n.suspect == on) return;
  n.suspect = on;
  if (on) source_->request();
  update_watch();
}

// While a master this client talks to is unreachable or suspect, the map
// is read every refresh_interval: its replica's promotion shows there (and
// reaches the Subscribers that follow this client).
void ClusterCore::update_watch() {
  bool down = false;
  for (const auto& n : table_.nodes())
    if (n->master && n->slots > 0 && n->link && (!n->link->connected() || n->suspect)) down = true;
  source_->keep_reading(member_, down);
}

void ClusterCore::wait(const RequestPtr& r) {
  r->node = target(*r);
  if (r->node != nullptr) {
    ++r->node->waiting;
    ensure_link(*r->node);
  }
  waiting_bytes_ += r->bytes;
  waiting_.push_back(r);
  const TimePoint now = wheel_.now();
  wake_.no_later_than(std::min(r->deadline, std::max(r->not_before, now)));
}

void ClusterCore::unwait(Request& r) noexcept {
  if (r.node != nullptr) --r.node->waiting;
  r.node = nullptr;
  waiting_bytes_ -= r.bytes;
}

// Sends what can be sent now, in order: a request whose node cannot take it
// holds back the later ones for the same node. Requests past their
// deadline fail with timed_out. Runs when a connection opens, a map comes,
// and at the earliest deadline / retry time (the Alarm).
void ClusterCore::pump() {
  if (pumping_) {
    pump_again_ = true;
    return;
  }
  pumping_ = true;
  std::vector<Outcome> outcomes;
  do {
    pump_again_ = false;
    const TimePoint now = wheel_.now();
    std::deque<RequestPtr> all;
    all.swap(waiting_);
    std::vector<Node*> blocked;
    for (RequestPtr& r : all) {
      unwait(*r);
      if (r->deadline <= now) {
        outcomes.push_back({std::move(r), heartwheel::errc::timed_out, Reply()});
        continue;
      }
      Node* n = target(*r);
      const bool held_back = std::find(blocked.begin(), blocked.end(), n) != blocked.end();
      if (r->not_before <= now && !held_back && ready(n)) {
        if (!send_to(*n, r)) continue;
        r->not_before = now + options_.cluster.retry_delay;  // its write queue is full
      }
      if (n != nullptr && !held_back) blocked.push_back(n);
      r->node = n;
      if (n != nullptr) {
        ++n->waiting;
        ensure_link(*n);
      }
      waiting_bytes_ += r->bytes;
      waiting_.push_back(std::move(r));
    }
  } while (pump_again_);
  pumping_ = false;
  arm_wake();
  for (Outcome& o : outcomes) finish(o.request, o.error, std::move(o.reply));
  retire_idle_links();
}

void ClusterCore::arm_wake() {
  const TimePoint now = wheel_.now();
  TimePoint next = kNever;
  for (const RequestPtr& r : waiting_) {
    next = std::min(next, r->deadline);
    if (r->not_before > now) next = std::min(next, r->not_before);
  }
  if (next == kNever)
    wake_.cancel();
  else
    wake_.at(next);
}

}  // namespace heartwheel::redis::detail
