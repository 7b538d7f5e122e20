// heartwheel/rpc/net_handler.h - the RPC protocol (docs/rpc-protocol.md) on
// heartwheel::net connections, for the serving side, the calling side, or
// both on the same connections.
//
// What it is
//   A net::Handler that decodes frames incrementally (FrameDecoder), hands
//   REQUESTs to the application with a Reply handle (answer now or later,
//   reply.h), matches RESPONSE/ERROR to the calls it made (CallTable), answers
//   PINGs, sends its own PINGs, closes dead peers, batches its writes and
//   drains politely. heartwheel-rpc-server and heartwheel-rpc-client are built
//   on it. Give one NetHandler to a net::Server, to net::Connectors, or
//   return one per worker from a runtime::Workers factory.
//
//   It is to RPC what http::NetHandler is to HTTP. Serving:
//     rpc::NetHandlerOptions o;
//     o.heartbeat.interval = 30s;                         // 0 = no heartbeats
//     o.on_request = [](const rpc::Request& req, rpc::Reply reply) {
//       reply.respond(req.payload);                       // or keep `reply` and answer later
//     };
//     rpc::NetHandler rpc(std::move(o));
//     net::Server server(wheel, rpc, server_options);     // no idle policy needed
//   and on the calling side:
//     o.on_call_done = [](const rpc::CallCompletion& done) { ... };  // exactly once per call
//     rpc::NetHandler rpc(std::move(o));
//     net::Connector link(wheel, rpc, connector_options);
//     ... rpc.call(*link.connection(), "payload", 1s, nullptr, ec);
//
// Heartbeat: Dubbo's rule, on two slots of the connection's deadline set
//   (net/deadline.h), configured by net::HeartbeatConfig (interval 0 = off).
//   - ping slot: when nothing was READ or nothing was WRITTEN for `interval`,
//     send a PING (at most one per interval). Reads and writes only store a
//     timestamp; the slot fires at the time it was set for, sees newer
//     activity and moves itself (lazy refresh, like the idle slots). Pinging
//     when only the read side is idle (Dubbo's HeartbeatTimerTask does the
//     same) is what notices a dead peer while we keep writing to it, e.g.
//     calls into a frozen server; a write-idle-only rule would never ping.
//   - pong_timeout slot: armed when a ping goes out, for the last byte read +
//     timeout (HeartbeatConfig::effective_timeout(): miss_limit x interval,
//     3x by default), and never sooner than one interval after that ping.
//     ANY byte read clears it: a frame, or part of one, is life, not only a
//     PONG. When it passes the connection closes with CloseReason::pong_timeout.
//   So a silent peer is closed `timeout` after its last byte, never earlier
//   (Dubbo's 3 x interval, as heartwheel did before with read_idle), and a
//   live peer always has at least timeout - interval (>= one interval) to
//   answer a ping. Why these slots and not the idle policy's read_idle /
//   write_idle (what net::Heartbeat uses): the idle policy is the
//   application's (an all_idle or max_age can stay on top), read_idle runs
//   whether or not the protocol pings, and its close reason does not say that
//   a heartbeat went unanswered.
//   A PONG measures the round trip from the send time its PING carried
//   (NetHandlerOptions::clock): heartbeat(conn).last_rtt, on_heartbeat_rtt.
//   TCP_USER_TIMEOUT is set to the timeout (Linux) when configured, and the
//   first ping of each connection is delayed by up to jitter x interval.
//   The per-connection heartbeat state lives here, not in net::Connection.
//
// Calls (the calling side)
//   call() sends a REQUEST and registers the call in the handler's CallTable
//   (created on the first call), in the connection's CallGroup. Exactly one
//   completion reaches on_call_done: ok / error (RESPONSE / ERROR), timed_out
//   (its deadline passed; a later reply is counted as late, never delivered)
//   or failed (the connection closed or the peer half-closed: the reply can
//   no longer come). Per-call deadlines stay the call table's own wheel
//   entries rather than the connection's request slot: a connection carries
//   many calls at once, each with its own deadline, and the slot holds one
//   (call_table.h, "Why each call keeps its own wheel entry").
//
// Serving (the answering side)
//   With on_request set, each REQUEST goes to it with a Reply; without it a
//   REQUEST is an unexpected frame (counted, ignored), as are RESPONSE/ERROR
//   on a handler that made no calls. PINGs are always answered.
//
// Batched writes
//   Frames are appended to the connection's batch, never written one by one.
//   Before the loop polls again, each pending batch leaves in ONE
//   Connection::write (one writev/write syscall): the answers to pipelined
//   requests read together, PONGs, PINGs, calls and answers given from wheel
//   callbacks in the same loop iteration all share it. (A uv_prepare_t of the
//   handler's runs the batches, started only while some are pending: Redis's
//   "write in beforeSleep". libuv runs the newest-started prepare first, so
//   it runs before the LoopWheel's and anything the writes schedule is seen
//   by that iteration's re-arm.) A batch reaching flush_bytes is written at
//   once, so memory stays bounded; flush(conn) writes one now.
//
// Finishing: drain and end of stream
//   on_drain (Server::drain calls it; call it yourself for connections of a
//   Connector, or drain_all()): REQUESTs arriving from then on get ERROR
//   "server is draining" and call() refuses with errc::shutting_down; once
//   the connection owes no answer and has no call in flight, its batch is
//   written and it closes after the flush (CloseReason::drain). The drain
//   timeout of the Server closes what is left (answers abandoned, calls
//   failed). on_eof (the peer half-closed): its calls fail (no reply can
//   come), the answers it is owed still go out, then the connection closes
//   (peer_closed). While a connection owes answers or has calls in flight it
//   is in_request() (Connection::begin_request without a deadline), so
//   net-level code sees the work in flight.
//
// Errors
//   A bad frame (length below 9 or above max_frame_length, unknown type)
//   closes that connection with CloseReason::protocol_error, after writing
//   its batch (counted: protocol_errors, frames_too_large). A batch the write
//   queue refuses (WritePolicy::max_queued_bytes: the peer stopped reading)
//   closes it with CloseReason::slow_consumer. Exceptions from callbacks
//   follow net::Handler's rule (that connection closes with error).
//
// Cost
//   Per connection 216 bytes of state (heartbeat stamps, decoder, batch,
//   lists), plus the batch's buffer while frames wait and a partial frame
//   while one is split across reads. Per frame read O(1), no copy unless it
//   is split; per frame written one append; per loop iteration one
//   Connection::write per connection that produced frames. Heartbeats cost a
//   clock read and a store per read callback and per batch.
//
// Ownership and lifetime
//   One NetHandler serves connections of ONE loop. Its per-connection state
//   (allocated in on_open, freed in on_close) takes the connection's
//   user_data. Destroy the handler on the loop thread
//   after the Server/Connectors it served and before the loop's wheel: the
//   state of connections a destroyed Server abandoned (no on_close) is freed
//   then (their Replies abandoned, their calls dropped without completion,
//   as ~CallTable does).
// Threads: the loop thread only. Re-entrancy: every callback may call any
//   method here, Reply methods and Connection methods (close included).
#pragma once

