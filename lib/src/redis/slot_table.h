// Private: what a cluster link knows of the cluster - every node named by a
// slot map or a redirect (never erased, so a Node& stays valid), which one
// owns each slot, and what changed from one map to the next. Node is the
// link's own node type, derived from ClusterNode.
#pragma once

#include <heartwheel/redis/slot.h>
#include <heartwheel/redis/stats.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "slot_map.h"

namespace heartwheel::redis::detail {

struct ClusterNode {
  std::string address;      // "IP:PORT"
  std::uint64_t slots = 0;  // in the current map
  bool master = false;      // owns slots in the current map (or a MOVED named it)
  bool lost = false;        // its connection dropped: the map is read again when it is back
  LinkStats past;           // counters of its earlier links (zeroed gauges)
};

template <class Node>
class SlotTable {
 public:
  static constexpr std::uint32_t kNoNode = 0xffffffff;

  SlotTable() : owner_(kSlotCount, kNoNode) {}

  // A map has been applied.
  bool known() const noexcept { return known_; }
  const SlotMap& map() const noexcept { return map_; }
  const std::vector<std::unique_ptr<Node>>& nodes() const noexcept { return nodes_; }

  // The node at `address`, made if new.
  Node& node(const std::string& address) {
    const auto it = by_address_.find(address);
    if (it != by_address_.end()) return *nodes_[it->second];
    by_address_.emplace(address, static_cast<std::uint32_t>(nodes_.size()));
    nodes_.push_back(std::make_unique<Node>());
    nodes_.back()->address = address;
    nodes_.back()->past.links = 0;
    return *nodes_.back();
  }
  // The slot's master; null before the first map or for an uncovered slot.
  Node* owner(std::uint16_t slot) const noexcept {
    const std::uint32_t i = owner_[slot];
    return i == kNoNode ? nullptr : nodes_[i].get();
  }
  // A MOVED: the slot's master is `to` from now on (until the next map).
  void moved(std::uint16_t slot, Node& to) {
    to.master = true;
    owner_[slot] = by_address_.at(to.address);
  }

  struct Change {
    std::uint64_t slots_moved = 0;  // slots whose master changed (0 for the first map)
    std::uint64_t failovers = 0;    // masters the previous map listed as replicas, or that
                                    // took over every slot of a master (took_over)
  };
  Change apply(SlotMap&& map) {
    Change c;
    if (known_)
      for (const Shard& s : map.shards)
        if (map_.is_replica(s.master) || took_over(map, s)) ++c.failovers;
    std::vector<std::uint32_t> owner(kSlotCount, kNoNode);
    for (auto& n : nodes_) {
      n->master = false;
      n->slots = 0;
    }
    for (const Shard& s : map.shards) {
      Node& n = node(s.master);
      const std::uint32_t index = by_address_[n.address];
      n.master = true;
      for (const auto& [first, last] : s.ranges) {
        std::fill(owner.begin() + first, owner.begin() + last + 1, index);
        n.slots += last - first + 1u;
      }
    }
    if (known_)
      for (std::size_t slot = 0; slot < kSlotCount; ++slot)
        if (owner[slot] != owner_[slot]) ++c.slots_moved;
    owner_ = std::move(owner);
    map_ = std::move(map);
    known_ = true;
    return c;
  }
  // Whether `s` of the next map is a failover that the current map could not
  // name: its master owned no slot here (an empty master, or a replica this
  // map did not list: nodes learn a new replica's role by gossip, so a map
  // read soon after a cluster is made lists replicas as empty masters) and
  // now holds every slot of one master here that holds none in `next`. A
  // migration moves slots to a master that owns some already, or leaves the
  // old master some. O(slots of s + shards).
  bool took_over(const SlotMap& next, const Shard& s) const {
    const auto it = by_address_.find(s.master);
    if (it != by_address_.end() && nodes_[it->second]->slots > 0) return false;
    std::uint32_t from = kNoNode;
    std::uint64_t count = 0;
    for (const auto& [first, last] : s.ranges)
      for (std::uint32_t slot = first; slot <= last; ++slot) {
        const std::uint32_t o = owner_[slot];
        if (o == kNoNode || (from != kNoNode && o != from)) return false;
        from = o;
        ++count;
      }
    if (from == kNoNode || nodes_[from]->slots != count) return false;
    const std::string& old = nodes_[from]->address;
    return std::none_of(next.shards.begin(), next.shards.end(),
                        [&](const Shard& t) { return t.master == old; });
  }

  // Masters owning slots now.
  std::uint64_t masters() const noexcept {
    return static_cast<std::uint64_t>(std::count_if(
        nodes_.begin(), nodes_.end(), [](const auto& n) { return n->master && n->slots > 0; }));
  }

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::unordered_map<std::string, std::uint32_t> by_address_;
  std::vector<std::uint32_t> owner_;
  SlotMap map_;
  bool known_ = false;
};

// What masters() of a cluster link answers: each master owning slots in
// `table`, by address, with its slot count, whether its connection is open,
// pending(node) (what the link counts as waiting for it) and the counters of
// its connections: the current one (node.link, if any) plus those given up
// (node.past). O(nodes). Node has `link` (a pointer to a link with
// connected() and stats()) as ClusterCore's and ClusterSubscriberCore's do.
template <class Node, class Pending>
std::vector<MasterStats> master_stats(const SlotTable<Node>& table, Pending pending) {
  std::vector<MasterStats> out;
  for (const auto& n : table.nodes()) {
    if (!n->master || n->slots == 0) continue;
    MasterStats m;
    m.address = n->address;
    m.slots = n->slots;
    m.connected = n->link && n->link->connected();
    m.pending = pending(*n);
    m.link = n->past;  // links 0: node() and counters_only() zero it
    if (n->link) m.link.merge(n->link->stats());
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(),
            [](const MasterStats& a, const MasterStats& b) { return a.address < b.address; });
  return out;
}

// The host of "HOST:PORT" (an IPv6 host stays in its brackets): Redis
// leaves it out of a redirect ("MOVED 3999 :6381") when it is the host the
// client used.
inline std::string host_of(const std::string& address) {
  return address.substr(0, address.rfind(':'));
}

}  // namespace heartwheel::redis::detail
