// A worker's routes, its WebSocket connections' life and its counters. The
// JSON requests are in requests.cpp. See worker.h.
#include "worker.h"

#include <heartwheel/common/error.h>
#include <heartwheel/net/connection.h>

#include "client.h"
#include "protocol.h"
#include "static_files.h"

namespace chat {

namespace http = heartwheel::http;
namespace net = heartwheel::net;
namespace pubsub = heartwheel::pubsub;
namespace ws = heartwheel::ws;

Worker::Worker(unsigned index, const Config& config, pubsub::Broker& broker, Roster& roster,
               StatsBoard& board)
    : index_(index),
      config_(config),
      broker_(broker),
      roster_(roster),
      board_(board),
      auth_(config.auth ? std::make_unique<AuthGate>(*config.auth) : nullptr),
      ws_(std::make_unique<ws::NetHandler>(config.ws, static_cast<ws::Application&>(*this))),
      http_(std::make_unique<http::NetHandler>(
          config.http,
          [this](const http::Request& req, http::Responder r) { route(req, std::move(r)); })) {}

Worker::~Worker() {
  // On the loop thread, after the loop ran (runtime::Workers). The last counters
  // first, while everything they come from is alive.
  publish_stats();
  http_.reset();
  ws_.reset();  // connections a destroyed server abandoned: on_close frees their clients
  if (stats_timer_ != nullptr) {
    uv_close(reinterpret_cast<uv_handle_t*>(stats_timer_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
  }
  hub_.reset();  // closes its handles; the worker's final uv_run completes the closes
}

// ---- net::Handler: every connection starts as HTTP ---------------------------

void Worker::on_open(net::Connection& conn) {
  if (!hub_) start_on_loop(conn.loop());
  http_->on_open(conn);
}
void Worker::on_data(net::Connection& conn, std::string_view data) { http_->on_data(conn, data); }
net::DeadlineAction Worker::on_deadline(net::Connection& conn, net::DeadlineEvent event) {
  return http_->on_deadline(conn, event);
}
void Worker::on_writable(net::Connection& conn, bool writable) {
  http_->on_writable(conn, writable);
}
void Worker::on_eof(net::Connection& conn) { http_->on_eof(conn); }
void Worker::on_drain(net::Connection& conn) { http_->on_drain(conn); }
void Worker::on_close(net::Connection& conn, net::CloseReason reason, std::error_code error) {
  http_->on_close(conn, reason, error);
}

void Worker::start_on_loop(uv_loop_t* loop) {
  pubsub::HubOptions o;
  o.loop = loop;
  // Once per publication per worker: one frame every local subscriber shares.
  o.encode_publication = [](const pubsub::Publication& p) {
    return ws::encode_shared(ws::Opcode::text, publication_json(p));
  };
  o.encode_presence = [](const pubsub::PresenceEvent& e) {
    return ws::encode_shared(ws::Opcode::text, presence_json(e));
  };
  if (config_.uring_fanout) {  // made here: the ring's submitter is this loop's thread
    uring_ = std::make_unique<UringFanout>();
    o.after_fan_out = [u = uring_.get()] { u->flush(); };
  }
  hub_ = std::make_unique<pubsub::Hub>(broker_, std::move(o));
  auto timer = std::make_unique<uv_timer_t>();
  heartwheel::check_uv(uv_timer_init(loop, timer.get()), "uv_timer_init");
  stats_timer_ = timer.release();  // from here on freed by its close callback
  stats_timer_->data = this;
  const auto every =
      std::max<std::uint64_t>(1, heartwheel::to_uv_millis_ceil(config_.stats_interval));
  uv_timer_start(
      stats_timer_,
      [](uv_timer_t* t) {
        auto* w = static_cast<Worker*>(t->data);
        w->forget_full_buckets(t->loop);
        w->publish_stats();
      },
      every, every);
  uv_unref(reinterpret_cast<uv_handle_t*>(stats_timer_));  // the server keeps the loop alive
}

void Worker::publish_stats() {
  WorkerStats s;
  s.has_hub = hub_ != nullptr;
  if (hub_) s.hub = hub_->stats();
  if (ws_) s.ws = ws_->stats();
  s.chat = stats_;
  board_.publish(index_, s);
}

// ---- routes -----------------------------------------------------------------

void Worker::route(const http::Request& req, http::Responder r) {
  if (config_.routes && config_.routes(index_, *hub_, req, r)) return;
  if (serve_static_file(req, r)) return;
  const std::string_view path = req.path();
  if ((path == "/ws" || path == "/echo") && !origin_allowed(config_.auth.get(), req)) {
    ++stats_.errors["origin_refused"];  // cross-site WebSocket hijacking (auth_gate.h)
    r.respond(403, "this Origin may not open WebSockets here (--allowed-origin)\n");
    return;
  }
  if (path == "/ws") {
    std::optional<std::string> name;
    try {  // with authentication on, the token says who you are: ?name= is ignored
      if (!auth_ || !auth_->settings().authenticating()) name = name_from_query(req.query());
    } catch (const std::exception& e) {
      ++stats_.errors["bad_name"];
      r.respond(400, std::string(e.what()) + "\n");
      return;
    }
    ws_->upgrade(req, std::move(r), [this, name](ws::Connection& c) { open_chat(c, name); });
  } else if (path == "/echo") {
    ws_->upgrade(req, std::move(r), [this](ws::Connection&) { ++stats_.echo_connections; });
  } else {
    r.respond(404, "Not Found\n");
  }
}

// ---- WebSocket connections ------------------------------------------------------

// Paid once per connection (programs/chat/README.md, "Costs"): a 112-byte malloc chunk.
static_assert(sizeof(Client) <= 80, "chat::Client grew: every byte is paid per connection");

void Worker::open_chat(ws::Connection& conn, const std::optional<std::string>& name) {
  auto* client = new Client(conn, index_, ++next_client_, name ? std::string_view(*name) : "");
  conn.set_user_data(client);
  ++stats_.chat_connections;
  if (auth_ && auth_->settings().authenticating()) {  // version 2: the connect comes first
    conn.net().set_timeout(deadline::connect_timeout, auth_->settings().connect_timeout);
    return;
  }
  const Json hello = {{"connect",
                       {{"client", client->id()},
                        {"name", client->name()},
                        {"worker", index_},
                        {"ping_interval_ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                                                 config_.ws.ping_interval)
                                                 .count()}}}};
  (void)conn.send_text(hello.dump());
  // Join and leave events carry the info: keep it made once. Without them
  // it is made when asked (presence replies, publications): 48 bytes less
  // per connection.
  if (config_.presence_events) client->keep_info();
}

void Worker::on_message(ws::Connection& conn, ws::MessageType type, std::string& payload) {
  auto* client = static_cast<Client*>(conn.user_data());
  if (client == nullptr) {  // /echo
    (void)(type == ws::MessageType::text ? conn.send_text(payload) : conn.send_binary(payload));
    return;
  }
  if (type == ws::MessageType::binary) {
    ++stats_.binary_frames;
    (void)conn.close(ws::kCloseUnsupportedData, "the chat protocol is JSON in text frames");
    return;
  }
  if (auth_ && auth_->settings().authenticating() && !client->connected())
    return connect(*client, payload);
  handle(*client, payload);
}

void Worker::on_close(ws::Connection& conn, const ws::CloseInfo&) {
  auto* client = static_cast<Client*>(conn.user_data());
  if (client == nullptr) return;
  conn.set_user_data(nullptr);
  // Answers still outstanding find it gone (their replies are dropped).
  if (const auto it = pending_.find(client->key()); it != pending_.end())
    it->second.client = nullptr;
  rates_.erase(client->key());
  roster_.remove_all(*client);
  if (hub_) hub_->unsubscribe_all(*client);  // leave events to the others
  delete client;
}

}  // namespace chat
