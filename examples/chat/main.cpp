// heartwheel-chat: a chat server on heartwheel. HTTP serves the page (GET /);
// WebSocket (/ws) speaks the JSON protocol of docs/chat-protocol.md on one
// pubsub::Bus per process and one pubsub::Hub per worker loop; /echo is a
// plain WebSocket echo. See README.md in this folder.
#include <heartwheel/net/address.h>
#include <heartwheel/net/workers.h>
#include <heartwheel/pubsub/bus.h>
#include <heartwheel/pubsub/redis_broker.h>
#include <heartwheel/ws/frame.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_program.h"
#include "protocol.h"
#include "serve_loop.h"
#include "stats_board.h"
#include "worker.h"

namespace {

using heartwheel::Duration;
using heartwheel::cli::parse_duration_flag;
using Json = nlohmann::json;
namespace net = heartwheel::net;
namespace pubsub = heartwheel::pubsub;
namespace ws = heartwheel::ws;

struct Flags {
  std::string listen = "127.0.0.1:8080";
  unsigned workers = 1;
  std::string ping_interval = "25s", pong_timeout = "8s", close_timeout = "5s", history_ttl = "5m",
              drain_timeout = "10s", tick = "10ms", stats_interval = "1s";
  std::size_t max_message_size = 64 * 1024, history_size = 100, max_queued_bytes = 1 << 20;
  std::string slow_consumer = "close";
  std::string stats_json;
  std::string redis, redis_prefix = "hw:", presence_ttl = "30s", redis_timeout = "5s";
  std::size_t redis_buffer = 1024;
  bool no_join_leave = false;
};

// Everything the flags decide, checked before anything starts.
struct Setup {
  net::WorkersOptions workers;
  net::HostPort listen;
  pubsub::BusOptions bus;
  std::optional<pubsub::RedisBrokerOptions> redis;  // --redis: in place of the Bus
  chat::Config config;
  Duration drain_timeout{};
};

Setup make_setup(const Flags& f) {
  Setup s;
  chat::Config& c = s.config;
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

  s.bus.channel.history_size = f.history_size;
  s.bus.channel.history_ttl = parse_duration_flag("--history-ttl", f.history_ttl);
  if (f.history_size > 0 && s.bus.channel.history_ttl.count() <= 0)
    throw std::invalid_argument("--history-ttl must be positive when --history-size is not 0");
  s.bus.channel.join_leave = !f.no_join_leave;
  s.bus.limits.max_data_bytes = f.max_message_size;  // what fits in a message may be published
  s.bus.validate();
  c.history_size = f.history_size;
  c.stats_interval = parse_duration_flag("--stats-interval", f.stats_interval);
  if (c.stats_interval.count() <= 0)
    throw std::invalid_argument("--stats-interval must be positive");

  if (!f.redis.empty()) {
    pubsub::RedisBrokerOptions r;
    r.limits = s.bus.limits;
    r.channel = s.bus.channel;
    if (r.channel.history_ttl.count() <= 0)
      throw std::invalid_argument("--history-ttl must be positive with --redis");
    const net::HostPort where = net::parse_host_port(f.redis);
    r.redis.connector.host = where.host;
    r.redis.connector.port = where.port;
    r.redis.command_timeout = parse_duration_flag("--redis-timeout", f.redis_timeout);
    r.redis.max_buffered = f.redis_buffer;
    r.key_prefix = f.redis_prefix;
    r.presence_ttl = parse_duration_flag("--presence-ttl", f.presence_ttl);
    // Once per publication per node: every worker's subscribers share it.
    r.encode_publication = [](const pubsub::Publication& p) {
      return ws::encode_shared(ws::Opcode::text, chat::publication_json(p));
    };
    r.encode_presence = [](const pubsub::PresenceEvent& e) {
      return ws::encode_shared(ws::Opcode::text, chat::presence_json(e));
    };
    r.validate();
    s.redis = std::move(r);
  }

  s.listen = net::parse_host_port(f.listen);
  net::WorkersOptions& wo = s.workers;
  wo.threads = f.workers;
  wo.server.host = s.listen.host;
  wo.server.port = s.listen.port;
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
  wo.server.validate();
  s.drain_timeout = parse_duration_flag("--drain-timeout", f.drain_timeout);
  return s;
}

void write_stats(const std::string& path, const chat::StatsBoard& board,
                 const net::Workers& workers, const pubsub::Bus& bus,
                 const pubsub::RedisBroker* redis, const Flags& f) {
  if (path.empty()) return;
  const chat::WorkerStats t = board.total();
  Json j;
  j["net"] = Json::parse(net::to_json(workers.total()));
  j["ws"] = Json::parse(ws::to_json(t.ws));
  j["pubsub"] = {{"hubs", Json::parse(pubsub::to_json(t.hub))},
                 {"bus", Json::parse(pubsub::to_json(bus.stats()))}};
  if (redis != nullptr) j["pubsub"]["redis"] = Json::parse(pubsub::to_json(redis->stats()));
  j["slow_consumer"] = {{"policy", f.slow_consumer},
                        {"max_queued_bytes", f.max_queued_bytes},
                        {"closes", t.ws.slow_consumer_closes},
                        {"skips", t.ws.slow_consumer_skips}};
  j["chat"] = {{"chat_connections", t.chat.chat_connections},
               {"echo_connections", t.chat.echo_connections},
               {"publications", t.chat.publications},
               {"bad_json", t.chat.bad_json},
               {"binary_frames", t.chat.binary_frames},
               {"requests", t.chat.requests},
               {"errors", t.chat.errors}};
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << j.dump(2) << '\n';
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)  // readers never see half a file
    throw std::runtime_error("cannot rename " + tmp + " to " + path);
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{
      "heartwheel-chat: a chat server. GET / is the chat page; /ws is the WebSocket endpoint of "
      "the JSON protocol (docs/chat-protocol.md; /ws?name=NAME says who you are); /echo is a "
      "WebSocket echo.\nDurations: 250ms, 2s, 5m.\n"
      "Exit status: 0 ok, 1 runtime failure, 2 usage error.",
      "heartwheel-chat"};
  app.add_option("--listen", f.listen, "HOST:PORT to listen on (port 0: pick a free one)")
      ->capture_default_str();
  app.add_option("--workers", f.workers,
                 "worker threads, each with its own loop, wheel and pub/sub hub (SO_REUSEPORT)")
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
                 "publication")
      ->capture_default_str();
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
                 "on SIGTERM/SIGINT, how long WebSockets get to finish their close handshake "
                 "(a second signal closes everything at once)")
      ->capture_default_str();
  app.add_option("--tick", f.tick, "timing wheel tick (>= 1ms)")->capture_default_str();
  app.add_option("--stats-json", f.stats_json,
                 "write counters as JSON to FILE every --stats-interval and at exit");
  app.add_option("--stats-interval", f.stats_interval, "how often --stats-json is rewritten")
      ->capture_default_str();
  app.add_flag("--no-join-leave", f.no_join_leave,
               "no join/leave pushes (presence counts are still answered): for channels with "
               "thousands of subscribers, where every join would reach every subscriber");
  app.add_option("--redis", f.redis,
                 "HOST:PORT of a Redis (7.0+) shared by several chat nodes: publications, history, "
                 "recovery and presence go through it (default: in-process only)");
  app.add_option("--redis-prefix", f.redis_prefix,
                 "prefix of every Redis key and channel this server uses")
      ->capture_default_str();
  app.add_option("--presence-ttl", f.presence_ttl,
                 "with --redis: a node's presence lease, renewed every third of it; a dead "
                 "node's clients leave the counts within it")
      ->capture_default_str();
  app.add_option("--redis-timeout", f.redis_timeout,
                 "with --redis: how long a request may wait for Redis (also while it is down) "
                 "before the client gets the error unavailable")
      ->capture_default_str();
  app.add_option("--redis-buffer", f.redis_buffer,
                 "with --redis: requests held while Redis is unreachable (beyond: unavailable at "
                 "once; 0: fail fast)")
      ->capture_default_str();
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;

  Setup s;
  try {
    s = make_setup(f);
  } catch (const std::exception& e) {
    return heartwheel::cli::usage_error(app, e.what());
  }

  return heartwheel::cli::run(app, [&] {
    pubsub::Bus bus(s.bus);  // one per process: every worker's hub attaches to it
    std::unique_ptr<pubsub::RedisBroker> redis;  // or this one, with --redis
    if (s.redis) redis = std::make_unique<pubsub::RedisBroker>(*s.redis);
    pubsub::Broker& broker = redis ? static_cast<pubsub::Broker&>(*redis) : bus;
    chat::Roster roster;
    chat::StatsBoard board(f.workers);
    {
      net::Workers workers(s.workers, [&](unsigned index) -> std::unique_ptr<net::Handler> {
        return std::make_unique<chat::Worker>(index, s.config, broker, roster, board);
      });
      workers.start();
      const bool v6 = s.listen.host.find(':') != std::string::npos;
      std::printf("listening on %s%s%s:%d\n", v6 ? "[" : "", s.listen.host.c_str(), v6 ? "]" : "",
                  workers.port());
      std::fflush(stdout);

      // Signals drain the workers (each WebSocket gets close 1001); the
      // stats file is rewritten meanwhile.
      heartwheel::cli::serve_until_signalled(
          workers,
          {.program = "heartwheel-chat",
           .drain_timeout = s.drain_timeout,
           .tick_interval = f.stats_json.empty() ? Duration{0} : s.config.stats_interval,
           .tick = [&] { write_stats(f.stats_json, board, workers, bus, redis.get(), f); }});
      workers.join();  // every worker's hub is gone before the bus
      write_stats(f.stats_json, board, workers, bus, redis.get(), f);
      const chat::WorkerStats t = board.total();
      std::fprintf(stderr, "heartwheel-chat: stopped after %llu WebSocket connections\n",
                   static_cast<unsigned long long>(t.ws.opened));
    }
    return 0;
  });
}
