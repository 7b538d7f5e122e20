// See ws_flags.h.
#include "ws_flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <stdexcept>

#include "cli_program.h"

namespace chat {

using heartwheel::cli::parse_duration_flag;
namespace ws = heartwheel::ws;

void add_ws_flags(CLI::App& app, WsFlags& f, const std::string& workers_help) {
  app.add_option("--listen", f.listen, "HOST:PORT to listen on (port 0: pick a free one)")
      ->capture_default_str();
  app.add_option("--workers", f.workers, workers_help)
      ->capture_default_str()
      ->check(CLI::Range(1u, 64u));
  app.add_option("--ping-interval", f.ping_interval,
                 "the server pings every WebSocket this often (0: no pings)")
      ->capture_default_str();
  app.add_option("--pong-timeout", f.pong_timeout,
                 "no byte from the peer this long after a ping: closed (reason pong_timeout)")
      ->capture_default_str();
  app.add_option("--close-timeout", f.close_timeout,
                 "how long a peer may take to answer our close frame")
      ->capture_default_str();
  app.add_option("--max-message-size", f.max_message_size,
                 "largest WebSocket message accepted (bigger: close 1009); also the largest "
                 "publication's data")
      ->capture_default_str();
  app.add_option("--max-json-depth", f.max_json_depth,
                 "deepest nesting of arrays and objects in a request (deeper: refused while "
                 "parsing, error too_deep)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{10000}));
  app.add_option("--max-reply-bytes", f.max_reply_bytes,
                 "largest history, presence or recovery list in one reply: history keeps the "
                 "newest that fit (\"truncated\":true), a recovery that does not fit is "
                 "\"recovered\":false")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{4096}, std::size_t{1} << 30));
  app.add_option("--max-requests-in-flight", f.max_requests_in_flight,
                 "per connection: requests waiting for their replies; more are refused "
                 "(limit_exceeded)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{100000}));
  app.add_option("--rate-limit", f.rate_limit,
                 "OP=N/s, repeatable: per connection, at most N OP requests a second (a token "
                 "bucket of N, at least 1; N may be a fraction, e.g. 0.5/s), OP one of publish, "
                 "subscribe, history, presence; more are refused (limit_exceeded). Default: " +
                     RateLimits().describe())
      ->allow_extra_args(false);
  app.add_option("--max-channels", f.max_channels,
                 "channels the in-process bus holds at once (with subscribers or history); one "
                 "more first frees the oldest channel kept only by its history, and is "
                 "limit_exceeded only when every channel has subscribers")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 40));
  app.add_option("--max-history-bytes", f.max_history_bytes,
                 "memory every channel's history holds together (in-process bus), counted as "
                 "malloc holds it (each publication's object, data, info and copy of the channel "
                 "name); past it the oldest publications of the largest histories go first")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 50));
  app.add_option("--history-size", f.history_size,
                 "publications kept per channel for recovery and history (0: none)")
      ->capture_default_str();
  app.add_option("--history-ttl", f.history_ttl, "how long each kept publication stays")
      ->capture_default_str();
  app.add_option("--slow-consumer", f.slow_consumer,
                 "a subscriber whose queue would pass --max-queued-bytes: close it (reason "
                 "slow_consumer) or skip the publication for it; both counted")
      ->capture_default_str();
  app.add_option("--max-queued-bytes", f.max_queued_bytes,
                 "per connection: bytes that may wait for a peer that does not read "
                 "(publications, replies, echoes: past it, --slow-consumer; one frame always "
                 "fits an empty queue); the connection's hard cap is this plus one frame of the "
                 "largest kind and 64 KiB (0: no limit but the 64 MiB hard cap)")
      ->capture_default_str();
  app.add_option("--drain-timeout", f.drain_timeout,
                 "on SIGTERM/SIGINT, how long connections get to finish (WebSockets: their "
                 "close handshake; a second signal closes everything at once)")
      ->capture_default_str();
  app.add_option("--tick", f.tick, "timing wheel tick (>= 1ms)")->capture_default_str();
  app.add_option("--stats-json", f.stats_json,
                 "write counters as JSON to FILE every --stats-interval and at exit");
  app.add_option("--stats-interval", f.stats_interval, "how often --stats-json is rewritten")
      ->capture_default_str();
  app.add_flag("!--no-ws-compression", f.ws_compression,
               "never agree on permessage-deflate (by default a client's offer is answered "
               "statelessly: no zlib state on idle connections, a publication compressed once for "
               "all its subscribers)");
  app.add_flag("--ws-compression-context", f.ws_compression_context,
               "keep each connection's deflate stream between the server's messages (better "
               "ratios; memory per connection, capped by --ws-compression-window-bits and "
               "-mem-level); clients are still asked to keep none");
  app.add_option("--ws-compression-min-size", f.ws_compression_min_size,
                 "messages and publications with fewer payload bytes go uncompressed")
      ->capture_default_str();
  app.add_option("--ws-compression-level", f.ws_compression_level,
                 "zlib level: 1 fastest .. 9 smallest")
      ->capture_default_str()
      ->check(CLI::Range(1, 9));
  app.add_option("--ws-compression-window-bits", f.ws_compression_window_bits,
                 "with --ws-compression-context: the largest window of a connection's deflate "
                 "stream (9..15)")
      ->capture_default_str()
      ->check(CLI::Range(9, 15));
  app.add_option("--ws-compression-mem-level", f.ws_compression_mem_level,
                 "with --ws-compression-context: zlib memLevel of a connection's deflate stream "
                 "(1..9)")
      ->capture_default_str()
      ->check(CLI::Range(1, 9));
}

