// heartwheel/net/stats.h - the counters a server (or connector) keeps.
//
// Plain counters updated on the loop thread without atomics; read them on
// that thread, or through Workers::snapshots() which copies them across
// threads. merge() adds another set (other workers, other processes).
// write_metrics() writes them as metric families into any MetricSink (the
// metrics layer's TextWriter exposes them to Prometheus:
// metrics::write(out, workers.total())).
#pragma once

#include <heartwheel/common/duration_histogram.h>
#include <heartwheel/common/metric_sink.h>
#include <heartwheel/common/stat_fields.h>
#include <heartwheel/common/time.h>
#include <heartwheel/net/close_reason.h>
#include <heartwheel/net/deadline.h>
#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/timer/timing_wheel.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace heartwheel::net {

// PROXY protocol headers read by a server with ServerOptions::proxy_protocol.
// A refused header also counts in closed_by_reason (proxy_header_invalid,
// proxy_header_timeout, proxy_untrusted).
struct ProxyProtocolStats {
  std::uint64_t v1 = 0;         // complete v1 headers
  std::uint64_t v2 = 0;         // complete v2 headers (LOCAL included)
  std::uint64_t local = 0;      // of which v2 LOCAL (health checks: the socket's addresses kept)
  std::uint64_t invalid = 0;    // malformed (or cut short by the peer's FIN)
  std::uint64_t timeouts = 0;   // not complete within the header timeout
  std::uint64_t untrusted = 0;  // from a source outside ServerOptions::proxy_protocol_from

  void merge(const ProxyProtocolStats& o) noexcept;
  static StatTable<ProxyProtocolStats> fields() noexcept;  // lib/src/net/stats.cpp
};

// Overload protection (ServerOptions::overload, max_connections_per_ip).
// Drops at the limit count in closed_by_reason.overload, per-address refusals
// in closed_by_reason.ip_limit.
struct OverloadStats {
  // The idle-timeout scale in force (1 = none; overload.h). A gauge: merging
  // keeps the smallest (the most pressed loop).
  double idle_scale = 1.0;
  std::uint64_t scale_changes = 0;   // times the scale moved
  std::uint64_t sweeps = 0;          // sweeper wake-ups (the tail re-arm)
  std::uint64_t swept = 0;           // connections the sweeper re-armed
  std::uint64_t activity_moves = 0;  // moves to the front of the activity order
  std::uint64_t drop_probes = 0;     // candidates looked at to drop the idlest

  void merge(const OverloadStats& o) noexcept;
  static StatTable<OverloadStats> fields() noexcept;  // lib/src/net/stats.cpp
};

struct NetStats {
  std::uint64_t accepted =
      0;                      // server: accepted sockets (incl. closed for limit); client: connects
  std::uint64_t current = 0;  // open connections now
  std::uint64_t peak = 0;     // most open at once (merged: sum of the parts' peaks)
  std::uint64_t accept_errors = 0;  // failed accepts, of which:
  std::uint64_t fd_exhausted =
      0;  //   EMFILE / ENFILE that libuv reported (its reserve-fd trick sheds the rest silently)
  std::uint64_t accept_pauses = 0;     // times accepting stopped for ServerOptions::accept_pause
  std::uint64_t accept_deferrals = 0;  // loop turns that used up ServerOptions::accept_batch
  std::uint64_t connect_failures = 0;  // client: failed connect attempts
  // Transport-stage handshakes (TLS) that completed, and of those the ones
  // that resumed an earlier session (a ticket) instead of a full handshake.
  // Failed ones count in closed_by_reason by cause (tls_*).
  std::uint64_t handshakes_completed = 0;
  std::uint64_t handshakes_resumed = 0;
  // By number: net's reasons and kinds and every layer's (close_reason.h,
  // deadline.h), so counters of any process merge index by index.
  CloseReasonCounts closed_by_reason{};
  std::array<std::uint64_t, kDeadlineCapacity> idle_events{};  // deadline events delivered, by kind
  std::uint64_t bytes_read = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t bytes_dropped = 0;  // refused by the queue cap or queued at close
  // Gauge: bytes accepted by Connection::write and not yet completely written
  // (an in-flight uv_write counts until it completes), over all connections.
  std::uint64_t write_queue_bytes = 0;
  std::uint64_t handler_exceptions = 0;
  std::uint64_t unwritable_events = 0;  // high-watermark crossings
  std::uint64_t read_pauses = 0;        // slow-reader pauses
  // Connection timer wake-ups (either backend, incl. lazy re-arms) and how
  // late they ran after the deadline they were armed for (for the wheel, on
  // its tick grid: the rounding up to a tick is not counted, only the
  // loop's delay): the same measure for the wheel and the uv_timer baseline. count() is the number of
  // wake-ups, sum the total lateness.
  DurationHistogram<LoopWheel::kLagBuckets> timer_lateness;
  Duration timer_lateness_max{0};
  // Kept apart from the counters above (other layers add theirs there).
  ProxyProtocolStats proxy;
  OverloadStats overload;

