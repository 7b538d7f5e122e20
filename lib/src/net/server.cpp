// See heartwheel/net/server.h.
#include <heartwheel/common/error.h>
#include <heartwheel/net/address.h>
#include <heartwheel/net/detail/ip_limiter.h>
#include <heartwheel/net/server.h>

#include <stdexcept>
#include <vector>

#include "edge_reader.h"
#include "uv_timers.h"

namespace heartwheel::net {

using detail::close_handle;
using detail::close_timer;
using detail::new_check;
using detail::new_idle;
using detail::new_timer;

struct Server::Listener {
  uv_tcp_t tcp;
  Server* owner;
};

void ServerOptions::validate() const {
  if (port < 0 || port > 65535)
    throw std::invalid_argument("server options: port " + std::to_string(port) +
                                " is out of range 0..65535");
  if (backlog <= 0) throw std::invalid_argument("server options: backlog must be positive");
  // 0 would leave libuv retrying an accept that fails with EMFILE forever
  // (a spinning loop): the pause is what breaks that cycle.
  if (accept_pause < std::chrono::milliseconds(1))
    throw std::invalid_argument(
        "server options: accept_pause must be at least 1ms (it stops the accept loop from "
        "spinning when descriptors run out)");
  sockaddr_storage ss;
  if (to_sockaddr({host, port}, ss))
    throw std::invalid_argument("server options: host '" + host +
                                "' is not a numeric IPv4 or IPv6 address");
  connection.validate();
  if (proxy_protocol && proxy_header_timeout.count() <= 0)
    throw std::invalid_argument(
        "server options: proxy_header_timeout must be positive with proxy_protocol");
  if (!proxy_protocol && !proxy_protocol_from.empty())
    throw std::invalid_argument("server options: proxy_protocol_from needs proxy_protocol");
  overload.validate();
  if (overload.drop_idle_at_limit && max_connections == 0)
    throw std::invalid_argument(
        "server options: overload.drop_idle_at_limit needs max_connections (the limit it acts at)");
}

Server::Server(LoopWheel& wheel, Handler& handler, ServerOptions options)
    : wheel_(wheel), handler_(handler), options_(std::move(options)) {
  options_.validate();
  setup_protection();
}

Server::~Server() {
  stop_listening();
  close_timer(drain_timer_);
  end_spread();
  close_timer(resume_timer_);
  close_handle(turn_check_);
  close_handle(turn_idle_);
  turns_.clear();      // the connections below are abandoned, not called back
  close_protection();  // gives back every connection's per-address count
  while (Connection* c = list_.front()) {
    list_.remove(*c);
    abandon_connection(*c);
  }
}

std::error_code Server::listen() {
  if (listener_) return make_error_code(errc::invalid_argument);
  if (draining_) return make_error_code(errc::shutting_down);
  ignore_sigpipe();
  sockaddr_storage ss;
  if (auto ec = to_sockaddr({options_.host, options_.port}, ss)) return ec;
  const auto* addr = reinterpret_cast<const sockaddr*>(&ss);
  listener_ = new Listener{};
  listener_->owner = this;
  if (const int rc = uv_tcp_init(loop(), &listener_->tcp); rc < 0) {
    delete listener_;
    listener_ = nullptr;
    return uv_error(rc);
  }
  listener_->tcp.data = listener_;
  int rc = 0;
  if (options_.listen_fd >= 0) {
    rc = uv_tcp_open(&listener_->tcp, options_.listen_fd);
  } else if (options_.reuse_port) {
    std::error_code ec;
    const int fd = open_reuseport_socket(addr, ec);
    if (fd < 0) {
      close_listener();
      return ec;
    }
    rc = uv_tcp_open(&listener_->tcp, fd);
  } else {
    rc = uv_tcp_bind(&listener_->tcp, addr, 0);
  }
  if (rc == 0)
    rc = uv_listen(reinterpret_cast<uv_stream_t*>(&listener_->tcp), options_.backlog,
                   &on_connection);
  if (rc < 0) {
    close_listener();
    return uv_error(rc);
  }
  sockaddr_storage bound{};
  int len = sizeof bound;
  rc = uv_tcp_getsockname(&listener_->tcp, reinterpret_cast<sockaddr*>(&bound), &len);
  if (rc < 0) {
    close_listener();
    return uv_error(rc);
  }
  port_ = port_of(reinterpret_cast<sockaddr*>(&bound));
  // Its connections will read through the loop's edge reader: it stays
  // while the server listens, not made and closed per connection.
  if (connection_options().edge_triggered_reads) holds_reader_ = detail::EdgeReader::hold(loop());
  return {};
}

int Server::listen_fd() const noexcept {
  if (!listener_) return -1;
  uv_os_fd_t fd = -1;
  if (uv_fileno(reinterpret_cast<const uv_handle_t*>(&listener_->tcp), &fd) < 0) return -1;
  return fd;
}

void Server::stop_listening() noexcept {
  if (resume_timer_) uv_timer_stop(resume_timer_);
  close_listener();
}

void Server::close_listener() noexcept {
  if (!listener_) return;
  if (holds_reader_) detail::EdgeReader::release(loop());
  holds_reader_ = false;
  accept_deferred_ = false;  // libuv closes the socket it held with the listener
  listener_->owner = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(&listener_->tcp),
           [](uv_handle_t* h) { delete static_cast<Listener*>(h->data); });
  listener_ = nullptr;
}

