// One worker of heartwheel-push: everything on one loop thread.
//
// HTTP and the WebSocket protocol are heartwheel-chat's worker (its /ws
// protocol, docs/chat-protocol.md, on the worker's pubsub::Hub); this node
// adds its routes in front (chat::Config::routes): POST /publish,
// DELETE /publish/{id}, GET /sse. It owns the worker's Redis link and its
// push::DelayedQueue: a delayed push is stored in Redis first and delivered
// when due by whichever node claims it; an immediate one is published at
// once (its offset given in Redis before the 202). Both go through the
// process's pubsub broker (the Redis broker: every node's subscribers).
#pragma once

#include <heartwheel/http/message.h>
#include <heartwheel/http/responder.h>
#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/net/handler.h>
#include <heartwheel/pubsub/broker.h>
#include <heartwheel/pubsub/hub.h>
#include <heartwheel/push/delayed_queue.h>
#include <heartwheel/redis/client.h>

#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "api.h"
#include "caller.h"
#include "push_auth.h"
#include "sse.h"
#include "worker.h"

namespace pushsrv {

// What every node shares (read-only while they run).
struct NodeConfig {
  heartwheel::redis::ClientOptions redis;
  heartwheel::push::DelayedQueueOptions delayed;
  SseOptions sse;
  heartwheel::Duration max_delay = std::chrono::hours(24 * 7);
  // --api-key-file: POST and DELETE /publish need it (push_auth.h).
  std::optional<heartwheel::auth::ApiKey> api_key;
};

// What one node counts beyond chat's counters (merged over workers).
struct NodeStats {
  heartwheel::push::DelayedQueueStats delayed{.queues = 0};
  heartwheel::redis::LinkStats redis{.links = 0};
  // --redis-cluster: each master as the nodes' links see it, by address
  // (connected: every node's connection to it is open; the rest summed).
  std::vector<heartwheel::redis::MasterStats> redis_masters;
  SseStats sse;
  std::uint64_t publish_accepted = 0;     // 202
  std::uint64_t publish_refused = 0;      // 400
  std::uint64_t publish_unavailable = 0;  // 503: Redis down or slow
  std::uint64_t publish_capped = 0;       // 429: the key's pending pushes at --max-delayed-per-key
  std::uint64_t publish_unauthorized = 0; // 401: no or wrong API key (POST and DELETE)
  std::uint64_t sse_refused = 0;          // 401/403: SSE token or channel rules
  std::uint64_t cancels_done = 0;         // 204
  std::uint64_t cancels_missed = 0;       // 404
  std::uint64_t delivered = 0;            // pushes handed to the bus
  std::uint64_t deliver_refused =
      0;  // the broker refused one (Redis unavailable): left to the lease
  // Deliveries (and immediate publishes with an idempotency_key) the broker
  // found published already: answered with that offset, not sent again.
  std::uint64_t delivered_already = 0;

  void merge(const NodeStats& o);
};

class Node final : public heartwheel::net::Handler {
 public:
  Node(unsigned index, heartwheel::LoopWheel& wheel, const NodeConfig& node,
       const chat::Config& chat, heartwheel::pubsub::Broker& broker, chat::Roster& roster,
       chat::StatsBoard& chat_board);
  ~Node() override;

  // chat::Config::routes: this node's API in front of chat's routes.
  bool route(const heartwheel::http::Request& req, heartwheel::http::Responder& r);
  // The server drained or stopped: let go of Redis so the loop can end.
  void finish();
  NodeStats stats() const;

  // net::Handler: every connection is chat's worker's (HTTP first).
  void on_open(heartwheel::net::Connection& c) override { chat_.on_open(c); }
  void on_data(heartwheel::net::Connection& c, std::string_view d) override { chat_.on_data(c, d); }
  heartwheel::net::DeadlineAction on_deadline(heartwheel::net::Connection& c,
                                              heartwheel::net::DeadlineEvent e) override {
    return chat_.on_deadline(c, e);
  }
  void on_writable(heartwheel::net::Connection& c, bool w) override { chat_.on_writable(c, w); }
  void on_eof(heartwheel::net::Connection& c) override { chat_.on_eof(c); }
  // The first drain call ends every SSE stream (a long response would hold
  // the drain up to its timeout); clients reconnect with Last-Event-ID.
  void on_drain(heartwheel::net::Connection& c) override {
    end_streams();
    chat_.on_drain(c);
  }
  void on_close(heartwheel::net::Connection& c, heartwheel::net::CloseReason r,
                std::error_code e) override {
    chat_.on_close(c, r, e);
  }

 private:
  void publish(const heartwheel::http::Request& req, heartwheel::http::Responder r);
  void publish_now(PublishRequest p, std::shared_ptr<heartwheel::http::Responder> answer);
  // centrifugo_api.cpp: POST /api/publish and /api/broadcast (`method`).
  void centrifugo_api(std::string_view method, const heartwheel::http::Request& req,
                      heartwheel::http::Responder r);
  void cancel(std::string_view id, const Caller& caller, heartwheel::http::Responder r);
  void open_sse(const heartwheel::http::Request& req, heartwheel::http::Responder r);
  void deliver(const heartwheel::push::DelayedPush& push, heartwheel::push::DeliveredCallback done);
  void end_streams() noexcept;

  const NodeConfig& config_;
  const chat::Config& chat_config_;
  heartwheel::pubsub::Broker& broker_;
  NodeStats stats_;
  // This node's own hub (besides chat's, made at the first connection):
  // delayed pushes are published through it, SSE streams subscribe on it.
  heartwheel::pubsub::Hub hub_;
  heartwheel::redis::Client redis_;
  heartwheel::push::DelayedQueue queue_;
  chat::Worker chat_;
  PushAuth auth_;
  // After chat_: destroyed before the hub they subscribe through.
  std::unordered_map<SseStream*, std::unique_ptr<SseStream>> streams_;
};

}  // namespace pushsrv
