// heartwheel/net/connection.h - one TCP connection on a libuv loop, with its
// deadline set, write queue and close reason.
//
// What it is
//   A Connection owns a uv_tcp_t and ONE timer entry (through DeadlineTimer)
//   that covers every deadline of the connection and of the layers on it:
//   read/write/all idle, the request deadline, the maximum age, the write-stall
//   checks and the claimed slots that the layers above set by kind (a
//   message head's timeout, a heartbeat's ping and pong, a close handshake;
//   see deadline.h). Layers set, move and clear deadlines; they own no wheel
//   entries of their own. Reads go into the loop's shared read
//   buffer (one per thread, never one per connection); writes go straight to
//   the socket when it takes them (uv_try_write) and are queued otherwise, in
//   a write queue allocated only while bytes are pending. Bytes written with
//   write(SharedBytes) are queued as a reference to the caller's immutable
//   buffer, never copied (one publication sent to many connections). An idle connection
//   therefore costs sizeof(Connection) (checked in
//   tests/unit/memory_budget_test.cpp; 248 bytes of it are the uv_tcp_t; the
//   byte-by-byte table is docs/memory.md) plus the kernel's socket.
//
// PROXY protocol (ServerOptions::proxy_protocol)
//   Behind a proxy, every connection starts with a PROXY header (v1 or v2,
//   proxy_protocol.h). While it is awaited an internal handler owns the
//   connection: the bytes go to a ProxyHeaderParser (allocated for the
//   stage only; its size is in proxy_protocol.h) and the
//   proxy_header_timeout deadline bounds the wait (closed as
//   proxy_header_timeout). Once the header is complete the parser is freed,
//   the header is kept (64 bytes for its addresses; a whole ProxyHeader only
//   when it had TLVs or UNIX addresses, or once proxy_header() is called),
//   the deadline is cleared, and
//   the application's handler gets on_open, then on_data with whatever
//   followed the header in the same read (also when on_open paused
//   reading). A malformed header closes the connection as
//   proxy_header_invalid. The application never sees a connection whose
//   header failed: no on_open, no on_close (the statistics count it).
//   peer_address() / peer_sockaddr() / local_address() give the header's
//   addresses when it carries some (not for v2 LOCAL or v1 UNKNOWN: the
//   socket's own then), and so does every use the server makes of them
//   (the per-address limit).
//
// Byte stage (ServerOptions::transport, e.g. TLS)
//   After the PROXY header and admission, a transport (byte_stage.h) may
//   stand between the socket and the handler for the connection's whole
//   life: the handler gets on_open once the transport is ready (a TLS
//   handshake done), reads the bytes the transport delivers, and write()
//   goes through the transport. A connection whose stage fails is never
//   seen by the application (as for a PROXY header).
//
// Ownership and lifetime
//   Created by a Server (accepted), a Connector (connected) or a
//   testing::Host; never by the application (the constructor is theirs
//   only: detail/connection_host.h). Destroyed by the library right after
//   Handler::on_close returns. A pointer to a Connection is valid until then.
//
// Threads: the connection's loop thread only, for every method.
// Re-entrancy: every method may be called from any Handler callback of this
//   connection. close() from inside a callback is safe: the socket is closed
//   and on_close follows on a later loop iteration.
#pragma once

#include <heartwheel/common/prefetch.h>
#include <heartwheel/net/close_reason.h>
#include <heartwheel/net/deadline_timer.h>
#include <heartwheel/net/handler.h>
#include <heartwheel/net/idle_policy.h>
#include <heartwheel/net/stats.h>
#include <heartwheel/net/write_policy.h>
#include <sys/socket.h>
#include <uv.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace heartwheel::net {

