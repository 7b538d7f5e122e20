// Reading a Redis Cluster's slot map and its redirect errors (slot_map.h).
#include "slot_map.h"

#include <algorithm>
#include <charconv>

namespace heartwheel::redis::detail {

namespace {

std::string address(std::string_view ip, std::int64_t port) {
  return std::string(ip) + ":" + std::to_string(port);
}

bool valid_range(std::int64_t first, std::int64_t last) {
  return first >= 0 && last >= first && last < kSlotCount;
}

// A RESP2 map: [key, value, key, value, ...]. The value of `key`, or null.
const Reply* field(const Reply& map, std::string_view key) {
  if (!map.is_array()) return nullptr;
  for (std::size_t i = 0; i + 1 < map.size(); i += 2)
    if (map[i].is_string() && map[i].str() == key) return &map[i + 1];
  return nullptr;
}

bool starts_with(std::string_view s, std::string_view prefix) noexcept {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

std::vector<std::string> SlotMap::owners() const {
  std::vector<std::string> out(kSlotCount);
  for (const Shard& s : shards)
    for (const auto& [first, last] : s.ranges)
      for (std::uint32_t slot = first; slot <= last; ++slot) out[slot] = s.master;
  return out;
}

std::vector<std::string> SlotMap::nodes() const {
  std::vector<std::string> out;
  auto add = [&](const std::string& a) {
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  };
  for (const Shard& s : shards) add(s.master);
  for (const Shard& s : shards)
    for (const auto& r : s.replicas) add(r);
  return out;
}

bool SlotMap::is_replica(std::string_view a) const noexcept {
  for (const Shard& s : shards)
    for (const auto& r : s.replicas)
      if (r == a) return true;
  return false;
}

// [[ "slots", [first, last, ...], "nodes", [[ "id", .., "port", P, "ip", IP,
//    .., "role", "master" | "replica", .., "health", "online" | ... ], ...]], ...]
std::optional<SlotMap> parse_cluster_shards(const Reply& reply) {
  if (!reply.is_array()) return std::nullopt;
  SlotMap map;
  for (const Reply& s : reply.elements()) {
    const Reply* slots = field(s, "slots");
    const Reply* nodes = field(s, "nodes");
    if (slots == nullptr || nodes == nullptr || !slots->is_array() || !nodes->is_array() ||
        slots->size() % 2 != 0)
      return std::nullopt;
    if (slots->size() == 0) continue;  // a master without slots (a failed one, an empty one)
    Shard shard;
    for (std::size_t i = 0; i < slots->size(); i += 2) {
      const std::int64_t first = (*slots)[i].integer(), last = (*slots)[i + 1].integer();
      if (!valid_range(first, last)) return std::nullopt;
      shard.ranges.emplace_back(first, last);
    }
    for (const Reply& n : nodes->elements()) {
      const Reply* ip = field(n, "ip");
      const Reply* port = field(n, "port");
      const Reply* role = field(n, "role");
      if (ip == nullptr || port == nullptr || role == nullptr || !port->is_integer())
        return std::nullopt;
      if (ip->str().empty() || ip->str() == "?") continue;  // an address Redis does not know yet
      std::string a = address(ip->str(), port->integer());
      if (role->str() == "master")
        shard.master = std::move(a);
      else
        shard.replicas.push_back(std::move(a));
    }
    if (shard.master.empty()) return std::nullopt;
    map.shards.push_back(std::move(shard));
  }
  return map;
}

// [[first, last, [ip, port, id, ...] (master), [ip, port, id, ...] (replica), ...], ...]
std::optional<SlotMap> parse_cluster_slots(const Reply& reply) {
  if (!reply.is_array()) return std::nullopt;
  SlotMap map;
  for (const Reply& r : reply.elements()) {
    if (!r.is_array() || r.size() < 3 || !r[0].is_integer() || !r[1].is_integer())
      return std::nullopt;
    if (!valid_range(r[0].integer(), r[1].integer())) return std::nullopt;
    std::vector<std::string> nodes;
    for (std::size_t i = 2; i < r.size(); ++i) {
      if (!r[i].is_array() || r[i].size() < 2 || !r[i][1].is_integer()) return std::nullopt;
      nodes.push_back(address(r[i][0].str(), r[i][1].integer()));
    }
    auto it = std::find_if(map.shards.begin(), map.shards.end(),
                           [&](const Shard& s) { return s.master == nodes[0]; });
    if (it == map.shards.end()) {
      map.shards.push_back({nodes[0], {nodes.begin() + 1, nodes.end()}, {}});
      it = map.shards.end() - 1;
    }
    it->ranges.emplace_back(r[0].integer(), r[1].integer());
  }
  return map;
}

std::optional<Redirect> parse_redirect(std::string_view e) {
  Redirect r;
  if (starts_with(e, "MOVED ")) {
    e.remove_prefix(6);
  } else if (starts_with(e, "ASK ")) {
    r.ask = true;
    e.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  const auto space = e.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  unsigned slot = 0;
  const auto [end, ec] = std::from_chars(e.data(), e.data() + space, slot);
  if (ec != std::errc{} || end != e.data() + space || slot >= kSlotCount) return std::nullopt;
  r.slot = static_cast<std::uint16_t>(slot);
  r.address = std::string(e.substr(space + 1));
  if (r.address.empty()) return std::nullopt;
  // "MOVED 3999 :6381": Redis leaves the host out when it is the one the
  // client used; the caller fills it in.
  return r;
}

bool is_transient(std::string_view e) noexcept {
  return starts_with(e, "CLUSTERDOWN") || starts_with(e, "TRYAGAIN") ||
         starts_with(e, "LOADING") || starts_with(e, "MASTERDOWN");
}

}  // namespace heartwheel::redis::detail
