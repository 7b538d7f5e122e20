// Private: one Redis Cluster's slot map for the cluster links of one loop
// that share it. A cluster Client makes one; a Subscriber that follows the
// client (Subscriber::follow) joins it instead of reading a map of its own.
// Every map read goes to every member, in the order read, so a failover one
// link meets (a command timing out or redirected, a lost connection) moves
// the others at the same moment: a subscriber whose connection to a frozen
// or partitioned master is still open learns the new master from the
// client's commands, not from its own heartbeat 15 s later.
//
// Members ask for reads (request(), keep_reading()); the one SlotMapReader
// reads for all of them (coalesced: one read in flight, one per
// refresh_interval) and runs while any member runs. Members are the links'
// cores, which hold the source by shared_ptr: whichever goes first, the
// source goes with the last one. Loop thread only. on_map runs from the
// reader's callback; it may call request() and keep_reading(), not join()
// or leave().
#pragma once

#include <heartwheel/redis/link_options.h>
#include <heartwheel/redis/stats.h>
#include <heartwheel/timer/loop_wheel.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "slot_map.h"
#include "slot_map_reader.h"

namespace heartwheel::redis::detail {

class SlotMapSource {
 public:
  using Member = std::uint32_t;
  using OnMap = std::function<void(const SlotMap&)>;

  // `base`: the options of the link that makes it (its seeds, connector,
  // AUTH and setup serve the reader's connection).
  SlotMapSource(LoopWheel& wheel, const LinkOptions& base);

  // A new member; `on_map` gets every map read from now on, and at once the
  // latest one read before, if any.
  Member join(OnMap on_map);
  // After leave() the member gets nothing more and asks for nothing.
  void leave(Member m) noexcept;
  // Whether `m` runs (started); the reader runs while some member does.
  void run(Member m, bool on);
  // Read again as soon as refresh_interval allows.
  void request() { reader_.request(); }
  // While any member keeps it on, read every refresh_interval.
  void keep_reading(Member m, bool on);
  // The reader's counters (its connections, slot_map_refreshes / _errors):
  // counted in the figures of the member that made the source only.
  LinkStats stats() const noexcept { return reader_.stats(); }

 private:
  struct Entry {
    Member id;
    OnMap on_map;
    bool running = false;
    bool keep = false;
  };
  Entry* find(Member m) noexcept;
  void deliver(SlotMap&& map);

  SlotMapReader reader_;
  std::vector<Entry> members_;
  std::optional<SlotMap> latest_;
  Member next_id_ = 0;
  bool reading_ = false;
};

}  // namespace heartwheel::redis::detail