// Settings every connection of one server (or connector) shares.
struct ConnectionOptions {
  IdlePolicy idle;
  WritePolicy write;
  bool tcp_nodelay = true;
  // TCP_USER_TIMEOUT (Linux): unacknowledged data older than this makes the
  // kernel drop the connection. 0 = leave the system default.
  Duration tcp_user_timeout{0};
  // Read each connection when its data arrives, first come first served,
  // through the loop's edge-triggered epoll set (one per loop, shared by its
  // servers and clients; lib/src/net/edge_reader.h), instead of libuv's
  // level-triggered uv_read_start, which serves the connections it served
  // last turn first again: a tail under a load of many small requests.
  // false: libuv reads. The same bytes reach the handler either way. libuv
  // reads too when no set can be made (out of descriptors) and, for every
  // connection of the process, when the environment has
  // HEARTWHEEL_EDGE_READS=0 (read once; `tools/run-tests --all` runs the
  // net, http, ws and tls integration tests so too).
  bool edge_triggered_reads = true;
  // Linux, with io_uring: write(SharedBytes) inside a SendBatchScope (one
  // buffer to many connections: pubsub::Hub's fan-out) holds the send back
  // and the thread sends all of them in io_uring batches of 256 per system
  // call when the scope closes (lib/src/net/send_batch.h: at 9,000
  // subscribers 0.76-0.78x the CPU of one write() per socket). Where
  // io_uring is not available (a build without liburing, a kernel that
  // refuses it) one line in the process log says so, once per process, and writes go
  // out at once. false: always at once, one write() per socket.
  bool batch_shared_writes = true;

  // Throws std::invalid_argument with the offending field.
  void validate() const;
};

class Connection;
struct ProxyHeader;
class ByteStageFactory;

// An immutable buffer shared by reference (e.g. one encoded publication that
// many connections send): Connection::write(SharedBytes) keeps a reference
// until the bytes are written instead of copying them. The same type as
// ws::SharedFrame and pubsub::Frame.
using SharedBytes = std::shared_ptr<const std::string>;

class ByteStage;
class ByteStageIo;
class SendBatch;  // lib/src/net/send_batch.h

namespace detail {
class ConnectionHost;  // Server, Connector, testing::Host (detail/connection_host.h)
class EdgeReader;      // lib/src/net/edge_reader.h
}  // namespace detail

class Connection final : private DeadlineTimer {
 public:
  ~Connection() override;

  // ---- identity -------------------------------------------------------------
  // The host numbers its connections from 1 in the order it makes them. The
  // number is kept in 32 bits (docs/memory.md): it wraps after 2^32
  // connections of one host (five days at 10,000 accepts a second), so two
  // live connections share it only if one outlived 2^32 newer ones.
  std::uint64_t id() const noexcept { return id_; }
  uv_tcp_t* handle() noexcept { return &tcp_; }
  uv_loop_t* loop() const noexcept { return tcp_.loop; }
  TimerService& timers() const noexcept { return DeadlineTimer::timers(); }
  // "127.0.0.1:54321": the client's address from the PROXY header when it
  // carries one, else the socket's peer; empty if unknown (closed socket).
  std::string peer_address() const;
  // The address the client connected to (the PROXY header's destination,
  // else the socket's own).
  std::string local_address() const;
  // peer_address() as a socket address. False if unknown.
  bool peer_sockaddr(sockaddr_storage& out) const noexcept;
  // The PROXY header this connection began with, once complete; nullptr
  // without one (the server does not expect one, or it is not in yet).
  // Valid until on_close returns. See proxy_protocol.h for the fields.
  // A header without TLVs is kept compact and made whole (a ProxyHeader) on
  // the first call; nullptr if that allocation fails.
  const ProxyHeader* proxy_header() const noexcept;

  // ---- handler and user data ------------------------------------------------
  // Replaces the handler for the following callbacks. Not owned: it must stay
  // valid until its on_close returns (it may delete itself there).
  void set_handler(Handler& handler) noexcept { handler_ = &handler; }
  Handler& handler() const noexcept { return *handler_; }
  // Kept in handle()->data (no field of its own): do not write that.
  void set_user_data(void* data) noexcept { tcp_.data = data; }
  void* user_data() const noexcept { return tcp_.data; }

