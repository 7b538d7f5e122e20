// heartwheel/net/connector.h - a client connection that reconnects.
//
// A Connector keeps ONE outgoing connection to host:port alive: it connects,
// hands the Connection to the Handler (on_open ... on_close, exactly as on a
// server), and when the connection closes or a connect attempt fails it
// tries again after an exponential backoff with jitter:
//   delay(n) = min(backoff_max, backoff_initial x multiplier^(n-1)),
//   then reduced by a random 0..jitter fraction (so a fleet of clients cut off
//   together does not come back in lockstep).
// The backoff resets once a connection opens and stays open for
// stable_after; a connection the server closes sooner (a server at its
// descriptor or connection limit accepts and closes at once, so does a proxy
// whose backend is down) counts as one more failed attempt, so a fleet of
// clients backs off from such a server instead of reconnecting every
// backoff_initial forever (docs/BENCHMARKS.md, "reconnect storm"). With a
// SlotHeartbeat (slot_heartbeat.h) in its handler the client pings a quiet
// server and finds a dead one by its pong_timeout deadline; that close then
// triggers a reconnect.
//
// Many Connectors (the load harness: thousands per loop) can share one
// options object and one NetStats through the shared_ptr constructor; then a
// Connector is about 150 bytes plus its open Connection.
//
// Threads: the loop's thread only. Lifetime: destroy on the loop thread; an
// open connection is closed without callbacks, an attempt in flight abandoned.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <system_error>

#include <uv.h>

#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/net/detail/connection_host.h>
#include <heartwheel/net/handler.h>
#include <heartwheel/net/stats.h>
#include <heartwheel/net/byte_stage.h>

namespace heartwheel::net {

struct ConnectorOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  // Local address to bind before connecting ("127.0.0.2" lets a load
  // generator use more source ports); empty = the kernel picks.
  std::string local_host;
  ConnectionOptions connection;
  Duration connect_timeout = std::chrono::seconds(5);
  bool reconnect = true;
  Duration backoff_initial = std::chrono::milliseconds(100);
  Duration backoff_max = std::chrono::seconds(30);
  double backoff_multiplier = 2.0;
  double backoff_jitter = 0.2;  // fraction of each delay removed at random, 0..1
  unsigned max_attempts = 0;    // consecutive failed attempts before giving up; 0 = never give up
  // A connection closed sooner than this after it opened counts as a failed
  // attempt (for the backoff and max_attempts); 0 = every open resets the backoff.
  Duration stable_after = std::chrono::seconds(1);
  // Called after each failed attempt with the error and the delay before the
  // next one (Duration{-1}: no next attempt). Optional. A connection whose
  // transport stage fails (a TLS handshake refused: errc::protocol_error;
  // timed out: errc::timed_out) is a failed attempt too: the handler never
  // saw it.
  std::function<void(std::error_code, Duration)> on_connect_error;
  // A transport every connection runs through (byte_stage.h): TLS
  // (heartwheel/tls/net_transport.h). Null: plain. The handler's on_open
  // comes once the transport is ready (the handshake done).
  std::shared_ptr<ByteStageFactory> transport;

  // Throws std::invalid_argument naming the bad field.
  void validate() const;
  // The delay before attempt `failures + 1`, without jitter.
  Duration backoff(unsigned failures) const noexcept;
};

class Connector final : private detail::ConnectionHost {
 public:
  // Validates the options (throws std::invalid_argument). Does not connect yet.
  Connector(LoopWheel& wheel, Handler& handler, ConnectorOptions options);
  // `shared_stats`, if given, receives this connector's counters (added to
  // what is there) instead of a set of its own; it must outlive the connector.
  Connector(LoopWheel& wheel, Handler& handler, std::shared_ptr<const ConnectorOptions> options,
            NetStats* shared_stats = nullptr);
  ~Connector();

  Connector(const Connector&) = delete;
  Connector& operator=(const Connector&) = delete;

  // Starts connecting (now, or after `delay`). No-op if already started.
  void start(Duration delay = Duration{0});
  // Closes the connection (reason local) and stops reconnecting.
  void stop();
  // Stops reconnecting (an attempt in flight or a backoff wait is
  // abandoned) but leaves an open connection open: its close will not be
  // followed by a new attempt (a pool draining a removed endpoint closes it
  // once its calls are done).
  void stop_reconnecting() noexcept;
  bool started() const noexcept { return started_; }
  // The open connection's close (whenever it comes) is not a failed attempt:
  // the next one follows after backoff_initial (jittered), even if the
  // connection was younger than stable_after. For a server that closes on
  // purpose and asks to be called back at once (WebSocket close 1012, a
  // restart: ws::Client), which stable_after would otherwise take for a
  // server at its limit. No-op without an open connection; a new connection
  // starts without it.
  void reconnect_promptly() noexcept { prompt_ = conn_ != nullptr; }

  // The open connection, or nullptr while connecting / backing off.
  Connection* connection() const noexcept { return conn_; }
  bool connected() const noexcept { return conn_ != nullptr; }
  // Consecutive failed attempts since the last successful connect.
  unsigned failures() const noexcept { return failures_; }
  // Successful connects so far.
  std::uint64_t connects() const noexcept { return connects_; }

  // This connector's counters, or the shared set it counts into.
  const NetStats& stats() const noexcept { return *stats_; }
  const ConnectorOptions& options() const noexcept { return *options_; }

 private:
  struct Attempt;
  struct RetryEntry : TimerEntry {
    RetryEntry() : TimerEntry(&fire) {}
    static void fire(TimerEntry& e);
    Connector* owner = nullptr;
  };
  const ConnectionOptions& connection_options() const noexcept override {
    return options_->connection;
  }
  NetStats& net_stats() noexcept override { return *stats_; }
  TimerService& timer_service() noexcept override { return wheel_; }
  uv_loop_t* host_loop() const noexcept override { return wheel_.loop(); }
  void connection_closed(Connection& conn) noexcept override;
  ByteStageFactory* byte_stage_factory() const noexcept override {
    return options_->transport.get();
  }

  static void on_connect(uv_connect_t* req, int status);
  void attempt();
  void abandon_attempt() noexcept;
  void attempt_failed(std::error_code ec);
  void schedule_retry();
  void on_timer();

  LoopWheel& wheel_;
  Handler& handler_;
  std::shared_ptr<const ConnectorOptions> options_;
  std::unique_ptr<NetStats> own_stats_;  // null when counting into a shared set
  NetStats* stats_;
  RetryEntry timer_;  // backoff wait, or the connect timeout while attempting
  Attempt* attempt_ = nullptr;
  Connection* conn_ = nullptr;
  std::uint64_t next_id_ = 1;
  TimePoint opened_at_{};  // when the open connection connected (stable_after)
  std::uint32_t connects_ = 0;
  unsigned failures_ = 0;
  unsigned failures_before_open_ = 0;  // failures_ when the open connection connected
  bool started_ = false;
  bool stopped_ = false;
  bool prompt_ = false;  // reconnect_promptly() on the open connection
};

}  // namespace heartwheel::net
