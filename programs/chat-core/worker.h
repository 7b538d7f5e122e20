// One worker of heartwheel-chat: everything that lives on one loop thread.
//
// Every connection starts as HTTP (http::NetHandler, this worker forwards
// the net callbacks to it): GET / is the page, GET /ws and GET /echo switch
// to WebSocket (ws::NetHandler::upgrade; the connection's handler becomes
// the ws::NetHandler). A /ws connection gets a Client (a pubsub::Subscriber)
// in its user data; its JSON requests (requests.cpp) go to the worker's
// pubsub::Hub, which the process's broker (the in-process Bus, or Redis with
// --redis) feeds from every worker. The hub is
// made on the loop thread at the worker's first connection (the Workers
// factory runs before the loop exists), with a timer that copies the
// worker's counters to the StatsBoard.
#pragma once

#include <heartwheel/http/net_handler.h>
#include <heartwheel/net/handler.h>
#include <heartwheel/pubsub/bus.h>
#include <heartwheel/pubsub/hub.h>
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
#include "rate_limits.h"
#include "roster.h"
#include "stats_board.h"

namespace chat {

class Client;

// The settings every worker shares (read-only while they run).
struct Config {
  heartwheel::http::SessionOptions http;
  heartwheel::ws::NetHandlerOptions ws;
  std::size_t history_size = 0;  // the default and largest `limit` of a history request
  std::size_t max_json_depth = heartwheel::cli::kDefaultMaxJsonDepth;  // --max-json-depth: deeper requests are refused (too_deep)
  std::size_t max_reply_bytes = std::size_t{1} << 20;  // --max-reply-bytes (reply_limits.h)
  std::size_t max_requests_in_flight = 32;             // --max-requests-in-flight, per connection
  RateLimits rate_limits;                              // --rate-limit OP=N/s, per connection
  bool presence_events = true;                         // join/leave pushes (--presence-events)
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
  Worker(unsigned index, const Config& config, heartwheel::pubsub::Broker& broker, Roster& roster,
         StatsBoard& board);
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
  void start_on_loop(uv_loop_t* loop);
  void publish_stats();
  void open_chat(heartwheel::ws::Connection& conn, const std::optional<std::string>& name);

  // ws::Application
  void on_message(heartwheel::ws::Connection& conn, heartwheel::ws::MessageType type,
                  std::string& payload) override;
  void on_close(heartwheel::ws::Connection& conn, const heartwheel::ws::CloseInfo& info) override;
  // The auth slot (worker_auth.cpp); every other slot closes.
  heartwheel::net::DeadlineAction on_deadline(heartwheel::ws::Connection& conn,
                                              heartwheel::net::DeadlineEvent event) override;

  // requests.cpp: one JSON request in, one reply out, given to `reply`
  // (exactly once: at once, or when the broker answers).
  using Reply = std::function<void(std::string)>;
  void handle(Client& client, std::string_view text);
  // A reply slot in the client's order (fill_reply); an empty reply is not sent.
  Reply reserve_reply(Client& client);
  void dispatch(Client& client, const Json& id, const std::string& op, const Json& req,
                const Reply& reply);
  void subscribe(Client& client, const Json& id, const std::string& channel, const Json& req,
                 const Reply& reply);
  std::string unsubscribe(Client& client, const Json& id, const std::string& channel);
  void publish(Client& client, const Json& id, const std::string& channel, const Json& req,
               const Reply& reply);
  void presence(const Json& id, const std::string& channel, const Reply& reply);
  void history(const Json& id, const std::string& channel, const Json& req, const Reply& reply);
  std::string error(const Json& id, std::string_view code, std::string_view message);
  // reply_limits.cpp: a reply goes out under the slow-consumer rule; the bytes a
  // history/presence/recovery list may take.
  void send_reply(Client& client, const std::string& reply);
  std::size_t reply_budget() const noexcept;
  // requests.cpp: false when `client` is over its --rate-limit for `op`
  // (nothing taken); the buckets of connections whose buckets are all full
  // again are forgotten every --stats-interval (and at close).
  bool within_rate(Client& client, RateOp op);
  void forget_full_buckets(uv_loop_t* loop);

  // worker_auth.cpp: protocol version 2 (auth_gate.h).
  void connect(Client& client, std::string_view text);
  void refresh(Client& client, const Json& id, const Json& req, const Reply& reply);
  // False after answering `reply` with the denial.
  bool permitted(Client& client, const Json& id, const std::string& op,
                 const std::string& channel, const Json& req, const Reply& reply);

  // Replies go out in request order (the protocol's promise) although the
  // broker may answer a later request first (Redis). Only a client with an
  // answer outstanding has an entry, so a connection pays nothing for it.
  struct PendingReplies {
    Client* client = nullptr;  // null once the client closed: its late replies are dropped
    std::uint64_t first = 0;   // the slot of waiting.front()
    std::deque<std::optional<std::string>> waiting;
  };
  void fill_reply(std::uint64_t key, std::uint64_t slot, std::string reply);
  // The client of an entry with answers outstanding, or null if it closed.
  Client* pending_client(std::uint64_t key) const;
  std::unordered_map<std::uint64_t, PendingReplies> pending_;
  // The rate buckets of clients with a bucket not full (by Client::key()):
  // like pending_, an idle connection has no entry.
  std::unordered_map<std::uint64_t, RateBuckets> rates_;

  const unsigned index_;
  const Config& config_;
  heartwheel::pubsub::Broker& broker_;
  Roster& roster_;
  StatsBoard& board_;
  std::unique_ptr<heartwheel::pubsub::Hub> hub_;  // from the first connection on
  std::unique_ptr<AuthGate> auth_;                // config.auth set
  uv_timer_t* stats_timer_ = nullptr;             // heap: freed in its close callback
  ChatStats stats_;
  std::uint64_t next_client_ = 0;
  // Destroyed first, explicitly (~Worker): their connections' state refers
  // to the hub and to this worker.
  std::unique_ptr<heartwheel::ws::NetHandler> ws_;
  std::unique_ptr<heartwheel::http::NetHandler> http_;
};

}  // namespace chat
