// tools/load/result.h - the counters and histograms of one run, mergeable.
//
// Each worker process fills one LoadResult; it travels to the supervisor as
// raw JSON (to_json(): every counter and every histogram's bucket counts), and
// the supervisor merges them (merge(): counters add, maps add per key,
// histograms add bucket by bucket, ramp_ms takes the max), so percentiles of
// the merged result are those of all samples, not an average of percentiles.
// report_json() is the user-facing summary written by --json.
#pragma once

#include <heartwheel/common/histogram.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "reconnect.h"

namespace heartwheel::load {

struct LoadResult {
  using Counts = std::map<std::string, std::uint64_t>;

  std::uint64_t connections_attempted = 0;
  std::uint64_t connections_established = 0;
  Counts connect_errors;                // errno name -> count ("ECONNREFUSED", "ETIMEDOUT", ...)
  Counts errors;                        // "<where>:<errno name>" for failures after connect
  std::uint64_t messages_sent = 0;      // echo messages / RPC requests / HTTP requests
  std::uint64_t messages_received = 0;  // complete echoes / responses
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t pings_sent = 0;  // rpc heartbeats we sent
  std::uint64_t pongs_received = 0;
  std::uint64_t pings_answered = 0;  // server PINGs we answered with PONG
  std::uint64_t rpc_errors = 0;      // ERROR frames
  std::uint64_t sends_dropped = 0;   // sends skipped because the write backlog was full
  std::uint64_t slow_writes = 0;     // write() calls that took >= 50 ms (preempted: a loaded machine)
  Counts http_status;                // "200" -> count
  // ws: per target t and channel c, "t/c:final" (the publisher's last
  // offset), "t/c:clients" and "t/c:last_sum" (live subscribers open at the
  // end, and the sum of the last offset each had seen), "t/c:base_sum" (the
  // sum of their starting offsets): the supervisor derives missing_tail and
  // expected from them (report_json's "ws" block).
  Counts ws_offsets;
  std::uint64_t dead_count = 0;         // connections chosen to go silent (and established)
  std::uint64_t dead_closed = 0;        // ... that the server closed
  std::uint64_t dead_closed_early = 0;  // closed before --expect-idle-close
  std::uint64_t dead_closed_late = 0;   // closed after --expect-idle-close + slack
  std::uint64_t live_closed_by_server = 0;
  std::uint64_t open_at_end = 0;          // still open when the run stopped
  std::uint64_t connects_unfinished = 0;  // connects still in flight when the run stopped
  std::uint64_t ramp_ms = 0;              // from start until every connect attempt resolved
  std::uint64_t processes = 0;            // worker results merged into this one
  // ws mode (see README "ws mode")
  std::uint64_t ws_upgraded = 0;             // 101 responses with the right Sec-WebSocket-Accept
  std::uint64_t ws_subscribed = 0;           // subscribe replies with ok (reconnects included)
  std::uint64_t ws_publishers = 0;           // publisher connections upgraded
  std::uint64_t ws_compressed_connections = 0;  // upgrades that agreed on permessage-deflate
  std::uint64_t ws_compressed_messages = 0;     // messages that came compressed, inflated
  std::uint64_t publications_sent = 0;       // publish requests written (one per target)
  std::uint64_t publish_acks = 0;            // ... answered ok
  std::uint64_t publish_skipped = 0;         // owed while a publisher was not connected
  std::uint64_t delivered = 0;               // publications received live, first time
  std::uint64_t duplicates = 0;              // publications at or below an offset already seen
  std::uint64_t missing_gaps = 0;            // offsets skipped between two received ones
  std::uint64_t server_pings = 0;            // WebSocket pings received (answered unless dead)
  std::uint64_t presence_events = 0;         // join/leave pushes received
  std::uint64_t reconnects = 0;              // --reconnect drops that connected again
  std::uint64_t recovered = 0;               // resubscribes answered recovered: true
  std::uint64_t not_recovered = 0;           // ... recovered: false
  std::uint64_t recovered_publications = 0;  // publications that came in those replies
  // Server restarts (close 1012 "service restart", then the server's FIN):
  // not errors; the connection comes back and resubscribes with since.
  std::uint64_t ws_restart_closes = 0;             // subscribers' closes 1012
  std::uint64_t ws_restart_resubscribed = 0;       // ... that came back and got a subscribe reply
  std::uint64_t ws_restart_recovered = 0;          // ... with recovered: true
  std::uint64_t ws_publisher_restarts = 0;         // publishers' closes 1012 (they come back too)
  ReconnectStats::Series ws_restart_closes_per_s;  // subscribers' 1012s per second since start
  ReconnectStats::Series ws_restart_back_per_s;    // ... and their resubscribe replies
  std::uint64_t tls_handshakes = 0;  // --tls: handshakes completed (resumed ones included)
  std::uint64_t tls_resumed = 0;     // ... of them resumed with a ticket (--tls-resume)
  std::uint64_t unsubscribed_at_end =
      0;                    // live subscribers open at the end without a subscribe reply
  stats::Histogram rtt_us;  // write -> echo/response, from the actual send time
  stats::Histogram
      rtt_steady_us;            // rtt_us after the process's ramp ended (connect storms excluded)
  stats::Histogram latency_us;  // intended send time -> response (wrk2, no coordinated omission)
  stats::Histogram heartbeat_rtt_us;  // PING -> PONG
  stats::Histogram connect_us;        // connect() -> connected
  stats::Histogram tls_handshake_us;  // --tls: connected -> handshake done
  stats::Histogram dead_close_ms;     // last send of a dead connection -> server closed it
  stats::Histogram delivery_us;       // ws: publish request written -> publication received
  stats::Histogram ws_restart_back_ms;  // ws: close 1012 -> the resubscribe's reply
  ReconnectStats reconnect;           // --auto-reconnect (reconnect.h)

