// heartwheel/net/pool.h - the client side: connections to several servers,
// kept alive, checked by heartbeats, balanced, and taken out of use while a
// server is sick.
//
// What it is
//   A Pool keeps `connections_per_endpoint` connections to every endpoint
//   ("HOST:PORT") of its list. Each connection is a net::Connector (connect
//   timeout, reconnect with exponential backoff and jitter, connector.h)
//   whose handler is the pool's: it passes every callback on to the
//   protocol's net::Handler (rpc::NetHandler, http::Client's, ...), and
//   keeps for the pool what the pool needs:
//   - a heartbeat per connection (when PoolOptions::ping is set): the rule
//     of net::SlotHeartbeat (slot_heartbeat.h) on the connection's own ping
//     and pong_timeout slots, behind its one wheel entry, the pings being
//     the protocol's bytes (PoolOptions::ping). A peer silent for the
//     heartbeat's timeout is closed (pong_timeout) and reconnected;
//   - the calls in flight on it (acquire() / release()), for the picker
//     and for draining;
//   - the endpoint's health (pool_health.h): consecutive failed or timed-out
//     calls, a heartbeat timeout, or a failed probe eject it for a time that
//     grows with repeats (capped share of the endpoints at once), and a
//     probe re-admits it.
//   A call goes: acquire() picks an endpoint (picker.h: p2c by default)
//   among those that may take it and, there, the open connection with the
//   fewest calls in flight; the protocol sends on it; release() tells the
//   pool how it ended (ok, failed, timed out), which feeds the health.
//
// The list is replaceable at run time (set_endpoints): an endpoint added
// warms up (it is picked once one of its connections is open), one removed
// drains (never picked again; each of its connections closes when its calls
// are done, all of them after drain_timeout at the latest; then it is gone).
//
// Multiplexing or not: max_calls_per_connection 0 lets any number of calls
// share a connection (RPC with ids); 1 makes a connection carry one call at
// a time (HTTP/1.1 keep-alive): acquire() then only hands out idle
// connections and says limit_reached when every one is busy.
//
// Errors: acquire() returns nullptr and
//   errc::unavailable   no endpoint may take a call: none has an open
//                       connection (warming, down, backing off), or every
//                       one is ejected; errc::closed after stop()
//   errc::limit_reached every open connection of the endpoints that may take
//                       calls carries max_calls_per_connection already
// set_endpoints and the constructor throw std::invalid_argument for bad
// options or addresses (numeric "HOST:PORT", "localhost" read as 127.0.0.1).
//
// Cost per connection: sizeof(PooledConnection) (the Connector, the
// heartbeat's stamps, the count of calls, a back pointer: about 200 bytes;
// tests/unit/memory_budget_test.cpp prints it) besides the open Connection;
// no wheel entry beyond the Connector's (its backoff and connect timeout)
// and the Connection's. Per endpoint: its options, counters and one wheel
// entry (ejection, probe or drain time). acquire() is O(endpoints +
// connections of the endpoint picked); release() O(1).
//
// Ownership and lifetime: the pool owns its connectors; the protocol handler
// is borrowed and must outlive the pool (destroy the pool first: its open
// connections are then abandoned without on_close, as a destroyed Connector
// does; call stop() and let the loop run first to close them politely).
// Threads: the loop's thread only.
// Re-entrancy: the hooks (on_available, on_state_change, on_connect_error)
//   and the protocol's callbacks may call acquire() and release(); they must
//   not call set_endpoints() or destroy the pool.
#pragma once

#include <heartwheel/net/connection.h>
#include <heartwheel/net/connector.h>
#include <heartwheel/net/handler.h>
#include <heartwheel/net/heartbeat.h>
#include <heartwheel/net/picker.h>
#include <heartwheel/net/pool_health.h>
#include <heartwheel/net/pool_stats.h>
#include <heartwheel/net/slot_heartbeat.h>
#include <heartwheel/net/stats.h>
#include <heartwheel/timer/loop_wheel.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <vector>

