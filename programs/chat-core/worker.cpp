// A worker's routes, its WebSocket connections' life and its counters. The
// JSON requests are in requests.cpp. See worker.h.
#include "worker.h"

#include <heartwheel/common/error.h>
#include <heartwheel/net/connection.h>

#include "client.h"
#include "control.h"
#include "protocol.h"
#include "static_files.h"

namespace chat {

namespace http = heartwheel::http;
namespace net = heartwheel::net;
namespace pubsub = heartwheel::pubsub;
namespace ws = heartwheel::ws;

namespace {

// Every connection's Client lives in its ws::Connection's allocation
// (Client::make_in; an /echo connection's only says so, Client::make_echo_in).
ws::NetHandlerOptions with_client_storage(ws::NetHandlerOptions options) {
  options.user_storage_bytes = sizeof(Client);
  return options;
}

}  // namespace

Worker::Worker(unsigned index, const Config& config, pubsub::Broker& broker, Roster& roster,
               StatsBoard& board, heartwheel::LoopWheel* wheel)
    : index_(index),
      config_(config),
      broker_(broker),
      roster_(roster),
      board_(board),
      auth_(config.auth ? std::make_unique<AuthGate>(*config.auth) : nullptr),
      wheel_(wheel),
      ws_(std::make_unique<ws::NetHandler>(with_client_storage(config.ws),
                                           static_cast<ws::Application&>(*this))),
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
  stop_control();
  proxies_.reset();
  hub_.reset();  // closes its handles; the worker's final uv_run completes the closes
}

// ---- net::Handler: every connection starts as HTTP ---------------------------