  // Adds `other` into this result. Throws std::invalid_argument if histogram
  // precisions differ.
  void merge(const LoadResult& other);

  // Lossless form for the child -> parent pipe; from_json() throws
  // std::invalid_argument on a malformed document.
  nlohmann::json to_json() const;
  static LoadResult from_json(const nlohmann::json& j);

  // The summary: counters, {p50, p90, p99, p999, max} per histogram, the
  // `dead` block with close_after_ms {min, p50, p99, max}, and whether every
  // worker's result is in it: workers_expected (the run's --processes),
  // workers_reported (results merged) and complete (reported == expected).
  // An incomplete report undercounts everything the missing workers held.
  nlohmann::json report_json(unsigned workers_expected) const;

  // ws mode's block of the report: delivered, expected, missing (gaps +
  // tail), duplicates, delivery_us, recovery counts.
  nlohmann::json ws_report() const;

  // Every worker of a run of `workers_expected` handed in its result.
  bool complete(unsigned workers_expected) const noexcept { return processes == workers_expected; }

  // The run's verdict on what it was told to expect (--expect-idle-close:
  // no live connection closed, every dead one closed on time;
  // --expect-delivery: every publication acknowledged reached every live
  // subscriber, from `report`'s "ws" block). Sets report["expectations_met"]
  // when either was asked; returns true when nothing was asked.
  bool expectations_met(bool expect_idle_close, bool expect_delivery, nlohmann::json& report) const;

  // Dead connections the run ended with unclosed.
  std::uint64_t dead_not_closed() const noexcept { return dead_count - dead_closed; }
};

// The summary's two ws lines (report_json's "ws" block) on stdout.
void print_ws_summary(const nlohmann::json& ws);

// Writes `report` (indented) to `path`; false (said on stderr) if it could not.
bool write_json_report(const std::string& path, const nlohmann::json& report);

}  // namespace heartwheel::load