namespace heartwheel::net {

// How a call acquired from the pool ended (release()).
enum class CallOutcome : std::uint8_t {
  ok,         // answered (whatever the answer said, unless the protocol counts it a failure)
  failed,     // the connection failed under it, or the protocol judged the answer a failure
  timed_out,  // its deadline passed
  cancelled,  // never sent, or given up by the caller: not the endpoint's fault, not counted
};

struct PoolOptions {
  // Every connection's connector options but host and port (each
  // endpoint's): connect timeout, backoff, jitter, stable_after, local
  // address, ConnectionOptions, and the transport of every endpoint unless
  // endpoint_transport is set.
  ConnectorOptions connector;
  // The transport of the connections to `address` (the endpoint as given,
  // "localhost:443"): TLS naming that server, e.g.
  // tls::client_transport(context, "localhost"); null: plain. Called when
  // the endpoint is added.
  std::function<std::shared_ptr<ByteStageFactory>(const std::string& address)> endpoint_transport;
  std::size_t connections_per_endpoint = 1;
  // Calls one connection carries at once; 0 = no limit (see above).
  std::uint32_t max_calls_per_connection = 0;
  // The protocol's ping: write one on `conn` (any answer will do: the pool
  // counts every byte read as life). Returns false if it could not. Empty:
  // no heartbeats, and probes are trial calls.
  std::function<bool(Connection& conn)> ping;
  // The heartbeat's numbers (heartbeat.h), when `ping` is set; interval 0
  // switches heartbeats off (probes still ping).
  HeartbeatConfig heartbeat;
  OutlierOptions outlier;
  Balance balance = Balance::p2c;
  // Overrides `balance` when set: the pool's picker.
  std::function<std::unique_ptr<Picker>()> make_picker;
  // How long a removed endpoint's calls may take before its connections
  // are closed under them.
  Duration drain_timeout = std::chrono::seconds(30);

  // A connection may take a call now that could not before: one opened on
  // an endpoint that may be picked, an endpoint re-admitted or probing with
  // a trial free. (A protocol with calls waiting tries again from here.)
  std::function<void()> on_available;
  // An endpoint changed state (info.state is the new one).
  std::function<void(const EndpointInfo& info, EndpointState from)> on_state_change;
  // A connect attempt to `address` failed; `next` is the delay before the
  // connection's next attempt (Duration{-1}: none).
  std::function<void(const std::string& address, std::error_code error, Duration next)>
      on_connect_error;

  // Throws std::invalid_argument naming the bad field (the connector's,
  // heartbeat's and outlier options' too).
  void validate() const;
};

class Pool;
namespace detail {
struct PoolEndpoint;  // lib/src/net/pool_endpoint.h
}

// One connection slot of a pool: its Connector and what the pool keeps for
// it. What acquire() hands out and release() takes back.
class PooledConnection final : private Handler {
 public:
  PooledConnection(const PooledConnection&) = delete;
  PooledConnection& operator=(const PooledConnection&) = delete;
  ~PooledConnection() override;

  // The open connection, or nullptr (connecting, backing off, closing).
  Connection* connection() const noexcept;
  // Calls acquired on it and not released.
  std::uint32_t in_flight() const noexcept { return in_flight_; }
  // Its endpoint's address ("HOST:PORT" as given) and id.
  const std::string& address() const noexcept;
  std::size_t endpoint_id() const noexcept;
  const Connector& connector() const noexcept { return connector_; }
  // The slot that made `conn` (a connection of a pool whose handler the
  // protocol did not replace), else nullptr.
  static PooledConnection* of(const Connection& conn) noexcept;

 private:
  friend class Pool;
  using Endpoint = detail::PoolEndpoint;
  PooledConnection(Pool& pool, Endpoint& endpoint, std::shared_ptr<const ConnectorOptions> options);

