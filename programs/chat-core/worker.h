// One worker of heartwheel-chat: everything that lives on one loop thread.
//
// Every connection starts as HTTP (http::NetHandler, this worker forwards
// the net callbacks to it): GET / is the page, GET /ws, GET
// /connection/websocket and GET /echo switch to WebSocket
// (ws::NetHandler::upgrade; the connection's handler becomes the
// ws::NetHandler). A /ws connection (our protocol) or a
// /connection/websocket one (Centrifugo's) gets a Client (a
// pubsub::Subscriber) in its user data; its protocol's Codec (codec.h) reads
// its frames into Commands, which this one engine runs (requests.cpp,
// worker_auth.cpp) on the worker's pubsub::Hub, which the process's broker
// (the in-process Bus, or Redis with --redis) feeds from every worker. The
// hub is made on the loop thread at the worker's first connection (the
// Workers factory runs before the loop exists), with a timer that copies the
// worker's counters to the StatsBoard.
#pragma once

#include <heartwheel/auth/api_key.h>
#include <heartwheel/http/net_handler.h>
#include <heartwheel/net/handler.h>
#include <heartwheel/pubsub/bus.h>
#include <heartwheel/pubsub/hub.h>
#include <heartwheel/timer/timer_service.h>
#include <heartwheel/ws/net_handler.h>
#include <uv.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "auth_gate.h"
#include "bounded_json.h"
#include "codec.h"
#include "command.h"
#include "proxy.h"
#include "rate_limits.h"
#include "roster.h"
#include "stats_board.h"

namespace chat {

class Client;

// This process as the server API's `info` names it (made once, in main()).
struct NodeInfo {
  std::string uid;   // random, 16 hex digits: new at every start
  std::string name;  // the host's name and the process id
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};
NodeInfo make_node_info();

// Channels under "__hw:" are this program's own (the server API's control
// channel, control.cpp): clients and the API may not use them.
bool reserved_channel(std::string_view channel) noexcept;

// The settings every worker shares (read-only while they run).
struct Config {
  heartwheel::http::SessionOptions http;
  heartwheel::ws::NetHandlerOptions ws;
  std::size_t history_size = 0;  // the default and largest `limit` of a history request
  std::size_t max_json_depth = heartwheel::cli::kDefaultMaxJsonDepth;  // --max-json-depth: deeper requests are refused (too_deep)
  std::size_t max_reply_bytes = std::size_t{1} << 20;  // --max-reply-bytes (reply_limits.h)
  std::size_t max_requests_in_flight = 32;             // --max-requests-in-flight, per connection
  RateLimits rate_limits;                              // --rate-limit OP=N/s, per connection
  bool presence_events = true;   // join/leave pushes (--presence-events)
  // --connect-timeout: a client that must connect first (Centrifugo's
  // always, ours with tokens) and has not by then is closed.
  heartwheel::Duration connect_timeout = std::chrono::seconds(10);
  // --api-key-file: the server API (POST /api/<method>, server_api.cpp) is
  // on, for callers presenting this key. Unset: /api is not served.
  std::optional<heartwheel::auth::ApiKey> api_key;
  NodeInfo node = make_node_info();
  // --proxy-*: the application's backend decides connects, subscribes,
  // publishes, RPCs (proxy.h); null: none.
  std::shared_ptr<const ProxySettings> proxy;
  // --centrifuge-js: npm centrifuge's browser build, served at /centrifuge.js
  // for the page's Centrifugo mode (static_files.h); null: a 404 there.
  std::shared_ptr<const std::string> centrifuge_js;
  heartwheel::Duration stats_interval = std::chrono::seconds(1);
  // Tokens, channel permissions, origins (auth_gate.h); null: protocol v1.
  std::shared_ptr<const AuthSettings> auth;
  // Optional: routes tried before chat's own, on the worker's loop thread
  // (heartwheel-push adds its HTTP API this way). Returns true when it took
  // the request (it then answers through, or keeps, the Responder).
  std::function<bool(unsigned worker, heartwheel::pubsub::Hub& hub,
                     const heartwheel::http::Request& req, heartwheel::http::Responder& r)>
      routes;
};

class Worker final : public heartwheel::net::Handler, private heartwheel::ws::Application {
 public:
  // `wheel`: the worker loop's (runtime::Workers' LoopHandlerFactory); needed
  // for the proxies' HTTP client (config.proxy), may be null without them.
  Worker(unsigned index, const Config& config, heartwheel::pubsub::Broker& broker, Roster& roster,
         StatsBoard& board, heartwheel::LoopWheel* wheel = nullptr);
  ~Worker() override;
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // net::Handler: every connection starts as HTTP.
  void on_open(heartwheel::net::Connection& conn) override;
  void on_data(heartwheel::net::Connection& conn, std::string_view data) override;
  heartwheel::net::DeadlineAction on_deadline(heartwheel::net::Connection& conn,
                                              heartwheel::net::DeadlineEvent event) override;
  void on_writable(heartwheel::net::Connection& conn, bool writable) override;
  void on_eof(heartwheel::net::Connection& conn) override;
  void on_drain(heartwheel::net::Connection& conn) override;
  void on_close(heartwheel::net::Connection& conn, heartwheel::net::CloseReason reason,
                std::error_code error) override;