  // ---- writing --------------------------------------------------------------
  // Sends `bytes` (copied if they cannot be written at once).
  // Errors: errc::closed if the connection is closing (bytes counted as
  // dropped); errc::limit_reached if queueing would pass
  // WritePolicy::max_queued_bytes (nothing queued, bytes counted as dropped).
  std::error_code write(std::string_view bytes);
  // Sends several parts in order, as one writev when the socket takes them
  // (e.g. a header and a body without joining them first). Same errors; all
  // or nothing is refused.
  std::error_code write(std::initializer_list<std::string_view> parts);
  // Sends a shared, immutable buffer. What the kernel does not take at once is
  // queued as a REFERENCE to `bytes` (a reference count, no copy) until it is
  // written, so N connections sending one buffer hold one copy of it between
  // them. Same errors as write(string_view), plus errc::invalid_argument for
  // a null pointer. The buffer must not change while referenced (it is const).
  // Cost: no allocation when the socket takes it all; otherwise one queue
  // segment (the queue itself if none was pending).
  // Inside a SendBatchScope (heartwheel/common/send_batch_scope.h: one
  // buffer going to many connections, pubsub::Hub's fan-out) with nothing
  // queued, the bytes wait for the thread's io_uring batch and leave when
  // the outermost scope closes (ConnectionOptions::batch_shared_writes);
  // write() still returns at once, and an error of that send closes the
  // connection then, as a failed write() does.
  std::error_code write(SharedBytes bytes);
  // Sends `head` (copied if it has to wait) and then the shared `rest`
  // (queued by reference, as above), as one writev when the socket takes
  // them: e.g. a response head and a body many connections send (a cached
  // file, a static asset). Same errors as write(SharedBytes).
  std::error_code write(std::string_view head, SharedBytes rest);
  // Bytes accepted by write() that the kernel has not taken yet.
  std::size_t queued_bytes() const noexcept;
  // Starts loading this object into the cache (no access, no effect): for
  // code about to write to many connections in turn, a step ahead.
  void prefetch() const noexcept { prefetch_object(*this); }
  // False above the high watermark until back at the low watermark.
  bool writable() const noexcept { return writable_; }
  // One on_writable(conn, true) as soon as nothing is queued any more (the
  // kernel took every byte), even if the high watermark was never passed:
  // for protocols that hold back work until what they wrote has left user
  // space (HTTP starts the next pipelined request then). One-shot; nothing
  // happens if the connection closes first. Call it only while queued_bytes()
  // is not 0 (otherwise there is nothing to wait for).
  void notify_when_drained() noexcept { drain_watch_ = true; }

  // One on_writable(conn, true) in a later loop turn, after other
  // connections' I/O: for a protocol that pauses after a burst of work so
  // that one connection's backlog cannot hold the others up (HTTP answers
  // SessionOptions::pipeline_burst pipelined requests, then yields). A server
  // calls back at most ServerOptions::resume_batch connections per turn, in
  // the order they asked. False when the host has no turns (a Connector's
  // connection, testing::Host): go on at once. Asking again before the turn
  // came is one request; nothing happens if the connection closes first or
  // is above its high watermark then (on_writable(true) comes when it drains).
  bool call_next_turn() noexcept;

  // TCP_USER_TIMEOUT (Linux): the kernel drops the connection when sent data
  // stays unacknowledged this long. False if unsupported or refused.
  bool set_tcp_user_timeout(Duration timeout) noexcept;

  // ---- reading --------------------------------------------------------------
  // Stops/resumes delivering on_data (the kernel buffers, then TCP pushes
  // back on the peer). Independent of the slow-reader pause.
  void pause_reading() noexcept;
  void resume_reading() noexcept;
  bool reading() const noexcept { return reading_; }

  // ---- requests -------------------------------------------------------------
  // A request is in flight from begin_request to end_request; with a non-zero
  // timeout a request_timeout event fires if end_request has not come by
  // then. One request at a time: a new begin_request replaces the deadline.
  // Graceful drain closes a connection only when no request is in flight.
  void begin_request(Duration timeout) noexcept { DeadlineTimer::begin_request(timeout); }
  void end_request() noexcept;
  bool in_request() const noexcept { return DeadlineTimer::in_request(); }

