// Private: what a net::Pool keeps per endpoint (heartwheel/net/pool.h).
#pragma once

#include <heartwheel/net/pool.h>
#include <heartwheel/timer/timer_entry.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace heartwheel::net::detail {

struct PoolEndpoint {
  // One wheel entry per endpoint: the end of its ejection, its probe's
  // timeout, or its drain timeout (the states are exclusive).
  struct Timer final : TimerEntry {
    explicit Timer(PoolEndpoint& e) : TimerEntry(&fire), owner(&e) {}
    static void fire(TimerEntry& t);
    PoolEndpoint* owner;
  };

  PoolEndpoint(Pool& p, std::size_t i, std::string a)
      : pool(&p), id(i), address(std::move(a)), timer(*this) {}

  EndpointInfo info() const;
  // The open connection with room for one more call and the fewest calls,
  // starting after the last one picked (ties go round); nullptr if none.
  PooledConnection* least_loaded(std::uint32_t max_calls) noexcept;
  bool has_room(std::uint32_t max_calls) const noexcept;
  bool drained() const noexcept;  // draining, nothing open or connecting, no call in flight

  Pool* pool;
  std::size_t id;
  std::string address;
  std::shared_ptr<const ConnectorOptions> options;
  std::vector<std::unique_ptr<PooledConnection>> members;
  EndpointHealth health;
  EndpointStats stats;
  Timer timer;
  std::uint32_t open = 0;       // members with an open connection
  std::uint32_t in_flight = 0;  // calls acquired and not released
  std::size_t next_member = 0;  // where least_loaded starts looking
  bool probe_sent = false;      // probing: the probe ping went out
};

}  // namespace heartwheel::net::detail