void Worker::on_open(net::Connection& conn) {
  if (!hub_) start_on_loop(conn);
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

void Worker::start_on_loop(net::Connection& conn) {
  uv_loop_t* loop = conn.loop();
  pubsub::HubOptions o;
  o.loop = loop;
  // Once per publication per worker: one frame every local subscriber shares.
  o.encode_publication = [](const pubsub::Publication& p) {
    return ws::encode_shared(ws::Opcode::text, publication_json(p));
  };
  o.encode_presence = [](const pubsub::PresenceEvent& e) {
    return ws::encode_shared(ws::Opcode::text, presence_json(e));
  };
  // Centrifugo's pushes, made only when one of its clients is on the channel
  // (Client::on_publication asks for them).
  static_assert(Client::kCentrifugeEncoding == 0);
  o.more_encodings.push_back(
      {[](const pubsub::Publication& p) {
         return ws::encode_shared(ws::Opcode::text, centrifuge_codec().publication_json(p));
       },
       [](const pubsub::PresenceEvent& e) {
         return ws::encode_shared(ws::Opcode::text, centrifuge_codec().presence_json(e));
       }});
  hub_ = std::make_unique<pubsub::Hub>(broker_, std::move(o));
  // With the server API on, its commands reach this worker's clients (every
  // node of a deployment takes --api-key-file, as its other flags).
  if (config_.api_key) start_control(conn.timers());
  if (config_.proxy) {
    if (wheel_ == nullptr) throw std::logic_error("chat::Worker: proxies need the loop's wheel");
    proxies_ = std::make_unique<Proxies>(*wheel_, *config_.proxy);
  }
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
  if (serve_api(req, r)) return;
  if (serve_static_file(req, r, config_.centrifuge_js.get())) return;
  const std::string_view path = req.path();
  const bool centrifuge = path == "/connection/websocket";
  if ((path == "/ws" || path == "/echo" || centrifuge) &&
      !origin_allowed(config_.auth.get(), req)) {
    ++stats_.errors["origin_refused"];  // cross-site WebSocket hijacking (auth_gate.h)
    r.respond(403, "this Origin may not open WebSockets here (--allowed-origin)\n");
    return;
  }
  if (path == "/ws" || centrifuge) {
    std::optional<std::string> name;
    try {  // with authentication on, the token says who you are: ?name= is ignored
      if (!authenticating()) name = name_from_query(req.query());
    } catch (const std::exception& e) {
      ++stats_.errors["bad_name"];
      r.respond(400, std::string(e.what()) + "\n");
      return;
    }
    const Codec::Kind kind = centrifuge ? Codec::Kind::centrifuge : Codec::Kind::chat;
    http::Headers forwarded;  // --proxy-http-header: kept only when the client sent them
    if (config_.proxy)
      for (const std::string& header : config_.proxy->headers)
        if (const std::string* v = req.header(header)) forwarded.push_back({header, *v});
    ws_->upgrade(req, std::move(r),
                 [this, name, kind, forwarded = std::move(forwarded)](ws::Connection& c) mutable {
                   open_chat(c, name, kind, std::move(forwarded));
                 });
  } else if (path == "/echo") {
    // With tokens required, every WebSocket must present one within the
    // connect timeout: an echo that needs none would be a way around it
    // (memory and CPU for anyone). Off then.
    if (auth_ && auth_->settings().authenticating()) {
      ++stats_.errors["echo_refused"];
      r.respond(404, "/echo is off on a server that requires tokens\n");
      return;
    }
    ws_->upgrade(req, std::move(r), [this](ws::Connection& c) {
      Client::make_echo_in(c, index_, ++next_client_);
      ++stats_.echo_connections;
    });
  } else {
    r.respond(404, "Not Found\n");
  }
}

// ---- WebSocket connections ------------------------------------------------------

// Paid once per connection (programs/chat/README.md, "Costs"): in the
// ws::Connection's own malloc chunk (user storage), 160 + 64 = 224 bytes, a
// 240-byte chunk.
static_assert(sizeof(Client) <= 64, "chat::Client grew: every byte is paid per connection");

void Worker::open_chat(ws::Connection& conn, const std::optional<std::string>& name,
                       Codec::Kind protocol, http::Headers forwarded) {
  Client* client =
      Client::make_in(conn, index_, ++next_client_, name ? std::string_view(*name) : "", protocol);
  if (!forwarded.empty()) headers_.emplace(client->key(), std::move(forwarded));
  ++stats_.chat_connections;
  if (codec_of(protocol).connect_first(authenticating())) {  // the connect comes first
    conn.net().set_timeout(deadline::connect_timeout, config_.connect_timeout);
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
  Client* client = Client::of(conn);
  if (client == nullptr) {  // /echo
    (void)(type == ws::MessageType::text ? conn.send_text(payload) : conn.send_binary(payload));
    return;
  }
  if (type == ws::MessageType::binary) {
    ++stats_.binary_frames;
    (void)conn.close(ws::kCloseUnsupportedData, client->centrifuge()
                                                    ? "this server speaks the JSON protocol"
                                                    : "the chat protocol is JSON in text frames");
    return;
  }
  const Codec& codec = codec_of(client->protocol());
  std::vector<Item> items;
  codec.read(payload, config_.max_json_depth, items);
  for (Item& item : items) {
    // A close went out (a refused connect, a bad command): the rest of the
    // frame is not acted on.
    if (!conn.is_open()) break;
    handle(*client, codec, item);
  }
}

bool Worker::send_ping(ws::Connection& conn) {
  // Centrifugo's clients expect its ping, an empty command, which they
  // answer with one (any frame is life for the pong timeout); ours, and a
  // Centrifugo client not connected yet, a WebSocket ping.
  Client* client = Client::of(conn);
  if (client == nullptr || !client->centrifuge() || !client->connected()) return false;
  (void)conn.send_text("{}");
  return true;
}

void Worker::on_close(ws::Connection& conn, const ws::CloseInfo&) {
  Client* client = Client::of(conn);
  if (client == nullptr) {  // /echo
    Client::destroy_in(conn);
    return;
  }
  // Answers still outstanding find it gone (their replies are dropped).
  if (const auto it = pending_.find(client->key()); it != pending_.end())
    it->second.client = nullptr;
  rates_.erase(client->key());
  meta_.erase(client->key());
  headers_.erase(client->key());
  roster_.remove_all(*client);
  if (hub_) hub_->unsubscribe_all(*client);  // leave events to the others
  Client::destroy_in(conn);                  // its memory is the connection's (user storage)
}

}  // namespace chat
