// See heartwheel/net/connection.h. A connection's life:
//   open() -> reading + one armed timer entry -> on_data/on_idle/... ->
//   close() -> uv_close -> on_closed: Handler::on_close, host deletes it.
#include <heartwheel/net/connection.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <array>
#include <cassert>
#include <cerrno>
#include <cstddef>
#include <new>

#include <heartwheel/common/error.h>
#include <heartwheel/net/activity_list.h>
#include <heartwheel/net/address.h>

#include <heartwheel/net/detail/connection_host.h>
#include <heartwheel/net/names.h>

#include "connection_extras.h"
#include "connection_guarded.h"
#include "edge_reader.h"
#include "random.h"
#include "send_batch.h"
#include "write_queue.h"

namespace heartwheel::net {

namespace {
// One read buffer per loop thread: libuv on Unix reads right after alloc, and
// on_data consumes the bytes before the next read, so connections share it.
constexpr std::size_t kReadBufferSize = 64 * 1024;
thread_local std::array<char, kReadBufferSize> t_read_buffer;
}  // namespace

Connection::Connection(detail::ConnectionHost& host, Handler& handler, std::uint64_t id)
    : host_(&host), handler_(&handler), id_(static_cast<std::uint32_t>(id)) {
  tcp_.data = nullptr;  // user_data()
}

TimerService& Connection::timer_service() const noexcept { return host_->timer_service(); }

Connection* Connection::from_handle(void* handle) noexcept {
  // Connection is final with one non-virtual base, so tcp_ sits at a fixed
  // offset that GCC and Clang compute for it (offsetof on a class that is not
  // standard-layout is conditionally supported, hence the pragma). This is
  // what keeps user_data in tcp_.data instead of a field of its own.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
  constexpr std::size_t kTcpOffset = offsetof(Connection, tcp_);
#pragma GCC diagnostic pop
  return reinterpret_cast<Connection*>(static_cast<char*>(handle) - kTcpOffset);
}

Connection::~Connection() {
  assert(!batched_ && "finish_close and abandon send a held send first");
  if (host_) stop_deadlines();  // abandon() stopped them before letting go of the host
  // Bytes still queued leave the loop's write-queue gauge with the queue.
  if (wq_) stats().write_queue_bytes -= wq_->pending.bytes() + wq_->inflight.bytes();
}

NetStats& Connection::stats() noexcept {
  // After abandon() the host may be gone while libuv still calls back (a
  // write completing, the close): those counts go nowhere.
  thread_local NetStats orphaned;
  return host_ ? host_->net_stats() : orphaned;
}

Connection::Extras& Connection::extras() {
  if (!extra_) extra_ = std::make_unique<Extras>();
  return *extra_;
}

Connection::Extras* Connection::extras_nothrow() noexcept {
  if (!extra_) extra_.reset(new (std::nothrow) Extras);
  return extra_.get();
}

// The counters' carries: once per 4 GiB, so the side block's allocation is
// off every usual path (docs/memory.md).
void Connection::count_read(std::size_t n) noexcept {
  const std::uint64_t sum = std::uint64_t{bytes_read_lo_} + n;
  bytes_read_lo_ = static_cast<std::uint32_t>(sum);
  if (sum >> 32 != 0)
    if (Extras* x = extras_nothrow()) x->bytes_read_high += static_cast<std::uint32_t>(sum >> 32);
}

void Connection::count_written(std::size_t n) noexcept {
  const std::uint64_t sum = std::uint64_t{bytes_written_lo_} + n;
  bytes_written_lo_ = static_cast<std::uint32_t>(sum);
  if (sum >> 32 != 0)
    if (Extras* x = extras_nothrow()) x->bytes_written_high += static_cast<std::uint32_t>(sum >> 32);
}

std::uint64_t Connection::bytes_read() const noexcept {
  return (extra_ ? std::uint64_t{extra_->bytes_read_high} << 32 : 0) + bytes_read_lo_;
}

std::uint64_t Connection::written_total() const noexcept {
  return (extra_ ? std::uint64_t{extra_->bytes_written_high} << 32 : 0) + bytes_written_lo_;
}

const WritePolicy& Connection::write_policy() const noexcept {
  if (extra_ && extra_->overrides) return extra_->overrides->write;
  static const WritePolicy defaults;
  return host_ ? host_->connection_options().write : defaults;
}

int Connection::open() noexcept {
  opened_ = true;
  const ConnectionOptions& o = host_->connection_options();
  if (o.tcp_nodelay) uv_tcp_nodelay(&tcp_, 1);
  if (o.tcp_user_timeout.count() > 0) set_tcp_user_timeout(o.tcp_user_timeout);
  start_deadlines(o.idle, detail::random_up_to(o.idle.jitter));
  reading_ = true;
  if (const int rc = start_reading(); rc < 0) {
    reading_ = false;
    close(CloseReason::error, uv_error(rc));
    return rc;
  }
  // Behind a proxy the client is known only once its header came
  // (connection_proxy.cpp); then the same admit_and_open follows.
  if (const Duration t = host_->proxy_header_timeout(); t.count() > 0) {
    if (!proxy_source_trusted()) return 0;  // reset as proxy_untrusted
    return begin_proxy_stage(t);
  }
  admit_and_open({});
  return 0;
}

void Connection::admit_and_open(std::string_view rest) noexcept {
  CloseReason refusal = CloseReason::limit;
  if (host_ && !host_->admit(*this, refusal)) {
    handler_ = &Gate::instance();  // the application never hears of it
    reset(refusal);
    return;
  }
  if (host_) {
    if (ByteStageFactory* factory = host_->byte_stage_factory()) {
      begin_transport(*factory, rest);  // on_open once the transport is ready
      return;
    }
  }
  if (!guarded([&] { handler_->on_open(*this); }) || closing_) return;
  if (!rest.empty()) guarded([&] { handler_->on_data(*this, rest); });
}

void Connection::reschedule_deadlines() noexcept { DeadlineTimer::policy_changed(); }

Duration Connection::scale_idle_timeout(Duration timeout) const noexcept {
  return host_ ? host_->scale_idle_timeout(timeout) : timeout;
}

bool Connection::set_tcp_user_timeout(Duration timeout) noexcept {
#ifdef TCP_USER_TIMEOUT
  const int fd = socket_fd();
  if (fd < 0) return false;
  const auto ms = static_cast<unsigned>(to_uv_millis_ceil(timeout));
  return ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms) == 0;
#else
  (void)timeout;
  return false;
#endif
}