#include <heartwheel/common/metric_sink.h>
#include <heartwheel/common/stat_fields.h>
#include <heartwheel/common/time.h>
#include <heartwheel/net/handler.h>
#include <heartwheel/net/heartbeat.h>
#include <heartwheel/rpc/call_table.h>
#include <heartwheel/rpc/frame.h>
#include <heartwheel/rpc/reply.h>
#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <system_error>

namespace heartwheel::rpc {

struct NetHandlerOptions {
  // Serving: each REQUEST with the handle to answer it. Empty: REQUEST is an
  // unexpected frame.
  std::function<void(const Request&, Reply)> on_request;
  // Calling: the one completion of each call(). Required for call().
  std::function<void(const CallCompletion&)> on_call_done;
  // The connection opened (the handler's state is ready: call() works) /
  // closed (its calls have failed and its owed answers were abandoned).
  std::function<void(net::Connection&)> on_open;
  std::function<void(net::Connection&, net::CloseReason, std::error_code)> on_close;
  // A PONG answered one of our PINGs after `rtt` (on `clock`).
  std::function<void(net::Connection&, Duration rtt)> on_heartbeat_rtt;

  // interval 0 switches heartbeats (and the pong_timeout close) off.
  net::HeartbeatConfig heartbeat;
  // The largest frame `length` accepted; a larger one closes the connection.
  std::size_t max_frame_length = kDefaultMaxFrameLength;
  // call() refuses beyond this many calls in flight (all connections); 0 = no limit.
  std::size_t max_calls_in_flight = 0;
  // The clock round trips are measured on (CallCompletion::elapsed, PING
  // payloads). Null = the TimerService's now() (the loop's cached
  // milliseconds under LoopWheel); pass one reading uv_hrtime for
  // microseconds. Deadlines always use the TimerService.
  TimePoint (*clock)() noexcept = nullptr;
  // A batch this large is written at once (> 0).
  std::size_t flush_bytes = 64 * 1024;

