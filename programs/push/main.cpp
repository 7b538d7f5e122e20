// heartwheel-push: a push server on heartwheel. POST /publish publishes a
// push through Redis (or, delayed, stores it there) and answers 202; a
// delayed one is delivered when due by whichever node claims it; both reach
// WebSocket (/ws, heartwheel-chat's protocol) and Server-Sent Events
// (/sse?channel=c) subscribers on every node. See README.md here.
#include <heartwheel/common/log.h>
#include <heartwheel/metrics/endpoint.h>
#include <heartwheel/metrics/stat_families.h>
#include <heartwheel/metrics/worker_board.h>
#include <heartwheel/net/address.h>
#include <heartwheel/net/stats.h>
#include <heartwheel/pubsub_redis/redis_broker.h>
#include <heartwheel/runtime/serve.h>
#include <heartwheel/runtime/workers.h>
#include <heartwheel/tls/net_transport.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli_program.h"
#include "health.h"
#include "node.h"
#include "protocol.h"
#include "push_metrics.h"
#include "redis_link.h"
#include "redis_link_flags.h"
#include "reply_limits.h"
#include "server_flags.h"
#include "stats_board.h"
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
  chat::WsFlags ws;  // the WebSocket server flags heartwheel-chat shares
  std::string redis;
  chat::RedisClusterFlags redis_cluster;  // --redis-cluster, --redis-wait-replicas
  heartwheel::cli::RedisLinkFlags redis_link;  // --redis-password-file, --redis-user, --redis-tls*
  std::string send_timeout = "30s", request_timeout = "10s";
  std::string metrics_listen;
  // Redis and the delayed queue.
  std::string redis_timeout = "2s", key_prefix = "heartwheel:push:", window = "60s",
              load_interval = "1s", lease = "30s", reap_interval = "1s", takeover_grace = "2s",
              max_delay = "168h", sse_heartbeat = "15s";
  // The broker's keys and channels: heartwheel-chat's flag and default, so
  // that both programs on one Redis share channels (redis_link.h).
  std::string pubsub_prefix = chat::kDefaultPubsubPrefix;
  heartwheel::cli::ServerFlags server;
  chat::AuthFlags auth;  // tokens, channel rules, origins (programs/chat-core/auth_gate.h)
  std::string api_key_file;
  std::size_t max_delayed_per_key = 100000;
};

struct Setup {
  runtime::WorkersOptions workers;
  net::HostPort listen;
  pubsub::BusOptions bus;             // limits and channel options
  pubsub::RedisBrokerOptions broker;  // the broker: Redis, shared by every node
  chat::Config chat;
  pushsrv::NodeConfig node;
  Duration drain_timeout{};
};

void setup_sse(const Flags& f, Setup& s) {
  s.node.sse.close_slow = f.ws.slow_consumer == "close";
  // --max-reply-bytes bounds a Last-Event-ID recovery as it bounds /ws's.
  s.node.sse.max_recovery_bytes = f.ws.max_reply_bytes - chat::kReplyEnvelopeBytes;
  s.node.sse.heartbeat = parse_duration_flag("--sse-heartbeat", f.sse_heartbeat);
  if (s.node.sse.heartbeat.count() <= 0)
    throw std::invalid_argument("--sse-heartbeat must be positive");
}

void setup_redis(const Flags& f, Setup& s) {
  heartwheel::redis::ClientOptions& r = s.node.redis;
  chat::apply_redis_target(f.redis, f.redis_cluster, r);
  heartwheel::cli::apply_redis_link_flags(f.redis_link, r, "heartwheel-push");
  // While Redis is down a POST /publish waits this long in the link's
  // buffer for it to come back, then answers 503.
  r.command_timeout = parse_duration_flag("--redis-timeout", f.redis_timeout);
  if (r.command_timeout.count() <= 0)
    throw std::invalid_argument("--redis-timeout must be positive");
  r.validate();
  heartwheel::push::DelayedQueueOptions& d = s.node.delayed;
  d.key_prefix = f.key_prefix;
  d.window = parse_duration_flag("--window", f.window);
  d.load_interval = parse_duration_flag("--load-interval", f.load_interval);
  d.lease = parse_duration_flag("--lease", f.lease);
  d.reap_interval = parse_duration_flag("--reap-interval", f.reap_interval);
  d.takeover_grace = parse_duration_flag("--takeover-grace", f.takeover_grace);
  try {
    d.validate();
  } catch (const std::invalid_argument& e) {  // name the flags, not the fields
    throw std::invalid_argument(std::string(e.what()) +
                                " (--key-prefix, --window, --load-interval, --lease, "
                                "--reap-interval, --takeover-grace)");
  }
  // A durable claim is delivered once its WAIT answered (up to its timeout):
  // the lease must outlast that (push::DelayedQueue refuses it otherwise).
  if (r.wait_replicas > 0 && d.lease < 2 * r.wait_timeout)
    throw std::invalid_argument("--lease must be at least twice WAIT's timeout (" +
                                std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(r.wait_timeout).count()) +
                                " ms) with --redis-wait-replicas");
  s.node.max_delay = parse_duration_flag("--max-delay", f.max_delay);
  d.max_pending_per_owner = f.max_delayed_per_key;
}

