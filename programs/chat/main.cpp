// heartwheel-chat: a chat server on heartwheel. HTTP serves the page (GET /);
// WebSocket (/ws) speaks the JSON protocol of docs/chat-protocol.md on one
// pubsub::Bus per process and one pubsub::Hub per worker loop; /echo is a
// plain WebSocket echo. See README.md in this folder.
#include <heartwheel/common/log.h>
#include <heartwheel/net/address.h>
#include <heartwheel/pubsub/bus.h>
#include <heartwheel/pubsub_redis/redis_broker.h>
#include <heartwheel/runtime/serve.h>
#include <heartwheel/runtime/workers.h>
#include <heartwheel/tls/net_transport.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli_program.h"
#include "production.h"
#include "protocol.h"
#include "proxy.h"
#include "redis_link.h"
#include "redis_link_flags.h"
#include "static_files.h"
#include "stats_board.h"
#include "tls_flags.h"
#include "worker.h"
#include "ws_flags.h"

namespace {

using heartwheel::Duration;
using heartwheel::cli::parse_duration_flag;
using Json = nlohmann::json;
namespace net = heartwheel::net;
namespace runtime = heartwheel::runtime;
namespace pubsub = heartwheel::pubsub;
namespace ws = heartwheel::ws;

struct Flags {
  chat::WsFlags ws;  // the WebSocket server flags heartwheel-push shares
  chat::AuthFlags auth;  // tokens, channel permissions, origins (auth_gate.h)
  std::string redis, presence_ttl = "30s", redis_timeout = "5s";
  std::string pubsub_prefix = chat::kDefaultPubsubPrefix;  // --pubsub-prefix
  std::string redis_prefix;  // --redis-prefix: the deprecated name of --pubsub-prefix
  std::size_t redis_buffer = 1024;
  chat::RedisClusterFlags redis_cluster;  // --redis-cluster, --redis-wait-replicas
  heartwheel::cli::RedisLinkFlags redis_link;  // --redis-password-file, --redis-user, --redis-tls*
  bool no_join_leave = false;
  std::string api_key_file;  // --api-key-file: the server API (programs/chat-core/server_api.cpp)
  chat::ProxyFlags proxy;    // --proxy-*: the application's backend decides (proxy.h)
  std::string centrifuge_js;     // --centrifuge-js: served at /centrifuge.js (static_files.h)
  bool uring_fanout = false;     // accepted: the default since issue 41
  bool no_uring_fanout = false;  // ConnectionOptions::batch_shared_writes off
  std::vector<std::string> history_before_subscribers;  // namespaces
};

// Everything the flags decide, checked before anything starts.
struct Setup {
  runtime::WorkersOptions workers;
  net::HostPort listen;
  pubsub::BusOptions bus;
  std::optional<pubsub::RedisBrokerOptions> redis;  // --redis(-cluster): in place of the Bus
  chat::Config config;
  Duration drain_timeout{};
};

// --history-before-subscribers: the namespaces (a channel's name up to its
// first ':', "" without one) whose publications are kept before anyone
// subscribed (pubsub::ChannelOptions::history_before_subscribers).
void apply_history_before_subscribers(const std::vector<std::string>& namespaces,
                                      pubsub::BusOptions& bus) {
  if (namespaces.empty()) return;
  if (bus.channel.history_size == 0)
    throw std::invalid_argument("--history-before-subscribers needs --history-size above 0");
  bus.channel_options = [base = bus.channel,
                         keep = std::set<std::string, std::less<>>(
                             namespaces.begin(), namespaces.end())](std::string_view channel) {
    pubsub::ChannelOptions o = base;
    const std::size_t colon = channel.find(':');
    o.history_before_subscribers = keep.contains(
        colon == std::string_view::npos ? std::string_view() : channel.substr(0, colon));
    return o;
  };
}

Setup make_setup(const Flags& f) {
  Setup s;
  chat::apply_ws_flags(f.ws, s.config);
  chat::apply_channel_flags(f.ws, !f.no_join_leave, s.bus);
  apply_history_before_subscribers(f.history_before_subscribers, s.bus);
  s.config.presence_events = s.bus.channel.join_leave;
  s.config.auth = chat::make_auth_settings(f.auth);
  s.config.connect_timeout = chat::connect_timeout_of(f.auth);
  s.config.proxy = chat::make_proxy_settings(f.proxy);
  if (!f.centrifuge_js.empty()) s.config.centrifuge_js = chat::load_centrifuge_js(f.centrifuge_js);
  if (!f.api_key_file.empty()) {
    try {
      s.config.api_key = heartwheel::auth::ApiKey::from_file(f.api_key_file);
    } catch (const std::exception& e) {
      throw std::invalid_argument(std::string("--api-key-file: ") + e.what());
    }
  }

  if (chat::redis_wanted(f.redis, f.redis_cluster)) {
    pubsub::RedisBrokerOptions r;
    r.limits = s.bus.limits;
    r.channel = s.bus.channel;
    if (r.channel.history_ttl.count() <= 0)
      throw std::invalid_argument("--history-ttl must be positive with --redis");
    chat::apply_redis_target(f.redis, f.redis_cluster, r.redis);
    heartwheel::cli::apply_redis_link_flags(f.redis_link, r.redis, "heartwheel-chat");
    r.redis.command_timeout = parse_duration_flag("--redis-timeout", f.redis_timeout);
    r.redis.max_buffered = f.redis_buffer;
    r.key_prefix = f.pubsub_prefix;
    r.presence_ttl = parse_duration_flag("--presence-ttl", f.presence_ttl);
    if (r.presence_ttl < std::chrono::milliseconds(30))
      throw std::invalid_argument("--presence-ttl must be at least 30ms");
    if (r.redis.command_timeout.count() <= 0)
      throw std::invalid_argument("--redis-timeout must be positive");
    chat::encode_as_ws_frames(r);
    r.validate();
    s.redis = std::move(r);
  }

  s.listen = chat::apply_workers_flags(f.ws, s.config, s.workers);
  if (f.uring_fanout && f.no_uring_fanout)
    throw std::invalid_argument("--uring-fanout and --no-uring-fanout contradict each other");
  s.workers.server.connection.batch_shared_writes = !f.no_uring_fanout;
  s.workers.server.validate();
  s.drain_timeout = chat::drain_timeout(f.ws);
  return s;
}

void write_stats(const std::string& path, const chat::StatsBoard& board,
                 const runtime::Workers& workers, const pubsub::Bus& bus,
                 const pubsub::RedisBroker* redis, const chat::WsFlags& f) {
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
  j["chat"] = Json::parse(chat::to_json(t.chat));
  heartwheel::cli::write_file_atomically(path, j.dump(2) + '\n');
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  chat::ProductionFlags production;  // --metrics-listen and the protection flags
  CLI::App app{
      "heartwheel-chat: a chat server. GET / is the chat page; /ws is the WebSocket endpoint of "
      "the JSON protocol (docs/chat-protocol.md; /ws?name=NAME says who you are); "
      "/connection/websocket speaks Centrifugo's client protocol v2 (JSON) to its SDKs "
      "(docs/centrifugo.md); /api/<method> is the server API (--api-key-file); /echo is a "
      "WebSocket echo.\nDurations: 250ms, 2s, 5m.\n"
      "Exit status: 0 ok, 1 runtime failure, 2 usage error.",
      "heartwheel-chat"};
  chat::add_ws_flags(
      app, f.ws, "worker threads, each with its own loop, wheel and pub/sub hub (SO_REUSEPORT)");
  chat::add_production_flags(app, production);
  chat::add_auth_flags(app, f.auth);
  app.add_option("--api-key-file", f.api_key_file,
                 "turns the server API on (Centrifugo's: POST /api/publish, broadcast, subscribe, "
                 "unsubscribe, disconnect, refresh, presence, presence_stats, history, "
                 "history_remove, channels, info, batch; docs/centrifugo.md) for callers sending "
                 "the key in FILE as X-API-Key: KEY or Authorization: apikey KEY (others: 401)");
  chat::add_proxy_flags(app, f.proxy);
  app.add_option("--centrifuge-js", f.centrifuge_js,
                 "serve FILE, npm centrifuge's browser build (node_modules/centrifuge/dist/"
                 "centrifuge.js, 5.x), at /centrifuge.js: the page at / speaks Centrifugo's "
                 "protocol through it when opened with ?protocol=centrifugo. Read once at start");
  app.add_flag("--no-join-leave", f.no_join_leave,
               "no join/leave pushes (presence counts are still answered): for channels with "
               "thousands of subscribers, where every join would reach every subscriber");
  app.add_option("--history-before-subscribers", f.history_before_subscribers,
                 "NAMESPACE (repeatable; \"\" is the default one): a publish to a channel of it "
                 "that nobody subscribed to yet starts the channel's history (for history read "
                 "before subscribing); such channels are the first freed at --max-channels. "
                 "Otherwise a publish nobody can hear is kept nowhere (offset 0). In-process bus "
                 "only (with --redis every publication is kept in Redis)");
  app.add_flag("--uring-fanout", f.uring_fanout,
               "the default (kept for old command lines): each fan-out's frames go to the "
               "subscribers in io_uring batches (256 sends per system call) where the kernel "
               "offers io_uring, else one write() each (said once on stderr); measured: "
               "docs/BENCHMARKS.md, \"The fan-out floor\"");
  app.add_flag("--no-uring-fanout", f.no_uring_fanout,
               "one write() per subscriber for each fan-out, never io_uring batches");
  app.add_option("--redis", f.redis,
                 "HOST:PORT of a Redis (7.0+) shared by several chat nodes: publications, history, "
                 "recovery and presence go through it (default: in-process only; a Redis "
                 "Cluster: --redis-cluster)");
  chat::add_redis_cluster_flags(app, f.redis_cluster);
  heartwheel::cli::add_redis_link_flags(app, f.redis_link);
  CLI::Option* pubsub_prefix = chat::add_pubsub_prefix_flag(
      app, f.pubsub_prefix, "With --redis or --redis-cluster; --redis-prefix is its old name");
  CLI::Option* redis_prefix =
      app.add_option("--redis-prefix", f.redis_prefix,
                     "deprecated: the old name of --pubsub-prefix (the same setting)")
          ->excludes(pubsub_prefix);
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
  if (redis_prefix->count() > 0) {
    heartwheel::log::warning(
        "--redis-prefix is deprecated: use --pubsub-prefix (the same setting, and "
        "heartwheel-push's name for it)");
    f.pubsub_prefix = f.redis_prefix;
  }

  Setup s;
  std::optional<heartwheel::metrics::EndpointOptions> metrics_at;
  try {
    s = make_setup(f);
    metrics_at = chat::apply_production_flags(production, s.workers.server);
    s.workers.server.validate();
  } catch (const std::exception& e) {
    return heartwheel::cli::usage_error(app, e.what());
  }

  return heartwheel::cli::run(app, [&] {
    pubsub::Bus bus(s.bus);  // one per process: every worker's hub attaches to it
    std::unique_ptr<pubsub::RedisBroker> redis;  // or this one, with --redis
    if (s.redis) redis = std::make_unique<pubsub::RedisBroker>(*s.redis);
    pubsub::Broker& broker = redis ? static_cast<pubsub::Broker&>(*redis) : bus;
    chat::Roster roster;
    chat::StatsBoard board(f.ws.workers);
    {
      runtime::Workers workers(
          s.workers,
          [&](unsigned index, heartwheel::LoopWheel& wheel) -> std::unique_ptr<net::Handler> {
            return std::make_unique<chat::Worker>(index, s.config, broker, roster, board, &wheel);
          });
      std::unique_ptr<heartwheel::metrics::Endpoint> endpoint;
      const heartwheel::cli::SighupReload reload(  // --tls-cert: reloaded on SIGHUP
          heartwheel::tls::server_context(s.workers.server.transport.get()), "heartwheel-chat");
      // Signals drain the workers (each WebSocket gets close 1001); the
      // stats file is rewritten meanwhile. Every worker's hub is gone
      // before the bus when it returns.
      runtime::serve(
          workers,
          {.program = "heartwheel-chat",
           .drain_timeout = s.drain_timeout,
           .tick_interval = f.ws.stats_json.empty() ? Duration{0} : s.config.stats_interval,
           .tick = [&] { write_stats(f.ws.stats_json, board, workers, bus, redis.get(), f.ws); },
           .on_listening =
               [&](runtime::Workers&) {
                 endpoint = chat::start_metrics(metrics_at, workers, board, bus, redis.get());
                 heartwheel::cli::announce_listening(
                     s.listen.host, workers.port(), endpoint ? endpoint->address() : std::string());
               },
           // kill -USR2: the metrics listener goes to the successor too.
           .restart = {.metrics_fd = [&] { return endpoint ? endpoint->listen_fd() : -1; },
                       .on_handover = [&] { endpoint.reset(); }}});
      write_stats(f.ws.stats_json, board, workers, bus, redis.get(), f.ws);
      const chat::WorkerStats t = board.total();
      heartwheel::log::info(
          "stopped after " + std::to_string(t.ws.opened) + " WebSocket connections",
          {heartwheel::log::field("connections", static_cast<std::uint64_t>(t.ws.opened))});
    }
    return 0;
  });
}
