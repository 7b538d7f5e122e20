// Worker lifecycle: loop setup, connect ramp, close accounting, progress and
// the final report. The per-mode protocol lives in session.cpp.
#include "worker.h"

#include <heartwheel/common/duration_parse.h>
#include <heartwheel/common/error.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "ws_state.h"

namespace heartwheel::load {

namespace {
constexpr std::size_t kReadBufferBytes = 64 * 1024;
constexpr std::size_t kMaxWriteBacklog = 1 << 20;  // per connection; beyond it sends are dropped
constexpr std::uint64_t kRampPeriodMs = 10;
// A close this little before the expected idle timeout still counts as on
// time: servers stamp activity with a cached loop clock (uv_now), which can
// lag the real arrival of our last bytes by one loop iteration.
constexpr std::uint64_t kEarlyToleranceNs = 50'000'000;

// A write the kernel did not take at once: the request and a copy of the bytes.
struct PendingWrite {
  uv_write_t req;
  std::size_t len;
  std::uint8_t data[1];  // allocated to len
};

uv_handle_t* as_handle(void* h) { return static_cast<uv_handle_t*>(h); }

// Test hooks (tests/integration/load_harness_test.cpp), read from the
// environment; unset in normal runs. See README.md, "Test hooks".
std::optional<Duration> env_duration(const char* name) {
  const char* v = std::getenv(name);
  return v ? try_parse_duration(v) : std::nullopt;
}

// HEARTWHEEL_LOAD_TEST_STALL_WORKER=K: worker K hangs instead of reporting,
// like a worker whose loop never got to its stop; the supervisor's kill at
// --duration + --grace ends it (SIGTERM too, so it dies with the supervisor).
void test_hook_before_report(unsigned index) {
  const char* v = std::getenv("HEARTWHEEL_LOAD_TEST_STALL_WORKER");
  if (!v || std::strtoul(v, nullptr, 10) != index) return;
  ::signal(SIGTERM, SIG_DFL);
  ::sleep(60);
  ::_exit(1);
}

// HEARTWHEEL_LOAD_TEST_TEARDOWN_DELAY=D: every worker sleeps D after
// reporting, before it closes its connections (a slow teardown).
void test_hook_slow_teardown() {
  if (const auto d = env_duration("HEARTWHEEL_LOAD_TEST_TEARDOWN_DELAY"))
    std::this_thread::sleep_for(*d);
}

}  // namespace

// Per-connection memory is the harness's scaling cost: keep the state small.
static_assert(sizeof(Conn) <= 384, "Conn grew: every byte here is paid 100,000 times");

Conn::Conn() : TimerEntry([](TimerEntry&) {}) {}

Worker::Worker(const LoadOptions& options, ProcessShare share, int report_fd)
    : options_(options), share_(share), report_fd_(report_fd) {
  check_uv(uv_loop_init(&loop_), "uv_loop_init");
  loop_.data = this;
  wheel_.emplace(&loop_, LoopWheel::Options{options.tick, 20000});
  if (options.tls) tls_setup();
  conns_ = std::make_unique<Conn[]>(share.connections);
  for (std::uint64_t j = 0; j < share.connections; ++j) {
    Conn& c = conns_[j];
    c.worker = this;
    c.index = share.index + j * share.count;
    c.dead = is_dead(options.dead_fraction, j);
    c.set_callback(&Worker::on_conn_timer);
  }
  read_buf_ = std::make_unique<std::uint8_t[]>(kReadBufferBytes);
  jitter_rng_.seed(std::random_device{}() + share.index);
  prepare_payload(options, scratch_, http_request_);
  if (options.mode == Mode::ws) ws_setup();

  result_.processes = 1;
}

Worker::~Worker() {
  // run() closed every handle; anything left means run() never ran.
  if (wheel_) {
    for (std::uint64_t j = 0; j < share_.connections; ++j) wheel_->cancel(conns_[j]);
    for (std::uint64_t j = 0; j < publisher_count_; ++j) wheel_->cancel(publishers_[j]);
    wheel_.reset();
  }
  ws_free();
  uv_run(&loop_, UV_RUN_DEFAULT);
  uv_loop_close(&loop_);
}

std::uint64_t Worker::elapsed_ms() const noexcept { return (uv_hrtime() - start_ns_) / 1'000'000; }

int Worker::run() {
  start_ns_ = uv_hrtime();
  heartwheel::check_uv(uv_timer_init(&loop_, &ramp_timer_), "uv_timer_init");
  heartwheel::check_uv(uv_timer_init(&loop_, &progress_timer_), "uv_timer_init");
  heartwheel::check_uv(uv_timer_init(&loop_, &stop_timer_), "uv_timer_init");
  heartwheel::check_uv(uv_signal_init(&loop_, &sigterm_), "uv_signal_init");
  heartwheel::check_uv(uv_signal_init(&loop_, &sigint_), "uv_signal_init");
  heartwheel::check_uv(uv_timer_init(&loop_, &publish_timer_), "uv_timer_init");
  heartwheel::check_uv(uv_timer_init(&loop_, &reconnect_timer_), "uv_timer_init");
  ramp_timer_.data = progress_timer_.data = stop_timer_.data = sigterm_.data = sigint_.data = this;
  publish_timer_.data = reconnect_timer_.data = this;
  if (options_.mode == Mode::ws) {
    if (publisher_count_ > 0) {
      // Often enough that a publication is never more than ~a period late.
      const double period_ms = std::clamp(1000.0 / options_.publish_rate / 2, 1.0, 10.0);
      uv_timer_start(
          &publish_timer_, [](uv_timer_t* t) { static_cast<Worker*>(t->data)->ws_publish_due(); },
          static_cast<std::uint64_t>(publish_start_of(options_).count() / 1'000'000),
          static_cast<std::uint64_t>(period_ms));
    }
    if (options_.reconnect_fraction > 0)
      uv_timer_start(
          &reconnect_timer_,
          [](uv_timer_t* t) { static_cast<Worker*>(t->data)->ws_drop_for_reconnect(); },
          static_cast<std::uint64_t>(reconnect_at_of(options_).count() / 1'000'000), 0);
  }
  uv_timer_start(
      &ramp_timer_, [](uv_timer_t* t) { static_cast<Worker*>(t->data)->ramp(); }, 0, kRampPeriodMs);
  uv_timer_start(
      &progress_timer_, [](uv_timer_t* t) { static_cast<Worker*>(t->data)->progress(); }, 1000,
      1000);
  uv_timer_start(
      &stop_timer_, [](uv_timer_t* t) { static_cast<Worker*>(t->data)->stop(); },
      static_cast<std::uint64_t>(options_.duration.count() / 1'000'000), 0);
  heartwheel::check_uv(
      uv_signal_start(
          &sigterm_, [](uv_signal_t* s, int) { static_cast<Worker*>(s->data)->stop(); }, SIGTERM),
      "");
  heartwheel::check_uv(
      uv_signal_start(
          &sigint_, [](uv_signal_t* s, int) { static_cast<Worker*>(s->data)->stop(); }, SIGINT),
      "");
  if (share_.connections == 0) note_resolved();
  uv_run(&loop_, UV_RUN_DEFAULT);
  return reported_ ? 0 : 1;
}

void Worker::ramp() {
  if (stopping_) return;
  if (publisher_count_ > 0 && publishers_[0].state == Conn::State::idle)
    for (std::uint64_t p = 0; p < publisher_count_; ++p) start_connect(publishers_[p]);
  const double rate = options_.connect_rate / share_.count;
  const double elapsed_s = static_cast<double>(uv_hrtime() - start_ns_) / 1e9;
  // One connection at once, then the rate; never more than the share.
  const auto allowed =
      std::min<std::uint64_t>(share_.connections, 1 + static_cast<std::uint64_t>(rate * elapsed_s));
  while (started_ < allowed && pending_ < options_.max_pending_connects)
    start_connect(conns_[started_++]);
  if (started_ == share_.connections) uv_timer_stop(&ramp_timer_);
}

// Publishers and --reconnect's second connections are not part of
// --connections: they count in no connection total and not in the ramp.
static bool counted(const Conn& c) noexcept { return !c.publisher && !(c.ws && c.ws->dropped); }

void Worker::start_connect(Conn& c) {
  if (counted(c)) ++result_.connections_attempted;
  attempt_started(c);
  int rc = uv_tcp_init_ex(&loop_, &c.tcp, AF_INET);
  if (rc < 0) {  // the handle does not exist: nothing to close
    ++result_.connect_errors[uv_err_name(rc)];
    c.state = Conn::State::closed;
    if (counted(c)) note_resolved();
    return;
  }
  c.tcp.data = &c;
  c.state = Conn::State::connecting;
  if (!options_.source_ips.empty()) {
    rc = bind_source(c);
    if (rc < 0) return connect_failed(c, rc);
  }
  const sockaddr_in& dst = options_.targets[c.index % options_.targets.size()].addr;
  auto* req = new uv_connect_t;
  req->data = &c;
  rc = uv_tcp_connect(req, &c.tcp, reinterpret_cast<const sockaddr*>(&dst), &Worker::on_connect);
  if (rc < 0) {
    delete req;
    return connect_failed(c, rc);
  }
  ++pending_;
  c.next_send_ns = uv_hrtime();
  wheel_->schedule(c, options_.connect_timeout);
}

int Worker::bind_source(Conn& c) {
  // bind() on the raw socket: uv_tcp_bind() defers EADDRINUSE to connect(),
  // too late to try another port.
  sockaddr_in src = options_.source_ips[c.index % options_.source_ips.size()];
  uv_os_fd_t fd;
  if (int rc = uv_fileno(as_handle(&c.tcp), &fd); rc < 0) return rc;
  const auto try_bind = [&] {
    return ::bind(fd, reinterpret_cast<const sockaddr*>(&src), sizeof src) == 0 ? 0 : -errno;
  };
  // A reconnect lets the kernel choose the port: the planned one's old
  // 4-tuple may sit in TIME_WAIT on the server side, where a new SYN can go
  // unanswered until its retransmit a second later (real clients get a
  // fresh ephemeral port for each connection, too).
  const bool reconnecting = c.was_open || c.failures > 0;
  if (options_.source_port_lo != 0 && !reconnecting) {
    // Our own port plan: the connections of one address take consecutive
    // ports from a per-run offset, so no two connections of the run share an
    // (address, port), and bind() is O(1) instead of a kernel port search at
    // connect() that slows down as the address fills up. A port some other
    // socket holds is skipped.
    const std::uint64_t range =
        std::uint64_t{options_.source_port_hi} - options_.source_port_lo + 1;
    std::uint64_t slot = c.index / options_.source_ips.size() + options_.port_offset;
    for (int attempt = 0; attempt < 4; ++attempt, slot += range / 4 + 1) {
      src.sin_port = htons(static_cast<std::uint16_t>(options_.source_port_lo + slot % range));
      const int rc = try_bind();
      if (rc != -EADDRINUSE) return rc;
    }
    ++result_.errors["bind:port_taken_fallback"];
    src.sin_port = 0;
  }
  // Let the kernel pick the port at connect() for the full 4-tuple, not at
  // bind(): then an address serves ~28k ports per target instead of 28k overall.
  int one = 1;
  setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
  return try_bind();
}

void Worker::connect_failed(Conn& c, int uv_code) {
  ++result_.connect_errors[uv_err_name(uv_code)];
  // Only a connection's first attempt resolves the ramp; --auto-reconnect retries do not.
  if (counted(c) && !c.was_open && c.failures == 0) note_resolved();
  attempt_failed(c, uv_err_name(uv_code));
  close_conn(c);
}

void Worker::on_connect(uv_connect_t* req, int status) {
  Conn& c = *static_cast<Conn*>(req->data);
  delete req;
  Worker& w = *c.worker;
  if (status < 0 || !w.tls_) --w.pending_;  // with --tls: when its handshake is over
  if (status == UV_ECANCELED) return;  // we closed it (timeout or stop) and counted it then
  if (status < 0) return w.connect_failed(c, status);
  w.result_.connect_us.record((uv_hrtime() - c.next_send_ns) / 1000);
  const bool first_attempt = !c.was_open && c.failures == 0;
  if (w.tls_) {
    c.handshaking = true;
    w.tls_start(c);  // on_open once the handshake is done
  } else {
    w.on_open(c);
  }
  if (first_attempt && counted(c)) w.note_resolved();
  if (w.pending_ < w.options_.max_pending_connects && w.started_ < w.share_.connections) w.ramp();
}

void Worker::on_open(Conn& c) {
  handshake_over(c);
  if (counted(c)) ++result_.connections_established;
  ++open_;
  const bool reopened = c.was_open;
  opened_again(c);  // --auto-reconnect bookkeeping; resets the per-session state
  c.state = Conn::State::open;
  wheel_->cancel(c);
  uv_tcp_nodelay(&c.tcp, 1);
  // With --tls it has been reading since its handshake began.
  int rc = c.tls ? 0
                 : uv_read_start(reinterpret_cast<uv_stream_t*>(&c.tcp), &Worker::on_alloc,
                                 &Worker::on_read);
  if (rc < 0) {
    ++result_.errors[std::string("read_start:") + uv_err_name(rc)];
    return close_conn(c);
  }
  const std::uint64_t now = uv_hrtime();
  c.last_write_ns = now;
  c.next_send_ns = now;
  if (options_.mode == Mode::ws) {
    if (c.dead && !reopened) ++result_.dead_count;  // silent once its subscribe reply came
    return ws_open(c);
  }
  if (c.dead && !reopened) {
    ++result_.dead_count;
    // Nothing will ever be exchanged: silent from the start, timed from connect.
    if (options_.message_interval.count() == 0 && options_.heartbeat.count() == 0) c.silent = true;
  }
  if (options_.mode == Mode::http) init_http(c);
  session_due(c);
}

void Worker::note_resolved() {
  if (++resolved_ >= share_.connections && !ramp_done_) {
    ramp_done_ = true;
    result_.ramp_ms = std::max<std::uint64_t>(1, elapsed_ms());
  }
}

void Worker::on_conn_timer(TimerEntry& e) {
  Conn& c = static_cast<Conn&>(e);
  Worker& w = *c.worker;
  if (c.state == Conn::State::connecting) return w.connect_failed(c, UV_ETIMEDOUT);
  if (c.state == Conn::State::backoff) return w.start_connect(c);
  if (c.state == Conn::State::open) w.session_due(c);
  if (c.state == Conn::State::closed && c.ws && c.ws->reconnect_waiting) {
    c.ws->reconnect_waiting = false;
    if (!w.stopping_) w.start_connect(c);
  }
}

void Worker::schedule_session(Conn& c) {
  std::uint64_t next = UINT64_MAX;
  if (!c.silent) {
    if (options_.message_interval.count() > 0 && !(options_.mode == Mode::http && c.awaiting))
      next = c.next_send_ns;
    if (options_.mode == Mode::rpc && options_.heartbeat.count() > 0)
      next = std::min<std::uint64_t>(
          next, c.last_write_ns + static_cast<std::uint64_t>(options_.heartbeat.count()));
  }
  if (next == UINT64_MAX) {
    wheel_->cancel(c);
    return;
  }
  wheel_->schedule_at(c, TimePoint(std::chrono::nanoseconds(next)));
}

void Worker::on_alloc(uv_handle_t* h, std::size_t, uv_buf_t* buf) {
  Worker& w = *static_cast<Conn*>(h->data)->worker;
  *buf = uv_buf_init(reinterpret_cast<char*>(w.read_buf_.get()), kReadBufferBytes);
}

void Worker::on_read(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf) {
  Conn& c = *static_cast<Conn*>(s->data);
  Worker& w = *c.worker;
  if (nread > 0) {
    w.result_.bytes_received += static_cast<std::uint64_t>(nread);
    const auto* data = reinterpret_cast<const std::uint8_t*>(buf->base);
    if (c.tls)
      w.tls_data(c, data, static_cast<std::size_t>(nread));
    else
      w.on_data(c, data, static_cast<std::size_t>(nread));
  } else if (nread < 0) {
    if (c.state == Conn::State::connecting)  // the server left during the TLS handshake
      return w.connect_failed(c, static_cast<int>(nread));
    if (nread == UV_EOF) w.finish_http(c);
    w.server_closed(c, "read", static_cast<int>(nread));
  }
}

void Worker::server_closed(Conn& c, const char* what, int uv_code) {
  if (c.state != Conn::State::open) return;
  // After a close 1012 the server's FIN (or reset) is its restart: not a
  // live connection lost, one that comes back.
  if (c.ws != nullptr && c.ws->restart_closed) return ws_restarting(c);
  ++closed_by_server_;
  if (c.dead) {
    ++result_.dead_closed;
    const std::uint64_t after_ns = uv_hrtime() - c.last_write_ns;
    result_.dead_close_ms.record(after_ns / 1'000'000);
    const auto expect = static_cast<std::uint64_t>(options_.expect_idle_close.count());
    if (expect > 0) {
      // Early: sooner than T after the first moment the server's clock may
      // have started (ws mode: the upgrade; see WsConn::upgrade_sent_ns).
      const std::uint64_t since_ns =
          uv_hrtime() - (c.ws != nullptr ? c.ws->upgrade_sent_ns : c.last_write_ns);
      if (since_ns + kEarlyToleranceNs < expect)
        ++result_.dead_closed_early;
      else if (after_ns > expect + static_cast<std::uint64_t>(options_.idle_close_slack.count()))
        ++result_.dead_closed_late;
    }
  } else {
    ++result_.live_closed_by_server;
    ++result_.errors[std::string(what) + ":" + uv_err_name(uv_code)];
  }
  connection_lost(c);
  close_conn(c);
}

void Worker::protocol_error(Conn& c, const char* what) {
  ++result_.errors[std::string("protocol:") + what];
  close_conn(c);
}

void Worker::send_bytes(Conn& c, const std::uint8_t* data, std::size_t len) {
  if (!c.tls) return send_raw(c, data, len);
  // Before encrypting: a record dropped after it was made would break the stream.
  if (c.tcp.write_queue_size > kMaxWriteBacklog) {
    ++result_.sends_dropped;
    return;
  }
  tls_send(c, std::string_view(reinterpret_cast<const char*>(data), len));
}

void Worker::send_raw(Conn& c, const std::uint8_t* data, std::size_t len) {
  auto* stream = reinterpret_cast<uv_stream_t*>(&c.tcp);
  std::size_t done = 0;
  // Stamped BEFORE the write: the server may read the bytes (and start its
  // idle clock) before write() returns here, and on a loaded machine the
  // write's wake-up of the server often preempts this thread on its way out
  // of write(). A stamp taken after it could be that preemption later than
  // the server's, and a dead connection then looked closed early (the
  // 300,000-connection run: 2 of 30,000 "0.24 s early", docs/BENCHMARKS.md).
  const std::uint64_t before = uv_hrtime();
  if (c.tcp.write_queue_size == 0) {
    const uv_buf_t b = uv_buf_init(reinterpret_cast<char*>(const_cast<std::uint8_t*>(data)),
                                   static_cast<unsigned>(len));
    const int rc = uv_try_write(stream, &b, 1);
    if (rc >= 0)
      done = static_cast<std::size_t>(rc);
    else if (rc != UV_EAGAIN)
      return server_closed(c, "write", rc);
    if (uv_hrtime() - before >= kEarlyToleranceNs) ++result_.slow_writes;
  } else if (c.tcp.write_queue_size > kMaxWriteBacklog) {
    ++result_.sends_dropped;
    return;
  }
  c.last_write_ns = before;
  result_.bytes_sent += len;
  if (done == len) return;
  // The kernel's buffer is full: keep a copy of the rest until it drains.
  const std::size_t rest = len - done;
  auto* pw = static_cast<PendingWrite*>(::operator new(offsetof(PendingWrite, data) + rest));
  pw->len = rest;
  std::memcpy(pw->data, data + done, rest);
  const uv_buf_t b = uv_buf_init(reinterpret_cast<char*>(pw->data), static_cast<unsigned>(rest));
  pw->req.data = &c;
  const int rc = uv_write(&pw->req, stream, &b, 1, &Worker::on_write);
  if (rc < 0) {
    ::operator delete(pw);
    server_closed(c, "write", rc);
  }
}

void Worker::on_write(uv_write_t* req, int status) {
  auto* pw = reinterpret_cast<PendingWrite*>(req);
  Conn& c = *static_cast<Conn*>(req->data);
  ::operator delete(pw);
  if (status < 0 && status != UV_ECANCELED) c.worker->server_closed(c, "write", status);
}

void Worker::close_conn(Conn& c) {
  handshake_over(c);
  if (c.state == Conn::State::backoff) {  // no handle: only the wait to cancel
    wheel_->cancel(c);
    c.state = Conn::State::closed;
    return;
  }
  if (c.state == Conn::State::closing || c.state == Conn::State::closed ||
      c.state == Conn::State::idle)
    return;
  if (c.state == Conn::State::open) --open_;
  c.state = Conn::State::closing;
  wheel_->cancel(c);
  uv_close(as_handle(&c.tcp), &Worker::on_closed);
}

void Worker::on_closed(uv_handle_t* h) {
  Conn& c = *static_cast<Conn*>(h->data);
  c.state = Conn::State::closed;
  free_http(c);
  tls_free(c);
  if (c.ws) c.worker->ws_closed(c);
  c.worker->retry_later(c);
}

bool Worker::write_line(const std::string& line) {
  std::size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::write(report_fd_, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

void Worker::progress() {
  std::uint64_t connect_failed = 0;
  for (const auto& [name, n] : result_.connect_errors) connect_failed += n;
  const nlohmann::json line = {{"type", "progress"},
                               {"open", open_},
                               {"attempted", result_.connections_attempted},
                               {"established", result_.connections_established},
                               {"connect_errors", connect_failed},
                               {"sent", result_.messages_sent},
                               {"received", result_.messages_received},
                               {"dead_closed", result_.dead_closed},
                               {"live_closed", result_.live_closed_by_server}};
  // A parent that went away cannot read us: stop instead of running blind.
  if (!write_line(line.dump() + "\n")) stop();
}

void Worker::stop() {
  if (stopping_) return;
  stopping_ = true;
  progress();
  for (std::uint64_t j = 0; j < started_; ++j) {
    const Conn& c = conns_[j];
    if (c.state == Conn::State::open) ++result_.open_at_end;
    if (c.state == Conn::State::connecting) ++result_.connects_unfinished;
  }
  result_.reconnect.down_at_end = down_;
  // The result is final now: hand it in BEFORE the teardown. Closing 15,000
  // sockets on a loaded machine can outlast --grace, and a worker the
  // supervisor kills then must not take its result with it.
  test_hook_before_report(share_.index);
  if (options_.mode == Mode::ws) ws_finish();
  const nlohmann::json line = {{"type", "result"}, {"result", result_.to_json()}};
  reported_ = write_line(line.dump() + "\n");
  test_hook_slow_teardown();
  for (std::uint64_t j = 0; j < started_; ++j) {
    Conn& c = conns_[j];
    if (options_.linger_reset &&
        (c.state == Conn::State::open || c.state == Conn::State::connecting)) {
      uv_os_fd_t fd;
      if (uv_fileno(as_handle(&c.tcp), &fd) == 0) {
        linger l{1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
      }
    }
    close_conn(c);
  }
  for (std::uint64_t p = 0; p < publisher_count_; ++p) close_conn(publishers_[p]);
  wheel_.reset();  // every entry is cancelled; its handles close on this run
  uv_close(as_handle(&ramp_timer_), nullptr);
  uv_close(as_handle(&progress_timer_), nullptr);
  uv_close(as_handle(&stop_timer_), nullptr);
  uv_close(as_handle(&sigterm_), nullptr);
  uv_close(as_handle(&sigint_), nullptr);
  uv_close(as_handle(&publish_timer_), nullptr);
  uv_close(as_handle(&reconnect_timer_), nullptr);
}

}  // namespace heartwheel::load
