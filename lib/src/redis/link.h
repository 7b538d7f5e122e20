// Private: what a Client and a Subscriber share - one connection speaking
// RESP2: the reply reader, the AUTH and setup commands, and the batch of
// bytes written once per loop iteration (a uv_prepare_t, as rpc::NetHandler
// does). The two kinds of link derive from it and get replies, ping times
// and connection events through the hooks below.
//
// The connection itself is a net::Pool's of one endpoint and one connection
// (heartwheel/net/pool.h): its Connector (connect timeout, reconnect with
// backoff and jitter) and its heartbeat on the ping / pong_timeout slots
// (net::SlotHeartbeat's rule; the pings are Redis PING commands, sent by
// send_ping) are the pool's, the same code every client connection of the
// library runs. A pool of one endpoint never ejects it
// (net/pool_health.h), so a Redis that fails stays the one the link
// reconnects to.
#pragma once

#include <heartwheel/net/pool.h>
#include <heartwheel/redis/link_options.h>
#include <heartwheel/redis/reader.h>
#include <heartwheel/redis/stats.h>
#include <heartwheel/timer/loop_wheel.h>
#include <uv.h>

#include <string>
#include <string_view>

namespace heartwheel::redis::detail {

// Points `o` (a node's copy of the link's options) at `address` (HOST:PORT):
// connector.host and port, and the node's transport when node_transport is
// set. Throws std::invalid_argument for an address the connector cannot take.
void aim_at(LinkOptions& o, const std::string& address);

class Link : private net::Handler {
 public:
  // Validates `options` (std::invalid_argument).
  Link(LoopWheel& wheel, const LinkOptions& options);
  ~Link() override;
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  void start_link() { pool_.start(); }
  // Closes the connection (CloseReason::local; link_closed follows on a
  // later iteration) and stops reconnecting.
  void stop_link() { pool_.stop(); }
  bool link_started() const noexcept { return pool_.started(); }

  // The open connection; null while connecting, backing off or closing.
  net::Connection* connection() const noexcept {
    return conn_ && !conn_->closing() ? conn_ : nullptr;
  }
  // Appends `bytes` to the batch. Precondition: connection() is set.
  void send(std::string_view bytes);
  // Writes the batch now.
  void flush();
  // Bytes of this link not yet taken by the kernel: the batch and the
  // connection's write queue.
  std::size_t unsent_bytes() const noexcept;

  LoopWheel& wheel() const noexcept { return wheel_; }
  const LinkOptions& link_options() const noexcept { return options_; }
  // The connection counters; gauges filled in.
  LinkStats link_stats() const noexcept;

 protected:
  // A connection opened; the setup commands are in the batch.
  virtual void link_opened(net::Connection& conn) = 0;
  // A reply (after the setup replies). The connection may be closed from here.
  virtual void link_reply(net::Connection& conn, Reply&& reply) = 0;
  // The connection closed; connection() is already null.
  virtual void link_closed(net::CloseReason reason, std::error_code error) = 0;
  // The heartbeat wants a PING sent now (the pool's PoolOptions::ping).
  virtual void send_ping(net::Connection& conn) = 0;
  // A slot the link does not handle itself (request_timeout). Default: close.
  virtual net::DeadlineAction link_deadline(net::Connection& conn, net::DeadlineEvent event);

  // Runs an application callback; an exception from it is counted and
  // swallowed, so none crosses the loop (or leaves a half-done update).
  template <class F>
  void guard(F&& f) noexcept {
    try {
      f();
    } catch (...) {
      ++stats_.callback_exceptions;
    }
  }
  void report_error(std::error_code error, std::string_view detail) noexcept;

  LinkStats stats_;

 private:
  void on_open(net::Connection& conn) override;
  void on_data(net::Connection& conn, std::string_view data) override;
  net::DeadlineAction on_deadline(net::Connection& conn, net::DeadlineEvent event) override;
  void on_close(net::Connection& conn, net::CloseReason reason, std::error_code error) override;
  void close_for_protocol_error(net::Connection& conn, std::error_code error);
  // Redis refused the AUTH or wants one: counted, reported, the connection
  // closed (the connector retries after its backoff).
  void refuse_auth(net::Connection& conn, std::string_view reason);
  void close_prepare() noexcept;
  net::PoolOptions pool_options();

  LoopWheel& wheel_;
  LinkOptions options_;
  ReplyReader reader_;
  net::Pool pool_;                   // one endpoint, one connection; its handler is this link
  std::string out_;                  // the batch
  uv_prepare_t* prepare_ = nullptr;  // writes the batch before the loop polls
  net::Connection* conn_ = nullptr;  // from on_open to on_close
  std::string auth_;                 // the AUTH command's bytes; empty: no password
  bool auth_pending_ = false;        // the AUTH's reply is still to come on this connection
  std::size_t setup_left_ = 0;       // setup replies still to come on this connection
};

}  // namespace heartwheel::redis::detail