Setup make_setup(const Flags& f) {
  Setup s;
  chat::Config& c = s.chat;
  chat::apply_ws_flags(f.ws, c);
  setup_sse(f, s);
  setup_redis(f, s);
  // Push channels are broadcasts: no join/leave events.
  chat::apply_channel_flags(f.ws, /*join_leave=*/false, s.bus);
  pubsub::RedisBrokerOptions& b = s.broker;
  b.limits = s.bus.limits;
  b.channel = s.bus.channel;
  if (b.channel.history_ttl.count() <= 0)
    throw std::invalid_argument("--history-ttl must be positive");
  b.redis = s.node.redis;
  b.key_prefix = f.pubsub_prefix;
  chat::encode_as_ws_frames(b);  // SSE streams format their own events
  b.validate();
  // A request must arrive whole within --request-timeout (a POST trickled a
  // byte at a time is closed: the body timeout alone restarts at each byte).
  // SSE streams are long responses: their handler lifts the deadline once
  // the request is in (Responder::clear_deadline); a reader that stops
  // reading is closed by the send timeout (write stall).
  c.http.request_timeout = parse_duration_flag("--request-timeout", f.request_timeout);
  if (c.http.request_timeout.count() > 0) {
    c.http.header_timeout = std::min(c.http.header_timeout, c.http.request_timeout);
    c.http.body_timeout = std::min(c.http.body_timeout, c.http.request_timeout);
  }
  c.http.send_timeout = parse_duration_flag("--send-timeout", f.send_timeout);
  c.http.max_body_bytes = f.ws.max_message_size + 4096;  // the JSON around the data: 413 beyond

  c.auth = chat::make_auth_settings(f.auth);

  c.connect_timeout = chat::connect_timeout_of(f.auth);
  if (!f.api_key_file.empty()) {
    try {
      s.node.api_key = heartwheel::auth::ApiKey::from_file(f.api_key_file);
    } catch (const std::exception& e) {
      throw std::invalid_argument(std::string("--api-key-file: ") + e.what());
    }
  }
  s.listen = chat::apply_workers_flags(f.ws, c, s.workers);
  heartwheel::cli::apply_server_flags(f.server, s.workers.server);
  s.workers.server.validate();
  s.drain_timeout = chat::drain_timeout(f.ws);
  return s;
}

void write_stats(const std::string& path, const chat::StatsBoard& chat_board,
                 const heartwheel::metrics::WorkerBoard<pushsrv::NodeStats>& board,
                 const runtime::Workers& workers, const pubsub::RedisBroker& broker) {
  if (path.empty()) return;
  const chat::WorkerStats c = chat_board.total();
  const pushsrv::NodeStats n = board.total();
  Json j;
  j["net"] = Json::parse(net::to_json(workers.total()));
  j["ws"] = Json::parse(ws::to_json(c.ws));
  j["pubsub"] = {{"hubs", Json::parse(pubsub::to_json(c.hub))},
                 {"redis", Json::parse(pubsub::to_json(broker.stats()))}};
  j["delayed"] = Json::parse(heartwheel::push::to_json(n.delayed));
  j["redis"] = Json::parse(heartwheel::redis::to_json(n.redis));
  j["redis_masters"] = Json::parse(heartwheel::redis::to_json(n.redis_masters));
  j["sse"] = {{"opened", n.sse.opened},           {"current", n.sse.current},
              {"events", n.sse.events},           {"heartbeats", n.sse.heartbeats},
              {"resumed", n.sse.resumed},         {"resets", n.sse.resets},
              {"slow_closes", n.sse.slow_closes}, {"slow_skips", n.sse.slow_skips},
              {"token_expired", n.sse.token_expired}};
  j["sse"]["recovery_cut"] = n.sse.recovery_cut;
  j["api"] = {{"publish_accepted", n.publish_accepted},
              {"publish_refused", n.publish_refused},
              {"publish_unavailable", n.publish_unavailable},
              {"publish_capped", n.publish_capped},
              {"cancels_done", n.cancels_done},
              {"cancels_missed", n.cancels_missed},
              {"delivered", n.delivered},
              {"deliver_refused", n.deliver_refused},
              {"delivered_already", n.delivered_already},
              {"unauthorized", n.publish_unauthorized},
              {"sse_refused", n.sse_refused}};
  j["ws_protocol"] = {{"connections", c.chat.chat_connections},
                      {"requests", c.chat.requests},
                      {"errors", c.chat.errors}, {"limits", c.chat.limits}};
  heartwheel::cli::write_file_atomically(path, j.dump(2) + '\n');
}