  // ---- layered deadlines -----------------------------------------------------
  // Sets a deadline of a claimed kind (a layer's, or net's ping and
  // pong_timeout; deadline.h): Handler::on_deadline gets {kind} once `when`
  // passes; kNever clears it. The kind takes one of the connection's
  // DeadlineSet::kClaimedSlots claimed slots while set and gives it back when
  // cleared or when it passes. O(1) and allocation-free: a scan of the
  // claimed kinds and a store, plus one wheel operation only when the new
  // deadline is earlier than the one the connection's entry is armed for.
  // Setting a kind from its own on_deadline call is allowed.
  // Preconditions: DeadlineSet::is_claimed(kind) (request_timeout goes
  // through begin_request; the idle kinds follow the IdlePolicy; write_stall
  // is the write path's; proxy_header_timeout the PROXY stage's) and the
  // kind is named (names.h).
  // Every claimed slot taken by other kinds: a programming error (more
  // layered deadlines at once than a connection has room for). Debug builds
  // assert; otherwise the deadline is not kept and the connection closes with
  // CloseReason::error and errc::limit_reached (on_close says so), so a
  // timeout is never silently lost.
  void set_deadline(Deadline kind, TimePoint when) noexcept;
  // The same, `timeout` from now (saturating; a timeout <= 0 clears it).
  void set_timeout(Deadline kind, Duration timeout) noexcept {
    set_deadline(kind, deadline_after(timers().now(), timeout));
  }
  void clear_deadline(Deadline kind) noexcept { set_deadline(kind, kNever); }
  // When `kind` is due (kNever if clear or off); any kind.
  TimePoint deadline(Deadline kind) const noexcept { return DeadlineTimer::deadline(kind); }

  // ---- policies -------------------------------------------------------------
  // The policies in force (the host's, unless overridden here).
  const IdlePolicy& idle_policy() const noexcept { return DeadlineTimer::idle_policy(); }
  const WritePolicy& write_policy() const noexcept;
  // Override the host's policy for this connection only (copied).
  // Throw std::invalid_argument from the policy's validate().
  void set_idle_policy(const IdlePolicy& policy);
  void set_write_policy(const WritePolicy& policy);
  // When the connection's timer fires next (kNever if none).
  TimePoint next_timer_deadline() const noexcept { return armed_for(); }
  // `timeout` scaled the way the host scales idle timeouts under pressure
  // (ServerOptions::overload; the identity without it). For protocol slots
  // that are idle timeouts, e.g. HTTP keep-alive: scaled when set, so a slot
  // set before the pressure keeps its deadline (see overload.h).
  Duration scale_idle_timeout(Duration timeout) const noexcept;

  // ---- closing --------------------------------------------------------------
  // Closes now: stops reading, drops queued bytes (counted), closes the socket.
  // `error` is passed to on_close (for CloseReason::error). Idempotent: the
  // first reason wins.
  void close(CloseReason reason = CloseReason::local, std::error_code error = {}) noexcept;
  // Stops reading, writes what is queued, then closes with `reason`. The
  // write-stall rules still bound how long this takes.
  void close_after_flush(CloseReason reason = CloseReason::local) noexcept;
  // Closes with a TCP reset (no FIN, queued bytes dropped).
  void reset(CloseReason reason = CloseReason::local) noexcept;
  bool closing() const noexcept { return closing_ || flush_then_close_; }
  CloseReason close_reason() const noexcept { return static_cast<CloseReason>(reason_); }

  // ---- counters ---------------------------------------------------------------
  // Exact to 2^64 bytes: the low 32 bits are kept here, the high halves in
  // the side block, allocated on the first carry (once 4 GiB went one way).
  // Should that allocation fail, the carry is lost (the host's NetStats
  // still counts every byte).
  std::uint64_t bytes_read() const noexcept;
  std::uint64_t bytes_written() const noexcept;  // taken by the kernel
  // Bytes refused or dropped at close (kept beside the rarely used state:
  // most connections never drop a byte).
  std::uint64_t bytes_dropped() const noexcept;
  // (These three are rounded up to the wheel's tick: the deadline set keeps
  // its times in ticks, deadline_set.h.)
  TimePoint opened_at() const noexcept { return deadlines().opened_at(scale()); }
  // When the last read was stamped (at open, plus any jitter, before one).
  TimePoint last_read() const noexcept { return deadlines().read_anchor(scale()); }
  // When the last write progress was stamped (the same rule).
  TimePoint last_write() const noexcept { return deadlines().write_anchor(scale()); }
  // True while the PROXY header is awaited.
  bool in_proxy_stage() const noexcept;
  // The connection's transport (byte_stage.h), or nullptr; in its stage (not
  // ready yet) while in_byte_stage().
  ByteStage* byte_stage() const noexcept;
  bool in_byte_stage() const noexcept;

