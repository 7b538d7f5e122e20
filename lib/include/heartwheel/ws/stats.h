// heartwheel/ws/stats.h - the counters of WebSocket connections served by a
// ws::NetHandler (heartwheel/ws/net_handler.h).
//
// One Stats per NetHandler (one per loop): plain integers updated on the loop
// thread without atomics. Read them there (NetHandler::stats()), or copy them
// there and merge() the copies of several loops (workers) and processes.
// Every connection that ends is counted once in closed_by_reason; every close
// frame sent or received once under its code; nothing a subscriber was not
// given goes uncounted (slow_consumer_skips, slow_consumer_closes,
// deliveries_dropped).
// Threads: plain values.
#pragma once

#include <heartwheel/common/metric_sink.h>
#include <heartwheel/common/stat_fields.h>
#include <heartwheel/net/close_reason.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace heartwheel::ws {

struct Stats {
  using CodeCounts = std::map<std::uint16_t, std::uint64_t>;  // close code -> frames
  // Connections.
  std::uint64_t handshakes_refused = 0;  // upgrade requests answered 400/403/405/426
  std::uint64_t opened = 0;              // connections that became WebSocket connections
  std::uint64_t current = 0;             // open now (a gauge; merged: summed)
  net::CloseReasonCounts closed_by_reason{};  // by net::CloseReason

  // Traffic.
  std::uint64_t messages_received = 0;
  std::uint64_t messages_sent = 0;  // send_text / send_binary / deliver that went out
  std::uint64_t shared_sent = 0;    // of which shared frames (deliver): written by reference

  // Heartbeat and the close handshake.
  std::uint64_t pings_sent = 0;
  std::uint64_t pongs_received = 0;
  std::uint64_t pings_received = 0;   // (answered by the session)
  // Pings whose own pong was not sent: the peer was not reading, and a
  // later ping's pong answers them (session.h, "Pongs").
  std::uint64_t pongs_folded = 0;
  // Messages that arrived after the server sent its close: not delivered.
  std::uint64_t messages_after_close = 0;
  std::uint64_t pong_timeouts = 0;    // closed: no byte within pong_timeout of a ping
  std::uint64_t close_timeouts = 0;   // closed: the peer did not finish the close handshake
  std::uint64_t abnormal_closes = 0;  // ended without a close frame from the peer (1006)
  std::uint64_t protocol_errors = 0;  // the peer broke RFC 6455 (close 1002, 1007 or 1009 sent)
  CodeCounts close_codes_sent;      // close frames we sent, by code
  CodeCounts close_codes_received;  // close frames the peers sent

  // Slow consumers (Connection::deliver, NetHandlerOptions::slow_consumer).
  std::uint64_t slow_consumer_closes = 0;  // policy close: closed with reason slow_consumer
  std::uint64_t slow_consumer_skips = 0;   // policy skip: the frame was not sent to that peer
  std::uint64_t deliveries_dropped = 0;    // deliver() on a connection already closing

  // permessage-deflate (heartwheel/ws/deflate.h). "Uncompressed" and
  // "compressed" bytes are payload bytes of the compressed messages only,
  // before and after compression, so their ratio is the one achieved; a
  // shared frame counts once per delivery, as it goes on the wire.
  std::uint64_t compression_negotiated = 0;    // connections that agreed on it
  std::uint64_t compressed_messages_sent = 0;  // with RSV1, own and shared
  std::uint64_t compressed_sent_uncompressed_bytes = 0;
  std::uint64_t compressed_sent_compressed_bytes = 0;
  std::uint64_t compressed_messages_received = 0;
  std::uint64_t compressed_received_compressed_bytes = 0;    // on the wire
  std::uint64_t compressed_received_uncompressed_bytes = 0;  // inflated
  std::uint64_t deflate_calls = 0;              // messages deflated (a shared frame: once per loop)
  std::uint64_t compression_skipped_small = 0;  // under DeflateOptions::min_size
  std::uint64_t compression_skipped_incompressible = 0;  // deflated, no smaller: sent as is
  std::uint64_t inflate_yields = 0;  // a read's inflating stopped for other connections' turns

  void merge(const Stats& other);
  // The std::uint64_t fields' table (heartwheel/common/stat_fields.h): JSON
  // keys, Prometheus families (heartwheel_ws_*) and help.
  static StatTable<Stats> fields() noexcept;
};

// One JSON object; the keys are the field names above, closed_by_reason with
// every net::CloseReason spelled as net::to_string does, close codes as
// {"1000": n, ...}.
std::string to_json(const Stats& stats);

// Appends the heartwheel_ws_* families (every family, its type, labels and
// meaning: lib/src/metrics/README.md) into any sink (metrics::write(out,
// board.total()) for Prometheus). `stats` is usually the merge of every
// loop's NetHandler::stats() (copied on each loop's thread, e.g. into a
// metrics::WorkerBoard). Every close reason and both slow-consumer policies
// are written, zeros included, so rate() works from the first scrape. Close
// codes are labels: the ones the server sent as they are (it picks them
// from a small set), the ones peers sent as they are below 3000 (RFC 6455's,
// validated on receipt) and grouped as "3xxx" and "4xxx" above (registered
// and private codes, which peers choose freely: one series each would let a
// peer grow the scrape). Throws as the sink (TextWriter: std::logic_error if
// `out` already has one of them). Threads: any (it reads a copy). Cost: ~50
// samples, a few microseconds.
void write_metrics(MetricSink& out, const Stats& stats);

}  // namespace heartwheel::ws
