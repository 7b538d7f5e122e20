// heartwheel/net/pool_stats.h - the counters a net::Pool (pool.h) keeps per
// endpoint, and their table of fields.
//
// EndpointStats is one endpoint's counters and gauges; its field table
// (fields(), heartwheel/common/stat_fields.h, in lib/src/net/pool_stats.cpp)
// gives merge, the JSON form and the Prometheus families
// (heartwheel_pool_*). EndpointInfo adds what is not a number: the address
// and the state. to_json(vector<EndpointInfo>) is the array a program
// prints (heartwheel-rpc-client's "servers"). write_metrics writes the pools'
// endpoints as Prometheus families into any MetricSink (the metrics layer's
// TextWriter); every family: lib/src/metrics/README.md.
// Threads: plain values, copied out on the pool's loop thread.
#pragma once

#include <heartwheel/common/metric_sink.h>
#include <heartwheel/common/stat_fields.h>
#include <heartwheel/net/pool_health.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace heartwheel::net {

struct EndpointStats {
  // Calls (Pool::release outcomes).
  std::uint64_t calls_ok = 0;
  std::uint64_t calls_failed = 0;     // the connection failed under it, or the protocol said so
  std::uint64_t calls_timed_out = 0;  // its deadline passed
  // Health.
  std::uint64_t ejections = 0;  // times ejected (failures, heartbeat timeouts, failed probes)
  std::uint64_t ejections_skipped = 0;  // ejections the max_ejection_percent cap refused
  std::uint64_t probes = 0;             // probes started (ejection time over)
  std::uint64_t readmissions = 0;       // probes that succeeded
  // Connections.
  std::uint64_t connects = 0;            // connections opened
  std::uint64_t reconnects = 0;          // of which by a connection that had been open before
  std::uint64_t connect_failures = 0;    // attempts refused or timed out
  std::uint64_t disconnects = 0;         // connections closed (any reason)
  std::uint64_t heartbeat_timeouts = 0;  // of which closed by the heartbeat (pong_timeout)
  std::uint64_t pings_sent = 0;          // heartbeat and probe pings
  // Gauges, now.
  std::uint64_t in_flight = 0;    // calls acquired and not released
  std::uint64_t open = 0;         // open connections
  std::uint64_t connections = 0;  // connections kept (open or not)

  void merge(const EndpointStats& other) noexcept;
  static StatTable<EndpointStats> fields() noexcept;
};

struct EndpointInfo {
  std::size_t id = 0;   // the pool's number for it (picker.h, EndpointLoad::endpoint)
  std::string address;  // "HOST:PORT" as given
  EndpointState state = EndpointState::warming;
  EndpointStats stats;
};

// [{"address":"127.0.0.1:7401","state":"healthy","calls_ok":...}, ...]: the
// address, the state and every field of the table.
std::string to_json(const std::vector<EndpointInfo>& endpoints);

// One pool's endpoints for write_metrics: its name (the pool label's value,
// "backend") and Pool::endpoints(), both referred to within the call.
struct PoolEndpoints {
  std::string_view name;
  std::span<const EndpointInfo> endpoints;
};

// Appends the heartwheel_pool_* families: EndpointStats' table, one sample
// per endpoint of every pool labelled pool="<name>" and
// endpoint="HOST:PORT" (plus the row's own label, outcome="ok" ...), and
// heartwheel_pool_endpoint_state{pool,endpoint,state} 1 for the state each
// endpoint is in. Throws as the sink (TextWriter: std::logic_error if `out`
// already has one of them). Threads: any (it reads copies taken on the
// pools' loop threads). Cost: ~16 samples per endpoint.
void write_metrics(MetricSink& out, std::span<const PoolEndpoints> pools);

}  // namespace heartwheel::net