 private:
  struct WriteQueue;
  struct Overrides;
  struct Extras;
  struct Gate;
  friend struct WriteQueue;
  friend class ByteStageIo;
  // Its host makes, opens and abandons it, and keeps the fields below.
  friend class detail::ConnectionHost;
  friend class detail::EdgeReader;
  friend class SendBatch;
  template <class Node>
  friend class ActivityList;

  // The host's two small fields come first among the data members: they
  // fill DeadlineTimer's tail padding and cost no size, and tcp_ follows at
  // once (sizeof(Connection) is checked in tests/unit/memory_budget_test.cpp;
  // the order of the fields below is the one that packs: docs/memory.md).
  std::uint16_t host_activity_gen = 0;  // ActivityList's generation stamp
  std::uint32_t host_ip_slot = 0;       // IpLimiter handle (0 = none)

  // Made by a host (ConnectionHost::make_connection), which then
  // uv_accept()s or uv_tcp_connect()s into handle() and calls open().
  Connection(detail::ConnectionHost& host, Handler& handler, std::uint64_t id);
  // Starts reading and the idle timers, calls on_open. Returns a libuv error
  // (then the connection is already closing with CloseReason::error).
  int open() noexcept;
  // Closes without any callback (the host is going away); frees itself when
  // libuv is done with the handle.
  void abandon() noexcept;
  // The host changed the idle timeouts of the policy this connection reads
  // in place (overload scaling): moves its timer earlier if a slot is now
  // due sooner than it is armed for (later ones are found when it fires).
  void reschedule_deadlines() noexcept;