 private:
  using Json = nlohmann::json;

  void route(const heartwheel::http::Request& req, heartwheel::http::Responder r);
  void start_on_loop(heartwheel::net::Connection& conn);
  void publish_stats();
  void open_chat(heartwheel::ws::Connection& conn, const std::optional<std::string>& name,
                 Codec::Kind protocol, heartwheel::http::Headers forwarded);

  // ws::Application
  void on_message(heartwheel::ws::Connection& conn, heartwheel::ws::MessageType type,
                  std::string& payload) override;
  void on_close(heartwheel::ws::Connection& conn, const heartwheel::ws::CloseInfo& info) override;
  // The auth slot (worker_auth.cpp); every other slot closes.
  heartwheel::net::DeadlineAction on_deadline(heartwheel::ws::Connection& conn,
                                              heartwheel::net::DeadlineEvent event) override;
  // Centrifugo's clients get its ping (an empty command), ours a WebSocket one.
  bool send_ping(heartwheel::ws::Connection& conn) override;

  // requests.cpp: a frame's commands, each answered exactly once through
  // a Reply (at once, or when the broker or a backend answers), formatted by
  // the client's codec and sent in command order.
  using Reply = std::function<void(Answer)>;
  void handle(Client& client, const Codec& codec, Item& item);
  // A reply slot in the client's order for the answer to `to`.
  Reply reserve_reply(Client& client, ReplyTo to);
  void dispatch(Client& client, Command& cmd, const Reply& reply);
  void subscribe(Client& client, const Command& cmd, const Reply& reply);
  void unsubscribe(Client& client, const Command& cmd, const Reply& reply);
  void publish(Client& client, const Command& cmd, const Reply& reply);
  void presence(const Command& cmd, const Reply& reply);
  void presence_stats(const Command& cmd, const Reply& reply);
  void history(const Command& cmd, const Reply& reply);
  // reply_limits.cpp: a reply goes out under the slow-consumer rule; the bytes a
  // history/presence/recovery list may take.
  void send_reply(Client& client, const Response& response);
  std::size_t reply_budget() const noexcept;
  // requests.cpp: false when `client` is over its --rate-limit for `op`
  // (nothing taken); the buckets of connections whose buckets are all full
  // again are forgotten every --stats-interval (and at close).
  bool within_rate(Client& client, RateOp op);
  void forget_full_buckets(uv_loop_t* loop);

  // worker_auth.cpp: the connect (a token, anonymous, or the connect proxy),
  // refresh and channel tokens, and the permission checks.
  void connect(Client& client, const Command& cmd, const Reply& reply);
  void refresh(Client& client, const Command& cmd, const Reply& reply);
  void sub_refresh(Client& client, const Command& cmd, const Reply& reply);
  // Lets `client` in as `user` with presence `info`, its connection living
  // `left` more (nullopt: no expiry), and subscribes it to `channels` (no
  // replies of their own in our protocol; subscribe pushes in Centrifugo's).
  void admit(Client& client, const Command& cmd, const Reply& reply, std::string_view user,
             std::string info, std::optional<heartwheel::Duration> left,
             std::optional<heartwheel::Duration> ttl, const std::vector<std::string>& channels,
             std::string data);
  // The policy's refusal of `cmd` on its channel, if any.
  std::optional<Failure> refused(Client& client, const Command& cmd);
  bool authenticating() const noexcept { return auth_ && auth_->settings().authenticating(); }
  // Clients have users: a token says who they are, or the connect proxy.
  bool identified() const noexcept {
    return authenticating() || (config_.proxy && config_.proxy->connect);
  }

