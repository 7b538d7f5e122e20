// Private: redis::Client in cluster mode (ClusterOptions::seeds set).
//
//   table_     every node the slot map or a redirect named, and which owns
//              each slot (slot_table.h); a master gets a ClientCore link
//              (its connection: deadlines, heartbeat, backoff, write queue
//              cap) when a command first needs it, with max_buffered 0: the
//              waiting room below holds what cannot be sent
//   waiting_   the waiting room: commands accepted that no open connection
//              can take now (no map yet, their master unreachable or not
//              connected yet, a retry after CLUSTERDOWN / TRYAGAIN), in
//              order; one Alarm at the earliest of their deadlines and
//              retry times. Bounded by max_buffered / max_buffered_bytes
//              like a single link's buffer (retries go back past the bound,
//              as a single link's do).
//   source_    reads the slot map (its own connection, slot_map_source.h),
//              shared with the Subscribers that follow this client
//
// A command in flight is a Request shared with its callback on a node's
// link: the bytes are kept (one copy) until the final outcome, to be sent
// again on MOVED, ASK, a transient error, or a lost connection with retry.
#pragma once

#include <heartwheel/redis/client.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "client_core.h"
#include "client_impl.h"
#include "deferred.h"
#include "slot_map_source.h"
#include "slot_table.h"

namespace heartwheel::redis::detail {

class ClusterCore final : public ClientImpl {
 public:
  ClusterCore(LoopWheel& wheel, ClientOptions options);
  ~ClusterCore() override;

  void start() override;
  void stop() override;
  bool started() const noexcept override { return started_; }
  std::error_code command(Command command, Callback done, CommandOptions options) override;
  bool connected() const noexcept override;
  std::size_t in_flight() const noexcept override;
  std::size_t buffered() const noexcept override { return waiting_.size(); }
  void flush() override;
  LinkStats stats() const noexcept override;
  std::vector<MasterStats> masters() const override;
  const ClientOptions& options() const noexcept override { return options_; }
  std::shared_ptr<SlotMapSource> slot_map_source() const override { return source_; }

 private:
  struct Node : ClusterNode {
    std::unique_ptr<ClientCore> link;
    std::size_t waiting = 0;  // requests in the waiting room for it
    bool suspect = false;     // a command timed out there and no reply came since
  };
  struct Request {
    Command command;
    Callback done;
    TimePoint deadline = kNever;
    TimePoint not_before{};  // a retry: not sent again before this
    std::size_t bytes = 0;
    int redirects = 0;
    int retries = 0;
    bool retry = false;
    bool durable = false;
    std::string ask;  // an ASK target: sent there once, after ASKING
    Node* node = nullptr;  // waiting for this node (counted in its `waiting`)
    explicit Request(Command c) : command(std::move(c)) {}
  };
  using RequestPtr = std::shared_ptr<Request>;
  struct Outcome {
    RequestPtr request;
    std::error_code error;
    Reply reply;
  };

  // cluster_client.cpp: sending, replies, outcomes
  Node* target(const Request& r);
  bool ready(const Node* n) const noexcept;
  std::error_code send_to(Node& n, const RequestPtr& r);
  void forward(const RequestPtr& r);
  void on_reply(const RequestPtr& r, Node& from, std::error_code ec, Reply reply);
  void retry_later(const RequestPtr& r, std::error_code ec, Reply reply);
  void finish(const RequestPtr& r, std::error_code ec, Reply reply);
  void count(std::error_code ec) noexcept;
  // cluster_routing.cpp: nodes, the map, the waiting room
  void ensure_link(Node& n);
  void retire_idle_links();
  void apply(SlotMap&& map);
  void node_opened(Node& n);
  void node_lost(Node& n);
  void suspect(Node& n, bool on);
  void update_watch();
  void wait(const RequestPtr& r);
  void unwait(Request& r) noexcept;
  void pump();
  void arm_wake();

  LoopWheel& wheel_;
  ClientOptions options_;
  SlotTable<Node> table_;
  std::deque<RequestPtr> waiting_;
  std::size_t waiting_bytes_ = 0;
  Alarm wake_;
  Graveyard graveyard_;
  std::shared_ptr<SlotMapSource> source_;
  SlotMapSource::Member member_;
  bool started_ = false;
  bool pumping_ = false;
  bool pump_again_ = false;
  // The application's view: one count per command, whatever it took.
  LinkStats counts_;
};

}  // namespace heartwheel::redis::detail