  TimerService& timer_service() const noexcept override;
  void on_deadline_event(DeadlineEvent event, TimePoint now) override;
  void check_write_progress(TimePoint now);
  void on_timer_fired(Duration lateness) override;
  NetStats& stats() noexcept;
  // Reading (connection.cpp): through the host's EdgeReader if the options
  // ask for it and it can, else libuv's uv_read_start; stop_reading leaves
  // the reader's set as it is (read_ready skips a connection not reading).
  int start_reading() noexcept;
  void stop_reading() noexcept;
  // The EdgeReader found data: read until the socket is empty (or the turn's
  // limit, then re-armed), each read through received(). `ended`: the peer
  // sent its FIN (or the socket failed), so a short read is not the end:
  // read until recv says so (0, or an error).
  void read_ready(bool ended) noexcept;
  // The socket's descriptor; -1 when it has none (not open, or closed).
  int socket_fd() const noexcept;
  // Out of the EdgeReader's set, before the socket closes.
  void leave_edge_reader() noexcept;
  // What one read brought: bytes (nread > 0), or a libuv error or UV_EOF.
  void received(ssize_t nread, const char* base) noexcept;
  static void on_alloc(uv_handle_t* handle, std::size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
  static void on_write_done(uv_write_t* req, int status);
  static void on_closed(uv_handle_t* handle);
  // The write path (connection_write.cpp). `shared`, when given, is the
  // buffer the last part views: its unwritten rest is queued by reference.
  // Through the transport if there is one, else write_socket.
  std::error_code write_parts(const std::string_view* parts, std::size_t count,
                              const SharedBytes* shared = nullptr);
  std::error_code write_socket(const std::string_view* parts, std::size_t count,
                               const SharedBytes* shared = nullptr);
  // What the kernel did not take of a write (past its first `done` bytes)
  // into the write queue, made if needed. No callbacks.
  void queue_rest(const std::string_view* parts, std::size_t count, const SharedBytes* shared,
                  std::size_t done);
  // Past the high watermark: unwritable, maybe paused, on_writable(false).
  void check_high_watermark() noexcept;
  // `bytes` taken by the kernel: counted, write activity refreshed.
  void note_written(std::size_t bytes) noexcept;
  // SendBatch: the held send of `bytes` came back with `result` (bytes
  // taken or -errno): counted, the rest queued, or closed (no callbacks);
  // then, once every send of the batch is finished, after_batched().
  void finish_batched(const SharedBytes& bytes, int result) noexcept;
  void after_batched() noexcept;
  void handle_eof() noexcept;
  void start_write() noexcept;
  void after_progress() noexcept;
  void update_reading() noexcept;
  void schedule_write_check() noexcept;
  void count_dropped(std::size_t n) noexcept;
  // The byte counters (see bytes_read()): add to the low half, carry into
  // the side block.
  void count_read(std::size_t n) noexcept;
  void count_written(std::size_t n) noexcept;
  // bytes_written() without the write in flight: what write-progress marks
  // compare.
  std::uint64_t written_total() const noexcept;
  // The side block, or nullptr if it cannot be allocated (for the noexcept
  // paths that can do without it).
  Extras* extras_nothrow() noexcept;
  void finish_close(CloseReason reason, std::error_code error, bool rst) noexcept;
  template <class F>
  bool guarded(F&& f) noexcept;
  Extras& extras();
  // The connection whose handle() is `handle` (handle->data is the user's).
  static Connection* from_handle(void* handle) noexcept;
  // The PROXY header's client (peer) and destination (local) addresses;
  // false when there is no header or it carries none.
  bool proxy_addresses(sockaddr_storage* peer, sockaddr_storage* local) const noexcept;
  // False after resetting the connection as proxy_untrusted: its socket peer
  // is not one the host believes PROXY headers from.
  bool proxy_source_trusted() noexcept;
  int begin_proxy_stage(Duration timeout) noexcept;
  void feed_proxy(std::string_view data);
  void admit_and_open(std::string_view rest) noexcept;
  // connection_stage.cpp
  void begin_transport(ByteStageFactory& factory, std::string_view rest) noexcept;
  void transport_closing(bool queue) noexcept;

  uv_tcp_t tcp_;
  detail::ConnectionHost* host_;
  Handler* handler_;
  Connection* next_in_host = nullptr;  // the host's intrusive list (ActivityList)
  Connection* prev_in_host = nullptr;
  std::unique_ptr<WriteQueue> wq_;  // only while bytes are queued
  // Rarely used state (policy overrides, the PROXY stage and header, the
  // dropped-byte count, the counters' high halves): one pointer, allocated
  // only for connections that need it. docs/memory.md has the byte-by-byte
  // layout.
  std::unique_ptr<Extras> extra_;
  // The counters' low 32 bits (bytes_read()); the kernel took
  // bytes_written_lo_ (completed writes).
  std::uint32_t bytes_read_lo_ = 0;
  std::uint32_t bytes_written_lo_ = 0;
  std::uint32_t id_;  // id(): 32 bits
  // The last word: reason, error and flags in 32 bits. The reason is below
  // kCloseReasonCapacity (6 bits); the error is a heartwheel_category() value
  // (a libuv code, -4095..-1, or an errc, both within 13 signed bits; any
  // other value is kept as UV_UNKNOWN).
  std::uint8_t reason_ : 6 = static_cast<std::uint8_t>(CloseReason::local);
  int error_ : 13 = 0;
  // Flags.
  bool writable_ : 1 = true;
  bool reading_ : 1 = false;      // reading: uv_read_start or the edge reader
  bool edge_member_ : 1 = false;  // in the host's EdgeReader set
  bool user_paused_ : 1 = false;
  bool policy_paused_ : 1 = false;  // slow-reader pause
  bool eof_ : 1 = false;
  bool closing_ : 1 = false;
  bool flush_then_close_ : 1 = false;
  bool opened_ : 1 = false;
  bool drain_watch_ : 1 = false;  // notify_when_drained()
  bool turn_wait_ : 1 = false;    // call_next_turn(): in the host's queue
  bool transport_ : 1 = false;    // extra_->transport is set
  bool batched_ : 1 = false;      // a send waits in the thread's SendBatch
};

}  // namespace heartwheel::net