std::string Connection::peer_address() const {
  sockaddr_storage ss{};
  // The header's spelling: the same for IP addresses, and it knows AF_UNIX.
  if (proxy_addresses(&ss, nullptr)) return ProxyHeader::format_proxy_address(ss);
  if (!peer_sockaddr(ss)) return {};
  return format_address(reinterpret_cast<sockaddr*>(&ss));
}

bool Connection::peer_sockaddr(sockaddr_storage& out) const noexcept {
  if (proxy_addresses(&out, nullptr)) return true;
  int len = sizeof out;
  return uv_tcp_getpeername(&tcp_, reinterpret_cast<sockaddr*>(&out), &len) == 0;
}

std::string Connection::local_address() const {
  sockaddr_storage ss{};
  if (proxy_addresses(nullptr, &ss)) return ProxyHeader::format_proxy_address(ss);
  int len = sizeof ss;
  if (uv_tcp_getsockname(&tcp_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {};
  return format_address(reinterpret_cast<sockaddr*>(&ss));
}

void Connection::set_idle_policy(const IdlePolicy& policy) {
  policy.validate();
  auto& own = extras().overrides;
  if (!own) own = std::make_unique<Overrides>(Overrides{policy, write_policy()});
  own->idle = policy;
  set_idle_policy_ref(own->idle);
}

void Connection::set_write_policy(const WritePolicy& policy) {
  policy.validate();
  auto& own = extras().overrides;
  if (!own) own = std::make_unique<Overrides>(Overrides{idle_policy(), policy});
  own->write = policy;
  set_idle_policy_ref(own->idle);  // the idle policy now lives in the override too
  schedule_write_check();
}

void Connection::set_deadline(Deadline kind, TimePoint when) noexcept {
  assert(detail::DeadlineSet::is_claimed(kind) && kind != Deadline::proxy_header_timeout &&
         "set_deadline takes claimed kinds: a layer's, ping or pong_timeout");
  assert(is_named(kind) && "a layer's deadline kind needs a registered name (names.h)");
  if (DeadlineTimer::set_deadline(kind, when)) return;
  // Every claimed slot is held by other kinds: more layered deadlines at
  // once than DeadlineSet::kClaimedSlots. Never keep running without the
  // timeout the layer asked for (connection.h).
  assert(!"more layered deadlines at once than detail::DeadlineSet::kClaimedSlots");
  close(CloseReason::error, make_error_code(errc::limit_reached));
}

void Connection::end_request() noexcept {
  DeadlineTimer::end_request();
  if (host_) host_->request_ended(*this);
}

// ---- reading ---------------------------------------------------------------

int Connection::start_reading() noexcept {
  if (edge_member_ || (host_ && host_->connection_options().edge_triggered_reads &&
                       detail::EdgeReader::edge_reads_enabled())) {
    if (const int fd = socket_fd();
        fd >= 0 && detail::EdgeReader::start(tcp_.loop, fd, *this, edge_member_)) {
      edge_member_ = true;
      return 0;
    }
    if (edge_member_) return UV_EIO;  // in the set, and not re-armed: would never hear again
  }
  return uv_read_start(reinterpret_cast<uv_stream_t*>(&tcp_), &on_alloc, &on_read);
}

void Connection::stop_reading() noexcept {
  // A member stays in the edge reader's set: it hears only of new data,
  // which read_ready leaves in the socket while not reading_, and
  // start_reading re-arms it (the kernel then reports what waits).
  if (edge_member_) {
    detail::EdgeReader::stop(tcp_.loop);
    return;
  }
  uv_read_stop(reinterpret_cast<uv_stream_t*>(&tcp_));
}

void Connection::read_ready(bool ended) noexcept {
  if (!reading_ || closing_) return;  // paused: its data waits for start_reading
  const int fd = socket_fd();
  if (fd < 0) return;
  // Reads of one connection per wake-up at most while each fills the
  // buffer, as libuv's uv_read_start: then the others get their turn.
  const int turn = detail::EdgeReader::reads_per_turn();
  for (int i = 0; i < turn; ++i) {
    const ssize_t n = ::recv(fd, t_read_buffer.data(), t_read_buffer.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    received(n > 0 ? n : n == 0 ? ssize_t{UV_EOF} : uv_translate_sys_error(errno),
             t_read_buffer.data());
    if (n <= 0) return;
    // Short: the socket is empty, and its next data is a new edge; but a FIN
    // that came with the data is no new edge: then read on to see it.
    if (static_cast<std::size_t>(n) < t_read_buffer.size() && !ended) return;
    if (!reading_ || closing_) return;  // paused or closed by what it read
  }
  // The turn's reads are spent and data may be left, which no new edge would
  // report: re-armed, the kernel queues it behind the connections waiting.
  if (!detail::EdgeReader::rearm(tcp_.loop, fd, *this)) close(CloseReason::error, uv_error(UV_EIO));
}

void Connection::on_alloc(uv_handle_t*, std::size_t, uv_buf_t* buf) {
  *buf = uv_buf_init(t_read_buffer.data(), static_cast<unsigned>(t_read_buffer.size()));
}

void Connection::on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  from_handle(stream)->received(nread, buf->base);
}

void Connection::received(ssize_t nread, const char* base) noexcept {
  if (nread > 0) {
    const auto n = static_cast<std::size_t>(nread);
    count_read(n);
    stats().bytes_read += n;
    // Stamped with TimerService::now(), which under LoopWheel is never older
    // than the read (the loop's cached time may be: a stalled loop).
    note_read();
    // Overload protection keeps the host's connections in order of their
    // last read: a compare per read, a move at most once per generation.
    if (host_ && host_->activity_shift() != 0) {
      const auto gen = activity_generation(last_read(), host_->activity_shift());
      if (gen != host_activity_gen) host_->connection_active(*this, gen);
    }
    if (transport_) {  // TLS: the transport decodes and delivers
      guarded([&] { extra_->transport->on_bytes(*this, std::string_view(base, n)); });
      return;
    }
    guarded([&] { handler_->on_data(*this, std::string_view(base, n)); });
    return;
  }
  if (nread == 0) return;  // EAGAIN
  if (nread == UV_EOF) {
    handle_eof();
    return;
  }
  const auto ec = uv_error(static_cast<int>(nread));
  close(nread == UV_ECONNRESET ? CloseReason::peer_closed : CloseReason::error, ec);
}

void Connection::leave_edge_reader() noexcept {
  if (!edge_member_) return;
  if (reading_) {  // abandoned while reading
    detail::EdgeReader::stop(tcp_.loop);
    reading_ = false;
  }
  edge_member_ = false;
  detail::EdgeReader::leave(tcp_.loop, socket_fd(), *this);
}

int Connection::socket_fd() const noexcept {
  uv_os_fd_t fd;
  return uv_fileno(reinterpret_cast<const uv_handle_t*>(&tcp_), &fd) == 0 ? fd : -1;
}

void Connection::handle_eof() noexcept {
  eof_ = true;
  update_reading();
  guarded([&] { handler_->on_eof(*this); });
}

void Connection::pause_reading() noexcept {
  user_paused_ = true;
  update_reading();
}

void Connection::resume_reading() noexcept {
  user_paused_ = false;
  update_reading();
}

void Connection::update_reading() noexcept {
  const bool want =
      opened_ && !closing_ && !flush_then_close_ && !eof_ && !user_paused_ && !policy_paused_;
  if (want == reading_) return;
  if (want) {
    if (const int rc = start_reading(); rc < 0) {
      close(CloseReason::error, uv_error(rc));
      return;
    }
  } else {
    stop_reading();
  }
  reading_ = want;
}

// ---- deadline events --------------------------------------------------------

void Connection::on_deadline_event(DeadlineEvent event, TimePoint now) {
  if (event.kind == Deadline::write_stall) {
    check_write_progress(now);
    return;
  }
  if (const auto i = static_cast<std::size_t>(event.kind); i < kDeadlineCapacity)
    ++stats().idle_events[i];
  DeadlineAction action = DeadlineAction::close;
  if (!guarded([&] { action = handler_->on_deadline(*this, event); })) return;
  if (action == DeadlineAction::close && !closing_) close(close_reason_for(event.kind));
}

void Connection::on_timer_fired(Duration lateness) { stats().record_timer_fire(lateness); }

// ---- closing ---------------------------------------------------------------

void Connection::close(CloseReason reason, std::error_code error) noexcept {
  if (closing_) return;
  finish_close(reason, error, false);
}

void Connection::reset(CloseReason reason) noexcept {
  if (closing_) return;
  finish_close(reason, {}, true);
}

void Connection::close_after_flush(CloseReason reason) noexcept {
  if (closing_ || flush_then_close_) return;
  if (transport_) transport_closing(true);  // e.g. close_notify, flushed with the rest
  if (closing_) return;
  if (queued_bytes() == 0) {
    close(reason);
    return;
  }
  flush_then_close_ = true;
  reason_ = static_cast<std::uint8_t>(reason);
  update_reading();
}

void Connection::finish_close(CloseReason reason, std::error_code error, bool rst) noexcept {
  // A held send was written before the close: it goes first, while the
  // descriptor is still this socket's (send_batch.h). Its failure closes
  // the connection itself: nothing more to do then.
  if (batched_) {
    SendBatch::flush_thread();
    if (closing_) return;
  }
  // Politely (close_notify) if the socket takes it now and nothing queued
  // would have to go first; never for a reset.
  if (transport_ && !rst && !flush_then_close_ && queued_bytes() == 0) transport_closing(false);
  closing_ = true;
  flush_then_close_ = false;
  assert(static_cast<std::size_t>(reason) < kCloseReasonCapacity);
  reason_ = static_cast<std::uint8_t>(reason);
  // Kept in 13 bits (connection.h): every heartwheel_category() value fits.
  const int code = error.value();
  error_ = code >= -4096 && code < 4096 ? code : UV_UNKNOWN;
  if (const std::size_t queued = queued_bytes(); queued > 0) count_dropped(queued);
  stop_deadlines();
  if (reading_) stop_reading();
  reading_ = false;
  leave_edge_reader();
  assert(is_named(reason) && "a layer's close reason needs a registered name (names.h)");
  if (const auto i = static_cast<std::size_t>(reason); i < kCloseReasonCapacity)
    ++stats().closed_by_reason[i];
  auto* handle = reinterpret_cast<uv_handle_t*>(&tcp_);
  if (rst && uv_tcp_close_reset(&tcp_, &on_closed) == 0) return;
  uv_close(handle, &on_closed);
}

void Connection::abandon() noexcept {
  if (batched_) SendBatch::flush_thread();  // before the descriptor closes
  stop_deadlines();  // while the host (its timer service) is still there
  leave_edge_reader();
  host_ = nullptr;
  if (closing_) return;  // on_closed will delete it
  closing_ = true;
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), &on_closed);
}

