// The WebSocket server flags heartwheel-chat and heartwheel-push share:
// registered in one place, checked and written into the options in one place
// (each program's README documents them).
//
//   chat::WsFlags f;
//   chat::add_ws_flags(app, f, "worker threads, each with ...");
//   ... parse ...
//   try {                                       // std::invalid_argument names the flag
//     chat::apply_ws_flags(f, config);          // config.ws, history_size, stats_interval
//     chat::apply_channel_flags(f, true, bus);  // history, join/leave, limits of channels
//     listen = chat::apply_workers_flags(f, config, workers);
//   } catch (...) { usage error }
//
// Threads: call from main() only.
#pragma once

#include <heartwheel/common/time.h>
#include <heartwheel/net/address.h>
#include <heartwheel/pubsub/bus.h>
#include <heartwheel/runtime/workers.h>

#include <cstddef>
#include <string>
#include <vector>

#include "worker.h"

namespace CLI {
class App;
}

namespace chat {

struct WsFlags {
  std::string listen = "127.0.0.1:8080";
  unsigned workers = 1;
  std::string ping_interval = "25s", pong_timeout = "8s", close_timeout = "5s", history_ttl = "5m",
              drain_timeout = "10s", tick = "10ms", stats_interval = "1s";
  std::size_t max_message_size = 64 * 1024, history_size = 100, max_queued_bytes = 1 << 20,
              max_json_depth = heartwheel::cli::kDefaultMaxJsonDepth,
              max_reply_bytes = std::size_t{1} << 20, max_requests_in_flight = 32,
              max_channels = 100000, max_history_bytes = std::size_t{256} << 20;
  std::vector<std::string> rate_limit;  // --rate-limit OP=N/s, repeatable (rate_limits.h)
  std::string slow_consumer = "close";
  std::string stats_json;
  // permessage-deflate (heartwheel/ws/deflate.h): on, stateless, by default.
  bool ws_compression = true;
  bool ws_compression_context = false;
  std::size_t ws_compression_min_size = 256;
  int ws_compression_level = 6, ws_compression_window_bits = 11, ws_compression_mem_level = 4;
};

// Registers --listen, --workers (with `workers_help`), --ping-interval,
// --pong-timeout, --close-timeout, --max-message-size, --max-json-depth,
// --max-reply-bytes, --max-requests-in-flight, --rate-limit, --max-channels,
// --max-history-bytes, --history-size,
// --history-ttl, --slow-consumer, --max-queued-bytes, --drain-timeout, --tick,
// --stats-json, --stats-interval and the compression flags (--no-ws-compression,
// --ws-compression-context, --ws-compression-min-size, --ws-compression-level,
// --ws-compression-window-bits, --ws-compression-mem-level).
void add_ws_flags(CLI::App& app, WsFlags& flags, const std::string& workers_help);

// config.ws (pings, pongs, close handshake, message size, slow consumers,
// compression),
// config.history_size, the request budgets (max_json_depth, max_reply_bytes,
// max_requests_in_flight, rate_limits) and config.stats_interval.
void apply_ws_flags(const WsFlags& flags, Config& config);

// Every channel's history (size and TTL), join/leave events, and limits (the
// largest publication is the largest message); validates the result.
void apply_channel_flags(const WsFlags& flags, bool join_leave,
                         heartwheel::pubsub::BusOptions& bus);

// The workers: threads, listen address, tick, publish interval (the stats
// interval), and the write policy of a WebSocket server: a connection that
// makes no write progress for config.http.send_timeout is closed, and the
// hard queue cap follows --max-queued-bytes (the flag, plus one frame of the
// largest kind and 64 KiB), so the slow-consumer rule acts first and no
// peer holds more. Returns the parsed --listen.
heartwheel::net::HostPort apply_workers_flags(const WsFlags& flags, const Config& config,
                                              heartwheel::runtime::WorkersOptions& workers);

// --drain-timeout.
heartwheel::Duration drain_timeout(const WsFlags& flags);

}  // namespace chat
