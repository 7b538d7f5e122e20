// Private: a Redis Cluster's slot map as CLUSTER SHARDS (Redis 7) or CLUSTER
// SLOTS (3.0 on) reports it, and the error replies a cluster link acts on
// (MOVED, ASK, and the transient ones worth trying again).
#pragma once

#include <heartwheel/redis/reply.h>
#include <heartwheel/redis/slot.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace heartwheel::redis::detail {

struct Shard {
  std::string master;                 // "IP:PORT"
  std::vector<std::string> replicas;  // "IP:PORT" each
  std::vector<std::pair<std::uint16_t, std::uint16_t>> ranges;  // first..last, inclusive
};

struct SlotMap {
  std::vector<Shard> shards;  // those owning at least one slot

  // The master of each slot ("" where no shard claims it), 16384 entries.
  std::vector<std::string> owners() const;
  // Every node named, masters first, each once.
  std::vector<std::string> nodes() const;
  // Whether `address` is a replica in this map.
  bool is_replica(std::string_view address) const noexcept;
};

// nullopt when the reply is not shaped like the command's (or an error).
std::optional<SlotMap> parse_cluster_shards(const Reply& reply);
std::optional<SlotMap> parse_cluster_slots(const Reply& reply);

// "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381".
struct Redirect {
  bool ask = false;
  std::uint16_t slot = 0;
  std::string address;
};
std::optional<Redirect> parse_redirect(std::string_view error);

// CLUSTERDOWN (no quorum, a master failed and is not replaced yet), TRYAGAIN
// (a multi-key command during a slot's migration), LOADING (a node reading
// its data), MASTERDOWN: the same command may succeed a little later.
bool is_transient(std::string_view error) noexcept;

}  // namespace heartwheel::redis::detail