void Connection::on_closed(uv_handle_t* handle) {
  auto* c = from_handle(handle);
  if (!c->host_) {
    delete c;
    return;
  }
  try {
    c->handler_->on_close(
        *c, c->close_reason(),
        c->error_ ? std::error_code(c->error_, heartwheel_category()) : std::error_code{});
  } catch (...) {
    ++c->stats().handler_exceptions;
  }
  if (c->turn_wait_) c->host_->forget_turn(*c);
  c->host_->connection_closed(*c);  // deletes c
}

bool Connection::call_next_turn() noexcept {
  if (closing() || !host_) return false;
  if (turn_wait_) return true;
  if (!host_->defer_to_next_turn(*this)) return false;
  turn_wait_ = true;
  return true;
}

void detail::ConnectionHost::turn_arrived(Connection& conn) noexcept {
  conn.turn_wait_ = false;
  if (conn.closing() || !conn.writable_) return;
  conn.guarded([&] { conn.handler_->on_writable(conn, true); });
}

void Connection::count_dropped(std::size_t n) noexcept {
  stats().bytes_dropped += n;
  // noexcept: without memory for the side block only the host's count grows.
  if (!extra_) extra_.reset(new (std::nothrow) Extras);
  if (extra_) extra_->bytes_dropped += n;
}

std::uint64_t Connection::bytes_dropped() const noexcept {
  return extra_ ? extra_->bytes_dropped : 0;
}

// The write path (write, the queue, write-stall checks) is in connection_write.cpp.

}  // namespace heartwheel::net