void Server::on_connection(uv_stream_t* stream, int status) {
  auto* l = static_cast<Listener*>(stream->data);
  Server* s = l->owner;
  if (!s) return;
  if (status < 0) {
    // libuv already shed the backlog with its reserve descriptor on EMFILE,
    // so returning here cannot spin.
    ++s->stats_.accept_errors;
    if (status == UV_EMFILE || status == UV_ENFILE) {
      ++s->stats_.fd_exhausted;
      // libuv's reserve descriptor is gone as well, and it would retry the
      // accept at once, forever. Closing the listener ends that loop.
      s->pause_accepting();
    }
    return;
  }
  const std::size_t batch = s->options_.accept_batch;
  if (batch != 0 && s->accepted_this_turn_ >= batch && s->turn_check_) {
    // Not taken: libuv keeps the socket and stops watching the listener
    // until uv_accept, which on_turn_end calls after this turn's I/O.
    if (!s->accept_deferred_) ++s->stats_.accept_deferrals;
    s->accept_deferred_ = true;
    return;
  }
  s->take_connection();
}

void Server::take_connection() noexcept {
  if (accepted_this_turn_++ == 0 && options_.accept_batch != 0) {
    if (!turn_check_) turn_check_ = new_check(loop(), this);
    // Without the check nothing would reset the count: accept without a bound.
    if (turn_check_) uv_check_start(turn_check_, &on_turn_end);
  }
  const std::size_t max = options_.max_connections;
  if (max != 0 && list_.size() - dropping_ >= max) {
    // At the limit: make room by closing the idlest connection, if allowed
    // and one qualifies (overload.h), else refuse the newcomer.
    Connection* victim = options_.overload.drop_idle_at_limit ? idlest() : nullptr;
    if (!victim) {
      reject_one();
      return;
    }
    drop(*victim);
  }
  accept_one();
}

void Server::on_turn_end(uv_check_t* check) {
  auto* s = static_cast<Server*>(check->data);
  uv_check_stop(check);
  s->accepted_this_turn_ = 0;
  if (!s->accept_deferred_ || !s->listener_) return;
  s->accept_deferred_ = false;
  s->take_connection();  // the held socket; uv_accept watches the listener again
}

bool Server::defer_to_next_turn(Connection& conn) noexcept {
  if (!turn_idle_ && !(turn_idle_ = new_idle(loop(), this))) return false;
  try {
    turns_.push_back(&conn);
  } catch (...) {
    return false;  // out of memory: the caller goes on now instead
  }
  // An active idle handle also keeps the next poll from blocking, and it is
  // referenced while there is work: the loop must not end with turns owed.
  uv_idle_start(turn_idle_, &on_turn_start);
  uv_ref(reinterpret_cast<uv_handle_t*>(turn_idle_));
  return true;
}

void Server::forget_turn(Connection& conn) noexcept {
  for (Connection*& c : turns_)
    if (c == &conn) c = nullptr;
}

// Runs before the turn's poll: the connections that yielded get their turn
// first, at most resume_batch of them; the poll then serves everyone else.
void Server::on_turn_start(uv_idle_t* idle) {
  auto* s = static_cast<Server*>(idle->data);
  const std::size_t batch = s->options_.resume_batch;
  std::size_t n = s->turns_.size();  // not those that ask again during this turn
  if (batch != 0 && batch < n) n = batch;
  for (; n > 0 && !s->turns_.empty(); --n) {
    Connection* c = s->turns_.front();
    s->turns_.pop_front();
    if (c) turn_arrived(*c);
  }
  if (s->turns_.empty()) {
    uv_idle_stop(idle);
    uv_unref(reinterpret_cast<uv_handle_t*>(idle));
  }
}

void Server::accept_one() noexcept {
  auto* c = make_connection(handler_, next_id_++);
  if (const int rc = uv_tcp_init(loop(), c->handle()); rc < 0) {
    ++stats_.accept_errors;
    delete c;
    return;
  }
  // Linked before anything can fail, so every path ends in connection_closed.
  const unsigned shift = activity_shift();
  list_.push_front(*c, shift ? activity_generation(wheel_.now(), shift) : 0);
  ++stats_.accepted;
  stats_.current = list_.size();
  if (stats_.current > stats_.peak) stats_.peak = stats_.current;
  update_pressure();
  if (const int rc = uv_accept(reinterpret_cast<uv_stream_t*>(&listener_->tcp),
                               reinterpret_cast<uv_stream_t*>(c->handle()));
      rc < 0) {
    ++stats_.accept_errors;
    c->close(CloseReason::error, uv_error(rc));
    return;
  }
  open_connection(*c);
}

