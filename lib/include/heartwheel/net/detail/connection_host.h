// heartwheel/net/detail/connection_host.h - what a Connection needs from the
// object that made it. Internal to the library: Server, Connector and
// testing::Host derive from it (privately); applications never do, and need
// nothing here.
//
// A host makes its connections (the Connection constructor is private to
// this class), opens them once their socket is accepted or connected, counts
// them in its NetStats, deletes them when they finished closing, and keeps
// its per-connection fields in them (an intrusive list, an activity stamp,
// a per-address handle: no allocation per connection). Every forwarder below
// is inline, so the I/O path pays no call and no pointer more than a
// Connection reading its host's fields directly would.
// Threads: the loop thread of the host's connections.
#pragma once

#include <heartwheel/net/close_reason.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/net/stats.h>
#include <heartwheel/timer/timer_service.h>
#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace heartwheel::net::detail {

class EdgeReader;

class ConnectionHost {
 public:
  virtual const ConnectionOptions& connection_options() const noexcept = 0;
  virtual NetStats& net_stats() noexcept = 0;
  virtual TimerService& timer_service() noexcept = 0;
  virtual uv_loop_t* host_loop() const noexcept = 0;
  // The connection finished closing (on_close ran). The host unlinks it and
  // deletes it.
  virtual void connection_closed(Connection& conn) noexcept = 0;
  // A connection ended its request (Connection::end_request); drain uses it.
  virtual void request_ended(Connection& /*conn*/) noexcept {}
  // True while the host drains (Server::drain).
  virtual bool host_draining() const noexcept { return false; }
  // How long a new connection may take to send its PROXY header; zero (the
  // default): no header is expected.
  virtual Duration proxy_header_timeout() const noexcept { return Duration{0}; }
  // With a PROXY header expected: may the socket peer `peer` (its own
  // address, AF_UNSPEC if unknown) send one? False: the connection is reset
  // at once as proxy_untrusted, before any byte is read. Default: every peer.
  virtual bool proxy_source_trusted(const sockaddr& /*peer*/) const noexcept { return true; }
  // The transport every connection of this host runs through (byte_stage.h);
  // nullptr (the default): none.
  virtual ByteStageFactory* byte_stage_factory() const noexcept { return nullptr; }
  // The connection's client address is known (at open(), or once its PROXY
  // header came). False refuses it: it is reset with `refusal` and its
  // handler never hears of it.
  virtual bool admit(Connection& /*conn*/, CloseReason& /*refusal*/) noexcept { return true; }
  // The connection read in activity generation `generation`, another than
  // the one it is stamped with (only when activity_shift() != 0).
  virtual void connection_active(Connection& /*conn*/, std::uint16_t /*generation*/) noexcept {}
  // `timeout` as the host scales idle timeouts under pressure (overload.h).
  virtual Duration scale_idle_timeout(Duration timeout) const noexcept { return timeout; }
  // log2 of the activity granularity in nanoseconds; 0 = no activity order.
  unsigned activity_shift() const noexcept { return activity_shift_; }
  // Connection::call_next_turn: queue `conn` for a later turn and call
  // turn_arrived(conn) then; false: this host has no turns. forget_turn: the
  // queued connection is closing (on_closed), drop it from the queue.
  virtual bool defer_to_next_turn(Connection& /*conn*/) noexcept { return false; }
  virtual void forget_turn(Connection& /*conn*/) noexcept {}

  // Where a connection's bytes go, for docs/memory.md and the budget test
  // (tests/unit/memory_budget_test.cpp): each field group of Connection
  // (offset, size) and each block it allocates only while in use
  // (side == true, offset 0). Computed (offsetof, sizeof), never typed in.
  // connection_layout.cpp.
  struct LayoutRow {
    const char* name;
    std::size_t offset;
    std::size_t size;
    bool side;
  };
  static std::vector<LayoutRow> connection_layout();

 protected:
  ~ConnectionHost() = default;

  // A new connection of this host, served by `handler`: uv_accept() or
  // uv_tcp_connect() into its handle(), then open_connection(). The host
  // deletes it in connection_closed (or it frees itself once abandoned).
  Connection* make_connection(Handler& handler, std::uint64_t id) {
    return new Connection(*this, handler, id);
  }
  // Connection::open, abandon and reschedule_deadlines (connection.h).
  static int open_connection(Connection& conn) noexcept { return conn.open(); }
  static void abandon_connection(Connection& conn) noexcept { conn.abandon(); }
  static void reschedule_deadlines(Connection& conn) noexcept { conn.reschedule_deadlines(); }
  // The turn asked for with defer_to_next_turn came.
  static void turn_arrived(Connection& conn) noexcept;
  // The host's per-address handle in each connection (IpLimiter). The list
  // fields are ActivityList<Connection>'s.
  static std::uint32_t& ip_slot(Connection& conn) noexcept { return conn.host_ip_slot; }
  // Counts `bytes` as written on `conn` (bytes_written(), NetStats, write
  // activity) without a socket write: for testing::Host, whose tests carry
  // the counters past 4 GiB without writing gigabytes. Nothing for 0 bytes
  // or a closing connection.
  static void count_written(Connection& conn, std::size_t bytes) noexcept;

  unsigned activity_shift_ = 0;

 private:
};

}  // namespace heartwheel::net::detail