  // Throws std::invalid_argument naming the bad field.
  void validate() const;
};

struct NetHandlerStats {
  // Frames read.
  std::uint64_t requests = 0;        // REQUEST frames (served or refused while draining)
  std::uint64_t replies = 0;         // RESPONSE / ERROR frames (their fate: call_stats())
  std::uint64_t pings_received = 0;  // each answered with a PONG
  std::uint64_t pongs_received = 0;
  std::uint64_t unexpected_frames = 0;  // REQUEST without on_request; replies without calls
  std::uint64_t protocol_errors = 0;    // connections closed for a bad frame
  std::uint64_t frames_too_large = 0;   //   of which: over max_frame_length
  // Frames written.
  std::uint64_t responses = 0;         // RESPONSE frames (Reply::respond)
  std::uint64_t errors_sent = 0;       // ERROR frames, of which:
  std::uint64_t refused_draining = 0;  //   "server is draining"
  std::uint64_t unanswered = 0;        //   "request not answered" (a Reply dropped)
  std::uint64_t dropped_replies = 0;   // owed answers whose connection closed first
  std::uint64_t calls_sent = 0;        // REQUEST frames (call())
  std::uint64_t pings_sent = 0;
  std::uint64_t pong_timeouts = 0;  // connections closed: a ping went unanswered
  std::uint64_t frames_sent = 0;
  std::uint64_t writes = 0;          // batches written (Connection::write calls)
  std::uint64_t write_refusals = 0;  // batches refused by the write queue (slow_consumer)

  void merge(const NetHandlerStats& other) noexcept;
  // The fields' table (heartwheel/common/stat_fields.h): names, Prometheus
  // families (heartwheel_rpc_*) and help; lib/src/rpc/stats.cpp.
  static StatTable<NetHandlerStats> fields() noexcept;
};

// Appends the heartwheel_rpc_* families (every family: lib/src/metrics/
// README.md) into any sink (metrics::write(out, board.total()) for
// Prometheus). `stats` is usually the merge of every loop's
// NetHandler::stats() (copied on each loop's thread, e.g. into a
// metrics::WorkerBoard from WorkersOptions::on_publish). Throws as the sink
// (TextWriter: std::logic_error if `out` already has one of them).
// Threads: any (it reads a copy).
void write_metrics(MetricSink& out, const NetHandlerStats& stats);

// One connection's heartbeat, as the handler keeps it.
struct HeartbeatInfo {
  Duration last_rtt{-1};  // negative: not measured yet
  std::uint32_t pings_sent = 0;
  TimePoint pong_due = kNever;  // when an unanswered ping closes it; kNever: none out
};

class NetHandler final : public net::Handler, private CallListener {
 public:
  // Validates `options` (std::invalid_argument).
  explicit NetHandler(NetHandlerOptions options);
  ~NetHandler() override;
  NetHandler(const NetHandler&) = delete;
  NetHandler& operator=(const NetHandler&) = delete;

  // ---- net::Handler -------------------------------------------------------------
  void on_open(net::Connection& conn) override;
  void on_data(net::Connection& conn, std::string_view data) override;
  net::DeadlineAction on_deadline(net::Connection& conn, net::DeadlineEvent event) override;
  void on_eof(net::Connection& conn) override;
  // See "Finishing" above. May be called directly, also more than once.
  void on_drain(net::Connection& conn) override;
  void on_close(net::Connection& conn, net::CloseReason reason, std::error_code error) override;