void add_flags(CLI::App& app, Flags& f) {
  chat::add_ws_flags(app, f.ws,
                     "worker threads, each with its own loop, wheel, hub, "
                     "Redis link and delayed queue (SO_REUSEPORT)");
  app.add_option("--redis", f.redis,
                 "HOST:PORT of the Redis every node shares (this or --redis-cluster is required)");
  chat::add_redis_cluster_flags(app, f.redis_cluster);
  heartwheel::cli::add_redis_link_flags(app, f.redis_link);
  app.add_option("--redis-timeout", f.redis_timeout,
                 "each Redis command's deadline; while Redis is down a publish waits this long, "
                 "then gets 503")
      ->capture_default_str();
  app.add_option("--key-prefix", f.key_prefix,
                 "prefix of the delayed queue's Redis keys (same on every node); without "
                 "--pubsub-prefix also the pub/sub keys' (KEY_PREFIX pubsub:), as before")
      ->capture_default_str();
  chat::add_pubsub_prefix_flag(app, f.pubsub_prefix,
                               "Not given but --key-prefix is: KEY_PREFIX pubsub: (the keys of "
                               "versions before this flag)");
  app.add_option("--window", f.window, "pushes due within this are loaded into the wheel ahead")
      ->capture_default_str();
  app.add_option("--load-interval", f.load_interval, "how often the loaded window is extended")
      ->capture_default_str();
  app.add_option("--lease", f.lease,
                 "a claimed push not acknowledged within this is re-queued (its node died)")
      ->capture_default_str();
  app.add_option("--reap-interval", f.reap_interval, "how often expired claims are looked for")
      ->capture_default_str();
  app.add_option("--takeover-grace", f.takeover_grace,
                 "an overdue push unclaimed this long is taken over by every node")
      ->capture_default_str();
  app.add_option("--max-delay", f.max_delay, "largest delay_ms accepted")->capture_default_str();
  app.add_option("--max-delayed-per-key", f.max_delayed_per_key,
                 "pushes of one API key (without --api-key-file: of every caller together) "
                 "stored and not yet delivered or cancelled, counted in Redis across every node; "
                 "one more: 429 limit_exceeded (0: no cap)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 40));
  app.add_option("--sse-heartbeat", f.sse_heartbeat,
                 "a ': ping' comment on every SSE stream this often")
      ->capture_default_str();
  app.add_option("--request-timeout", f.request_timeout,
                 "a request (headers and body) must arrive and be answered within this (408 or "
                 "503 and closed); SSE streams are exempt once their request is in (0: off)")
      ->capture_default_str();
  app.add_option("--send-timeout", f.send_timeout,
                 "a connection whose queued bytes make no progress this long is closed "
                 "(write_stall): a dead SSE reader")
      ->capture_default_str();
  app.add_option(
      "--metrics-listen", f.metrics_listen,
      "HOST:PORT to serve GET /metrics on (Prometheus text format, every worker "
      "merged; port 0: pick one, printed as 'metrics on HOST:PORT'); off when not given");
  heartwheel::cli::add_server_flags(app, f.server);
  chat::add_auth_flags(app, f.auth);
  app.add_option("--api-key-file", f.api_key_file,
                 "POST /publish and DELETE /publish/ID need the header 'Authorization: apikey "
                 "KEY' with the key in FILE (else 401); default: open");
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{
      "heartwheel-push: a push server. POST /publish {\"channel\":\"c\",\"data\":...} "
      "publishes a push at once (202 {\"id\",\"due_ms\",\"offset\",\"epoch\"}: in the "
      "order accepted, on every node); with \"delay_ms\":N it stores a delayed push in Redis "
      "(202 {\"id\",\"due_ms\"}), delivered in due-time order; DELETE /publish/ID cancels a "
      "delayed one not yet delivered; subscribers listen on /ws (heartwheel-chat's protocol) or "
      "GET /sse?channel=c (Server-Sent Events).\nDurations: 250ms, 2s, 5m, 1h.\n"
      "Exit status: 0 ok, 1 runtime failure, 2 usage error.",
      "heartwheel-push"};
  add_flags(app, f);
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;
  // Before --pubsub-prefix the pub/sub keys were --key-prefix + "pubsub:":
  // a deployment that set --key-prefix (e.g. one per tenant on one Redis)
  // keeps its channels apart, and its streams, unless it says otherwise.
  if (app.get_option("--key-prefix")->count() > 0 &&
      app.get_option("--pubsub-prefix")->count() == 0) {
    f.pubsub_prefix = f.key_prefix + "pubsub:";
    heartwheel::log::info(
        "note: --key-prefix without --pubsub-prefix: the pub/sub keys stay "
        "under " +
        f.pubsub_prefix +
        " (as before); heartwheel-chat shares these channels with "
        "--pubsub-prefix " +
        f.pubsub_prefix);
  }

  Setup s;
  std::optional<heartwheel::metrics::EndpointOptions> metrics_options;
  try {
    s = make_setup(f);
    if (!f.metrics_listen.empty())
      metrics_options = heartwheel::metrics::endpoint_at(f.metrics_listen);
  } catch (const std::exception& e) {
    return heartwheel::cli::usage_error(app, e.what());
  }

  return heartwheel::cli::run(app, [&] {
    pubsub::RedisBroker broker(s.broker);  // one per process: every worker's hubs attach to it
    chat::Roster roster;
    chat::StatsBoard chat_board(f.ws.workers);
    heartwheel::metrics::WorkerBoard<pushsrv::NodeStats> board(f.ws.workers);
    std::vector<pushsrv::Node*> nodes(f.ws.workers, nullptr);  // slot i: written by worker i only
    s.chat.routes = [&nodes](unsigned w, pubsub::Hub&, const heartwheel::http::Request& req,
                             heartwheel::http::Responder& r) { return nodes[w]->route(req, r); };
    s.workers.on_publish = [&board](unsigned w, const net::LoopSnapshot&, net::Handler& h) {
      board.publish(w, static_cast<pushsrv::Node&>(h).stats());
    };
    s.workers.on_finish = [](unsigned, net::Handler& h) {
      static_cast<pushsrv::Node&>(h).finish();
    };
    {
      runtime::Workers workers(
          s.workers,
          [&](unsigned index, heartwheel::LoopWheel& wheel) -> std::unique_ptr<net::Handler> {
            auto node = std::make_unique<pushsrv::Node>(index, wheel, s.node, s.chat, broker,
                                                        roster, chat_board);
            nodes[index] = node.get();
            return node;
          });
      std::unique_ptr<heartwheel::metrics::Endpoint> endpoint;
      const heartwheel::cli::SighupReload reload(  // --tls-cert: reloaded on SIGHUP
          heartwheel::tls::server_context(s.workers.server.transport.get()), "heartwheel-push");
      // /readyz: listening, not draining, Redis reachable.
      if (metrics_options)
        metrics_options->ready =
            heartwheel::cli::readiness([&broker] { return broker.stats().link.connected > 0; });
      // Every worker's hubs are gone before the broker when it returns.
      runtime::serve(
          workers,
          {.program = "heartwheel-push",
           .drain_timeout = s.drain_timeout,
           .tick_interval = f.ws.stats_json.empty() ? Duration{0} : s.chat.stats_interval,
           .tick = [&] { write_stats(f.ws.stats_json, chat_board, board, workers, broker); },
           .on_listening =
               [&](runtime::Workers&) {
                 if (metrics_options)
                   endpoint = std::make_unique<
                       heartwheel::metrics::Endpoint>(*metrics_options, [&workers, &board,
                                                                         &chat_board, &broker](
                                                                            heartwheel::metrics::
                                                                                TextWriter& out) {
                     heartwheel::metrics::write(out, workers.total());
                     const pushsrv::NodeStats n = board.total();
                     pushsrv::write_metrics(out, n);
                     chat::write_limits_metrics(out, chat_board.total().chat);  // its /ws
                     // The nodes' links (the delayed queues') beside the broker's.
                     const heartwheel::redis::LinkMetrics push[] = {
                         {"push", n.redis, n.redis_masters}};
                     chat::write_redis_metrics(out, broker.stats(), push);
                   });
                 heartwheel::cli::announce_listening(
                     s.listen.host, workers.port(), endpoint ? endpoint->address() : std::string());
               },
           // kill -USR2: the metrics listener goes to the successor too.
           .restart = {.metrics_fd = [&] { return endpoint ? endpoint->listen_fd() : -1; },
                       .on_handover = [&] { endpoint.reset(); }}});
      write_stats(f.ws.stats_json, chat_board, board, workers, broker);
      const pushsrv::NodeStats n = board.total();
      heartwheel::log::info("stopped after " + std::to_string(n.publish_accepted) +
                                " publishes accepted, " + std::to_string(n.delivered) +
                                " delivered",
                            {heartwheel::log::field("accepted", n.publish_accepted),
                             heartwheel::log::field("delivered", n.delivered)});
    }
    return 0;
  });
}