  // Handler: each one passed on to the protocol's handler.
  void on_open(Connection& conn) override;
  void on_data(Connection& conn, std::string_view data) override;
  DeadlineAction on_deadline(Connection& conn, DeadlineEvent event) override;
  void on_writable(Connection& conn, bool writable) override;
  void on_eof(Connection& conn) override;
  void on_drain(Connection& conn) override;
  void on_close(Connection& conn, CloseReason reason, std::error_code error) override;

  Pool* pool_;
  Endpoint* endpoint_;
  Connector connector_;
  Connection* conn_ = nullptr;  // from on_open to on_close
  SlotHeartbeat heartbeat_;     // stamps, while the pool's heartbeat runs
  std::uint32_t in_flight_ = 0;
};

class Pool {
 public:
  // Validates `options` (std::invalid_argument). No endpoint yet, nothing
  // started.
  Pool(LoopWheel& wheel, Handler& protocol, PoolOptions options);
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // Makes `addresses` the pool's list: new ones are added (and connect, if
  // started), missing ones drain. Validates every address first and changes
  // nothing if one is bad or listed twice (std::invalid_argument).
  void set_endpoints(std::span<const std::string> addresses);
  // Connects every endpoint's connections. No-op if started.
  void start();
  // Closes every connection (reason local) and stops reconnecting; the
  // protocol fails their calls (its on_close). acquire() says closed after.
  void stop();
  bool started() const noexcept { return started_; }

  // A connection for one call (see the header comment). On success the
  // call counts as in flight on it until release(); returns nullptr with
  // `error` set otherwise.
  PooledConnection* acquire(std::error_code& error);
  // The call ended. Every acquire() that succeeded gets exactly one.
  void release(PooledConnection& lease, CallOutcome outcome) noexcept;
  // True when acquire() would find a connection now.
  bool available() const noexcept;
  // True when no endpoint (draining ones aside) has an open connection and
  // every connection has failed its latest attempt since it last opened:
  // every server is refusing or unreachable now (a caller with requests
  // waiting may fail them with the connect error instead of waiting out
  // their deadlines). True without endpoints.
  bool down() const noexcept;

  // Every endpoint (those draining too), in the order added.
  std::vector<EndpointInfo> endpoints() const;
  // Every endpoint's counters summed.
  EndpointStats totals() const;
  // Open connections over every endpoint.
  std::size_t open_connections() const noexcept;
  // Every connection's net counters (one set for the pool).
  const NetStats& net_stats() const noexcept { return net_stats_; }
  const PoolOptions& options() const noexcept { return options_; }
  LoopWheel& wheel() const noexcept { return wheel_; }
  Handler& protocol() const noexcept { return protocol_; }

 private:
  friend class PooledConnection;
  friend struct detail::PoolEndpoint;
  using Endpoint = detail::PoolEndpoint;
  struct Sweep;

  Endpoint& add(const std::string& address);
  void drain(Endpoint& e);
  void start_endpoint(Endpoint& e);
  void set_state(Endpoint& e, EndpointState from);
  bool try_eject(Endpoint& e);
  void begin_probe(Endpoint& e);
  void send_probe(Endpoint& e);
  void on_endpoint_timer(Endpoint& e);
  void sweep() noexcept;
  void schedule_sweep() noexcept;
  bool heartbeats_on() const noexcept {
    return options_.ping && options_.heartbeat.interval.count() > 0;
  }
  // Events from the connections.
  void opened(PooledConnection& m);
  void read(PooledConnection& m);
  void closed(PooledConnection& m, CloseReason reason);
  void connect_failed(Endpoint& e, std::error_code ec, Duration next);
  void failure(Endpoint& e);
  void notify_available();

  LoopWheel& wheel_;
  Handler& protocol_;
  PoolOptions options_;
  std::unique_ptr<Picker> picker_;
  NetStats net_stats_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;  // in the order added
  std::vector<EndpointLoad> candidates_;              // acquire()'s scratch
  std::vector<Endpoint*> candidate_endpoints_;
  std::unique_ptr<Sweep> sweep_;
  std::size_t next_id_ = 0;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace heartwheel::net
