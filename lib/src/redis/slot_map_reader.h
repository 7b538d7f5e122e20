// Private: reads a Redis Cluster's slot map for a cluster link (ClusterCore,
// ClusterSubscriberCore) over a connection of its own, to one node at a
// time: the seeds first, then any node the last map named. A read that fails
// (no answer within refresh_timeout, an error, the connection lost) moves it
// to the next node. Reads are coalesced: at most one in flight, and at most
// one per refresh_interval; while keep_reading(true), one every
// refresh_interval (a master is unreachable: watch for its replica's
// promotion). CLUSTER SHARDS first; CLUSTER SLOTS if Redis does not know it
// (before 7.0).
#pragma once

#include <heartwheel/redis/client.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client_core.h"
#include "deferred.h"
#include "slot_map.h"

namespace heartwheel::redis::detail {

class SlotMapReader {
 public:
  // `base`: the application's options (connector, heartbeat, setup,
  // callbacks, cluster); on_map runs on the loop thread with each map read.
  SlotMapReader(LoopWheel& wheel, const LinkOptions& base, std::function<void(SlotMap&&)> on_map);
  ~SlotMapReader();

  // Reads now, then as asked. stop() closes the connection.
  void start();
  void stop();
  // Read again as soon as refresh_interval allows.
  void request();
  // While true, read every refresh_interval.
  void keep_reading(bool on);
  // The nodes of the latest map: where later reads may go.
  void learn(const std::vector<std::string>& nodes);
  // Its connections' counters (connects, pings, ...; not its commands,
  // which are no application's) and slot_map_refreshes / slot_map_errors.
  LinkStats stats() const noexcept;

 private:
  void read();
  void on_reply(std::uint64_t generation, std::error_code ec, Reply reply);
  void failed();
  void next_node();
  void schedule();

  LoopWheel& wheel_;
  ClientOptions options_;  // for its link: connector.host/port set per node
  std::function<void(SlotMap&&)> on_map_;
  std::vector<std::string> candidates_;  // seeds, then the nodes learnt
  std::size_t next_ = 0;                 // candidates_ index of the current node
  std::unique_ptr<ClientCore> link_;
  Graveyard graveyard_;
  Alarm timer_;
  TimePoint last_read_{};
  std::uint64_t generation_ = 0;  // replies to a link given up are ignored
  bool started_ = false;
  bool in_flight_ = false;
  bool wanted_ = false;
  bool keep_ = false;
  bool lost_ = false;       // the current link dropped: move on before the next read
  bool use_slots_ = false;  // CLUSTER SHARDS is unknown here (Redis < 7)
  LinkStats past_;          // counters of the links given up
  std::uint64_t refreshes_ = 0, errors_ = 0;
};

// The counters of `s` with its gauges zeroed and its open connection
// counted as closed: what a link given up (stopped) adds to its
// successor's figures.
LinkStats counters_only(LinkStats s) noexcept;

}  // namespace heartwheel::redis::detail