  // ---- calling --------------------------------------------------------------------
  // Sends a REQUEST with `payload` on `conn` (a connection this handler
  // serves) and arms its deadline `timeout` from now (<= 0: none). Returns
  // the call's id; its completion comes to on_call_done exactly once, never
  // from inside call(). On error returns 0, sends nothing and reports
  // nothing: errc::closed (closing, half-closed by the peer, or not ours),
  // errc::shutting_down (draining), errc::limit_reached
  // (max_calls_in_flight), errc::invalid_argument (no on_call_done).
  std::uint64_t call(net::Connection& conn, std::string_view payload, Duration timeout,
                     void* context, std::error_code& error);

  // Sends a PING on `conn` now, carrying its send time (on `clock`) so the
  // PONG measures the round trip (on_heartbeat_rtt, heartbeat(conn)), and
  // counts it in pings_sent: for a heartbeat that runs elsewhere, e.g. a
  // net::Pool's (PoolOptions::ping = [&](net::Connection& c) { return
  // rpc.ping(c); }, with this handler's own heartbeat interval 0). False if
  // `conn` is not this handler's or is closing.
  bool ping(net::Connection& conn);

  // ---- connections ----------------------------------------------------------------
  // Writes `conn`'s pending batch now (normally the loop does, before it polls).
  void flush(net::Connection& conn);
  // on_drain for every connection of this handler.
  void drain_all();
  // Answers `conn` owes plus its calls in flight (0 if not ours).
  std::size_t in_flight(const net::Connection& conn) const noexcept;
  HeartbeatInfo heartbeat(const net::Connection& conn) const noexcept;
  std::size_t connection_count() const noexcept { return count_; }

  // ---- statistics -----------------------------------------------------------------
  const NetHandlerStats& stats() const noexcept { return stats_; }
  // The call table's counters (all zero before the first call).
  CallTableStats call_stats() const noexcept;
  std::size_t calls_in_flight() const noexcept;
  // Called with the counters whenever a connection closes and when the
  // handler is destroyed (loop thread): a place to copy them elsewhere.
  void set_publisher(std::function<void(const NetHandlerStats&)> publish) {
    publish_ = std::move(publish);
  }

 private:
  friend class Reply;
  using Session = detail::Session;

  // net_handler.cpp
  Session* session_of(const net::Connection& conn) const noexcept;
  void dispatch(Session& s, const FrameView& frame);
  void on_request_frame(Session& s, const FrameView& frame);
  void on_reply_frame(Session& s, const FrameView& frame);
  void answer(Session& s, Reply& reply, bool ok, std::string_view payload);
  void settle(Session& s);
  void tear_down(Session& s);
  void on_call_done(const CallCompletion& done) override;  // CallListener
  // heartbeat.cpp
  bool heartbeat_on() const noexcept { return options_.heartbeat.interval.count() > 0; }
  void start_heartbeat(Session& s);
  void note_read(Session& s);
  net::DeadlineAction on_ping_due(Session& s);
  void on_pong_frame(Session& s, const FrameView& frame);
  TimePoint rtt_now(const Session& s) const noexcept;
  // write_batch.cpp
  void append(Session& s, FrameType type, std::uint64_t id, std::string_view payload);
  void write_batch(Session& s);
  void mark_pending(Session& s);
  void unmark_pending(Session& s) noexcept;
  void write_pending();
  void close_prepare() noexcept;

  NetHandlerOptions options_;
  NetHandlerStats stats_;
  std::unique_ptr<CallTable> calls_;  // on the first call()
  std::function<void(const NetHandlerStats&)> publish_;
  Session* head_ = nullptr;          // every connection's state (intrusive list)
  Session* pending_ = nullptr;       // states with a batch to write (intrusive list)
  uv_prepare_t* prepare_ = nullptr;  // writes the batches; exists while connections do
  std::size_t count_ = 0;
};

}  // namespace heartwheel::rpc