void Server::reject_one() noexcept {
  auto* t = new uv_tcp_t;
  auto free_handle = [](uv_handle_t* h) { delete reinterpret_cast<uv_tcp_t*>(h); };
  if (uv_tcp_init(loop(), t) < 0) {
    delete t;
    return;
  }
  ++stats_.accepted;
  ++stats_.closed_by_reason[static_cast<std::size_t>(CloseReason::limit)];
  if (uv_accept(reinterpret_cast<uv_stream_t*>(&listener_->tcp),
                reinterpret_cast<uv_stream_t*>(t)) == 0 &&
      uv_tcp_close_reset(t, free_handle) == 0)
    return;
  uv_close(reinterpret_cast<uv_handle_t*>(t), free_handle);
}

void Server::pause_accepting() noexcept {
  if (!listener_) return;
  close_listener();
  ++stats_.accept_pauses;
  if (!resume_timer_ && !(resume_timer_ = new_timer(loop(), this))) {
    // No timer, no way to resume: better no listener than a spinning one.
    ++stats_.accept_errors;
    return;
  }
  uv_timer_start(resume_timer_, &on_resume_timer, to_uv_millis_ceil(options_.accept_pause), 0);
}

void Server::on_resume_timer(uv_timer_t* timer) {
  auto* s = static_cast<Server*>(timer->data);
  if (s->draining_ || s->listener_) return;
  s->options_.port = s->port_;  // the same port, also when it was picked by the kernel
  if (s->listen()) {
    // Still out of descriptors (or the port is gone): try again later.
    uv_timer_start(timer, &on_resume_timer, to_uv_millis_ceil(s->options_.accept_pause), 0);
  }
}

void Server::connection_closed(Connection& conn) noexcept {
  list_.remove(conn);
  if (spread_) forget_spread(conn);
  if (conn.close_reason() == CloseReason::overload && dropping_ > 0) --dropping_;
  if (limiter_) limiter_->release(ip_slot(conn));
  stats_.current = list_.size();
  delete &conn;
  update_pressure();
  if (draining_) check_drained();
}

void Server::for_each_connection(const std::function<void(Connection&)>& visit) {
  for (Connection* c = list_.front(); c; c = list_.next(*c)) visit(*c);
}

namespace {
std::vector<Connection*> snapshot(Connection* head) {
  std::vector<Connection*> all;
  for (Connection* c = head; c; c = ActivityList<Connection>::next(*c)) all.push_back(c);
  return all;
}
}  // namespace

void Server::close_all(CloseReason reason) {
  stop_listening();
  // close() only starts closing; the list changes in later close callbacks,
  // but collect first anyway so a handler reacting synchronously cannot bite.
  for (Connection* c : snapshot(list_.front())) c->close(reason);
}

void Server::drain(Duration timeout, std::function<void()> on_drained, Duration spread) {
  if (draining_) return;
  draining_ = true;
  on_drained_ = std::move(on_drained);
  stop_listening();
  if (spread.count() > 0 && !list_.empty())
    start_spread(spread);
  else
    for (Connection* c : snapshot(list_.front())) drain_connection(*c);
  if (!list_.empty()) {
    drain_timer_ = new_timer(loop(), this);
    if (drain_timer_) {
      uv_timer_start(drain_timer_, &on_drain_timer, to_uv_millis_ceil(timeout), 0);
    } else {
      // Without a timer the drain could wait forever: end it now.
      on_drain_timer_fired();
    }
  }
  check_drained();
}

void Server::drain_connection(Connection& conn) noexcept {
  if (conn.closing()) return;
  // The handler decides how to finish (Handler::on_drain); by default a
  // connection with a request in flight is left to request_ended().
  try {
    conn.handler().on_drain(conn);
  } catch (...) {
    ++stats_.handler_exceptions;
    conn.close(CloseReason::drain);
  }
}

void Server::request_ended(Connection& conn) noexcept {
  if (draining_ && !drain_timed_out_ && !conn.closing()) conn.close_after_flush(CloseReason::drain);
}

void Server::on_drain_timer(uv_timer_t* timer) {
  static_cast<Server*>(timer->data)->on_drain_timer_fired();
}

void Server::on_drain_timer_fired() {
  drain_timed_out_ = true;
  end_spread();
  for (Connection* c : snapshot(list_.front())) c->close(CloseReason::drain);
}

void Server::check_drained() {
  if (!draining_ || !list_.empty() || !on_drained_) return;
  if (drain_timer_) uv_timer_stop(drain_timer_);
  end_spread();
  auto done = std::move(on_drained_);
  on_drained_ = nullptr;
  done();
}

}  // namespace heartwheel::net