  std::uint64_t closed() const noexcept {
    std::uint64_t n = 0;
    for (auto c : closed_by_reason) n += c;
    return n;
  }
  std::uint64_t closed(CloseReason r) const noexcept {
    return closed_by_reason[static_cast<std::size_t>(r)];
  }
  std::uint64_t timer_fires() const noexcept { return timer_lateness.count(); }
  // One connection timer wake-up, `lateness` after its deadline.
  void record_timer_fire(Duration lateness) noexcept {
    timer_lateness.record(lateness);
    if (lateness > timer_lateness_max) timer_lateness_max = lateness;
  }
  void merge(const NetStats& other) noexcept;
  // The std::uint64_t fields' table (heartwheel/common/stat_fields.h): JSON
  // keys, Prometheus families and help; lib/src/net/stats.cpp. The other
  // members are merged and written by hand beside it.
  static StatTable<NetStats> fields() noexcept;
};

using ServerStats = NetStats;

// One loop's counters: its server(s), its wheel and the loop itself. Plain
// data (trivially copyable) so worker processes can hand it to their parent
// as bytes.
struct LoopSnapshot {
  NetStats net;
  WheelStats wheel;
  LoopWheel::LoopStats loop;        // iterations, lag histogram, stalls, budget
  std::uint64_t wheel_entries = 0;  // entries armed now
  std::uint64_t loops = 1;          // how many loops were merged in

  // Adds `other`; lateness keeps the worst maximum and sums the totals.
  void merge(const LoopSnapshot& other) noexcept;
};

// The statistics as one JSON object (the schema is in lib/src/net/README.md):
// connections_accepted, connections_current, closed_by_reason{...every named
// reason, zeros included}, idle_events{...every named kind}, bytes_*, wheel{...}, expiry_lateness_ms{max, mean},
// loop{iterations, stalls, stall_ms{total, max}, lag_ms{mean}},
// proxy_protocol{v1, v2, local, invalid, timeouts, untrusted}, overload{idle_scale, ...}.
std::string to_json(const LoopSnapshot& snapshot);

// Appends the net, wheel and loop families of `snapshot` (heartwheel_
// connections_open, heartwheel_loop_lag_seconds, ...; every family, its
// type, labels and meaning: lib/src/metrics/README.md). The snapshot is
// usually the merge of every loop of the server (all worker threads, all
// pre-forked processes): the families carry no per-loop labels, so a scrape
// reads the whole server. Every close reason and every delivered deadline
// kind is written, zeros included, so rate() works from the first scrape.
// Throws as the sink (TextWriter: std::logic_error if `out` already has one
// of these families). Cost: ~70 samples, a few microseconds.
void write_metrics(MetricSink& out, const LoopSnapshot& snapshot);

// A counter family `name` of connections closed by reason, every named
// reason written (zeros included) with label reason="<to_string(reason)>":
// net's closes and any layer's that counts its own (ws::Stats).
void write_close_reasons(MetricSink& out, std::string_view name, std::string_view help,
                         const CloseReasonCounts& closed);

}  // namespace heartwheel::net