  // proxy_calls.cpp: the backend decides (proxy.h).
  Json proxy_request(const Client& client) const;
  const heartwheel::http::Headers& forwarded_headers(const Client& client) const;
  void proxy_connect(Client& client, const Command& cmd, const Reply& reply);
  void proxy_refresh(Client& client);
  void proxy_subscribe(Client& client, const Command& cmd, const Reply& reply);
  void proxy_publish(Client& client, const Command& cmd, const Reply& reply);
  void proxy_rpc(Client& client, const Command& cmd, const Reply& reply);
  void proxy_sub_refresh(Client& client, const Command& cmd, const Reply& reply);
  bool proxying(const std::optional<ProxyTarget> ProxySettings::*which) const noexcept {
    return proxies_ && (proxies_->settings().*which).has_value();
  }

  // server_api.cpp: POST /api/<method> (true when the path was the API's).
  using ApiDone = std::function<void(Json reply)>;  // {"result":..} or {"error":..}
  bool serve_api(const heartwheel::http::Request& req, heartwheel::http::Responder& r);
  void call_api(const std::string& method, const Json& body, ApiDone done);
  void api_publish(const Json& body, ApiDone done);
  void api_broadcast(const Json& body, ApiDone done);
  void api_history(const Json& body, ApiDone done);
  void api_batch(const Json& body, ApiDone done);

  // control.cpp: commands and surveys for every worker of every node.
  class Control;
  struct Survey;
  void start_control(heartwheel::TimerService& timers);
  void stop_control() noexcept;
  void on_control(const heartwheel::pubsub::Publication& p);
  void act_on_clients(const std::string& op, const Json& command);
  // Who a client is for the API's `user`: its token's sub, or without
  // tokens its name.
  std::string identity(const Client& client) const;
  void answer_survey(const Json& question);
  void broadcast_control(Json command, std::function<void(std::error_code)> done);
  void survey(Json question, std::function<void(std::vector<Json>)> done);
  void finish_survey(std::string id);

  // Replies go out in request order (the protocol's promise) although the
  // broker may answer a later request first (Redis). Only a client with an
  // answer outstanding has an entry, so a connection pays nothing for it.
  struct PendingReplies {
    Client* client = nullptr;  // null once the client closed: its late replies are dropped
    std::uint64_t first = 0;   // the slot of waiting.front()
    std::deque<std::optional<Response>> waiting;
  };
  void fill_reply(std::uint64_t key, std::uint64_t slot, Response reply);
  // The client of an entry with answers outstanding, or null if it closed.
  Client* pending_client(std::uint64_t key) const;
  std::unordered_map<std::uint64_t, PendingReplies> pending_;
  // The rate buckets of clients with a bucket not full (by Client::key()):
  // like pending_, an idle connection has no entry.
  std::unordered_map<std::uint64_t, RateBuckets> rates_;
  // A connection token's `meta` (JSON text), sent with its proxy calls: only
  // connections whose token had one have an entry.
  std::unordered_map<std::uint64_t, std::string> meta_;
  // The handshake headers --proxy-http-header names, of connections that
  // sent any: forwarded with their proxy calls.
  std::unordered_map<std::uint64_t, heartwheel::http::Headers> headers_;

  const unsigned index_;
  const Config& config_;
  heartwheel::pubsub::Broker& broker_;
  Roster& roster_;
  StatsBoard& board_;
  std::unique_ptr<heartwheel::pubsub::Hub> hub_;  // from the first connection on
  std::unique_ptr<AuthGate> auth_;                // config.auth set
  heartwheel::TimerService* timers_ = nullptr;    // the loop's wheel, from the first connection
  heartwheel::LoopWheel* wheel_;                  // may be null (no proxies then)
  std::unique_ptr<Proxies> proxies_;              // config.proxy: made on the loop
  std::unique_ptr<Control> control_;              // with the hub
  std::unordered_map<std::string, std::unique_ptr<Survey>> surveys_;
  std::uint64_t next_survey_ = 0;
  uv_timer_t* stats_timer_ = nullptr;             // heap: freed in its close callback
  ChatStats stats_;
  std::uint64_t next_client_ = 0;
  // Destroyed first, explicitly (~Worker): their connections' state refers
  // to the hub and to this worker.
  std::unique_ptr<heartwheel::ws::NetHandler> ws_;
  std::unique_ptr<heartwheel::http::NetHandler> http_;
};

}  // namespace chat