void apply_ws_flags(const WsFlags& f, Config& c) {
  ws::NetHandlerOptions& w = c.ws;
  w.ping_interval = parse_duration_flag("--ping-interval", f.ping_interval);
  w.pong_timeout = parse_duration_flag("--pong-timeout", f.pong_timeout);
  w.close_timeout = parse_duration_flag("--close-timeout", f.close_timeout);
  if (f.max_message_size == 0) throw std::invalid_argument("--max-message-size must be positive");
  w.session.max_message_bytes = f.max_message_size;
  w.max_queued_bytes = f.max_queued_bytes;
  ws::DeflateOptions& d = w.handshake.deflate;
  d.enabled = f.ws_compression;
  d.context_takeover = f.ws_compression_context;
  d.min_size = f.ws_compression_min_size;
  d.level = f.ws_compression_level;
  d.max_window_bits = f.ws_compression_window_bits;
  d.mem_level = f.ws_compression_mem_level;
  // A compressed message may inflate to the message limit: the bound of one
  // read's inflating is a few of them.
  d.inflate_budget = std::max<std::size_t>(4 * f.max_message_size, std::size_t{1} << 20);
  if (f.slow_consumer == "close")
    w.slow_consumer = ws::SlowConsumerPolicy::close;
  else if (f.slow_consumer == "skip")
    w.slow_consumer = ws::SlowConsumerPolicy::skip;
  else
    throw std::invalid_argument("--slow-consumer must be close or skip, not '" + f.slow_consumer +
                                "'");
  w.validate();
  c.history_size = f.history_size;
  c.max_json_depth = f.max_json_depth;
  c.max_reply_bytes = f.max_reply_bytes;
  c.max_requests_in_flight = f.max_requests_in_flight;
  for (const std::string& r : f.rate_limit) c.rate_limits.set(r);
  c.stats_interval = parse_duration_flag("--stats-interval", f.stats_interval);
  if (c.stats_interval.count() <= 0)
    throw std::invalid_argument("--stats-interval must be positive");
}

void apply_channel_flags(const WsFlags& f, bool join_leave, heartwheel::pubsub::BusOptions& bus) {
  bus.channel.history_size = f.history_size;
  bus.channel.join_leave = join_leave;
  bus.channel.history_ttl = parse_duration_flag("--history-ttl", f.history_ttl);
  if (f.history_size > 0 && bus.channel.history_ttl.count() <= 0)
    throw std::invalid_argument("--history-ttl must be positive when --history-size is not 0");
  bus.limits.max_data_bytes = f.max_message_size;  // what fits in a message may be published
  bus.max_channels = f.max_channels;
  bus.max_history_bytes = f.max_history_bytes;
  bus.validate();
}

heartwheel::net::HostPort apply_workers_flags(const WsFlags& f, const Config& c,
                                              heartwheel::runtime::WorkersOptions& wo) {
  namespace net = heartwheel::net;
  namespace runtime = heartwheel::runtime;
  const net::HostPort listen = net::parse_host_port(f.listen);
  wo.threads = f.workers;
  wo.server.host = listen.host;
  wo.server.port = listen.port;
  wo.server.connection.idle = {};  // HTTP's timeouts, then WebSocket's heartbeat, replace it
  // Keep reading a peer whose queue is long (its pings are life); the
  // WebSocket layer keeps every message, reply and shared frame under
  // --max-queued-bytes (an empty queue always takes one frame) and holds at
  // most one pong back. The connection's hard cap follows the flag: the
  // budget, one frame of the largest kind (a publication, a reply or an SSE
  // recovery), and room for the few control frames and HTTP heads, so a
  // peer that never reads holds no more than that, whatever it sends.
  // 0 (no limit of the WebSocket layer): net's default cap, 64 MiB.
  net::WritePolicy& wp = wo.server.connection.write;
  wp.slow_reader = net::SlowReaderPolicy::close;
  wp.stall_timeout = c.http.send_timeout;
  if (f.max_queued_bytes > 0) {
    constexpr std::size_t kEnvelope = 64 * 1024;  // JSON around a frame's data, control frames
    wp.max_queued_bytes =
        f.max_queued_bytes + std::max(f.max_message_size, f.max_reply_bytes) + kEnvelope;
    wp.high_watermark = std::min(wp.high_watermark, f.max_queued_bytes);
    wp.low_watermark = std::min(wp.low_watermark, wp.high_watermark / 4);
  }
  wo.wheel.tick = parse_duration_flag("--tick", f.tick);
  if (wo.wheel.tick < std::chrono::milliseconds(1))
    throw std::invalid_argument("--tick must be at least 1ms");
  wo.publish_interval = c.stats_interval;
  return listen;
}

heartwheel::Duration drain_timeout(const WsFlags& f) {
  return parse_duration_flag("--drain-timeout", f.drain_timeout);
}

}  // namespace chat
