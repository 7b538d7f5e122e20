// See ws_flags.h.
#include "ws_flags.h"

#include <CLI/CLI.hpp>
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
                 "channels the in-process bus holds at once (with subscribers or history); a "
                 "publish or subscribe that needs one more: limit_exceeded")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 40));
  app.add_option("--max-history-bytes", f.max_history_bytes,
                 "data bytes of every channel's history together (in-process bus); past it the "
                 "oldest publications of the largest histories go first")
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
                 "per connection: bytes that may wait for a slow subscriber (0: no limit)")
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
}

void apply_ws_flags(const WsFlags& f, Config& c) {
  ws::NetHandlerOptions& w = c.ws;
  w.ping_interval = parse_duration_flag("--ping-interval", f.ping_interval);
  w.pong_timeout = parse_duration_flag("--pong-timeout", f.pong_timeout);
  w.close_timeout = parse_duration_flag("--close-timeout", f.close_timeout);
  if (f.max_message_size == 0) throw std::invalid_argument("--max-message-size must be positive");
  w.session.max_message_bytes = f.max_message_size;
  w.max_queued_bytes = f.max_queued_bytes;
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
  // Keep reading a peer whose queue is long (its pongs are life); the
  // slow-consumer rule bounds what publications may queue, the cap the rest.
  net::WritePolicy& wp = wo.server.connection.write;
  wp.slow_reader = net::SlowReaderPolicy::close;
  wp.stall_timeout = c.http.send_timeout;
  if (f.max_queued_bytes > wp.max_queued_bytes / 2) wp.max_queued_bytes = 2 * f.max_queued_bytes;
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
