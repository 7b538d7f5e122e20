// See heartwheel/net/connector.h. States: idle -> attempting (attempt_ set,
// timer = connect timeout) -> connected (conn_ set) -> closed -> backing off
// (timer = retry) -> attempting ...
#include <heartwheel/net/connector.h>

#include <cmath>
#include <stdexcept>
#include <string_view>
#include <utility>

#include <heartwheel/common/error.h>
#include <heartwheel/net/address.h>

#include "random.h"

namespace heartwheel::net {

struct Connector::Attempt {
  uv_connect_t req;
  Connector* owner;  // null once abandoned (timeout, stop, destruction)
  Connection* conn;
};

void ConnectorOptions::validate() const {
  if (port <= 0 || port > 65535)
    throw std::invalid_argument("connector: port " + std::to_string(port) +
                                " is out of range 1..65535");
  sockaddr_storage ss;
  if (to_sockaddr({host, port}, ss))
    throw std::invalid_argument("connector: host '" + host +
                                "' is not a numeric IPv4 or IPv6 address");
  if (!local_host.empty() && to_sockaddr({local_host, 0}, ss))
    throw std::invalid_argument("connector: local_host '" + local_host +
                                "' is not a numeric address");
  if (connect_timeout.count() <= 0)
    throw std::invalid_argument("connector: connect_timeout must be positive");
  if (backoff_initial.count() <= 0 || backoff_max < backoff_initial)
    throw std::invalid_argument("connector: need 0 < backoff_initial <= backoff_max");
  if (backoff_multiplier < 1.0)
    throw std::invalid_argument("connector: backoff_multiplier must be >= 1");
  if (backoff_jitter < 0 || backoff_jitter > 1)
    throw std::invalid_argument("connector: backoff_jitter is a fraction between 0 and 1");
  if (stable_after < Duration{0})
    throw std::invalid_argument("connector: stable_after must not be negative");
  connection.validate();
}

Duration ConnectorOptions::backoff(unsigned failures) const noexcept {
  if (failures == 0) return Duration{0};
  const double factor = std::pow(backoff_multiplier, static_cast<double>(failures - 1));
  const double nanos = static_cast<double>(backoff_initial.count()) * factor;
  if (nanos >= static_cast<double>(backoff_max.count())) return backoff_max;
  return Duration{static_cast<Duration::rep>(nanos)};
}

Connector::Connector(LoopWheel& wheel, Handler& handler, ConnectorOptions options)
    : Connector(wheel, handler, std::make_shared<const ConnectorOptions>(std::move(options))) {}

Connector::Connector(LoopWheel& wheel, Handler& handler,
                     std::shared_ptr<const ConnectorOptions> options, NetStats* shared_stats)
    : wheel_(wheel),
      handler_(handler),
      options_(std::move(options)),
      own_stats_(shared_stats ? nullptr : std::make_unique<NetStats>()),
      stats_(shared_stats ? shared_stats : own_stats_.get()) {
  if (!options_) throw std::invalid_argument("connector: options are required");
  options_->validate();
  timer_.owner = this;
}

Connector::~Connector() {
  abandon_attempt();
  if (conn_) {
    --stats_->current;  // abandoned: connection_closed() will not run for it
    abandon_connection(*conn_);
    conn_ = nullptr;
  }
}

void Connector::start(Duration delay) {
  if (started_) return;
  started_ = true;
  stopped_ = false;
  ignore_sigpipe();
  if (delay.count() > 0) {
    wheel_.schedule(timer_, delay);
  } else {
    attempt();
  }
}

void Connector::stop() {
  started_ = false;
  abandon_attempt();
  if (conn_) conn_->close(CloseReason::local);
}

void Connector::stop_reconnecting() noexcept {
  abandon_attempt();
  if (!conn_) started_ = false;
}

void Connector::abandon_attempt() noexcept {
  stopped_ = true;
  wheel_.cancel(timer_);
  if (!attempt_) return;
  attempt_->owner = nullptr;
  abandon_connection(*attempt_->conn);  // libuv then cancels the connect request
  attempt_ = nullptr;
}

void Connector::RetryEntry::fire(TimerEntry& e) { static_cast<RetryEntry&>(e).owner->on_timer(); }

void Connector::on_timer() {
  if (attempt_) {  // the connect timeout
    Attempt* a = attempt_;
    attempt_ = nullptr;
    a->owner = nullptr;
    abandon_connection(*a->conn);  // libuv then cancels the connect request
    attempt_failed(make_error_code(errc::timed_out));
    return;
  }
  if (!stopped_ && !conn_) attempt();
}

void Connector::attempt() {
  sockaddr_storage ss;
  if (auto ec = to_sockaddr({options_->host, options_->port}, ss)) {
    attempt_failed(ec);
    return;
  }
  auto* c = make_connection(handler_, next_id_++);
  if (const int rc = uv_tcp_init(wheel_.loop(), c->handle()); rc < 0) {
    delete c;
    attempt_failed(uv_error(rc));
    return;
  }
  int rc = 0;
  if (!options_->local_host.empty()) {
    sockaddr_storage local;
    to_sockaddr({options_->local_host, 0}, local);
    rc = uv_tcp_bind(c->handle(), reinterpret_cast<const sockaddr*>(&local), 0);
  }
  auto* a = new Attempt{};
  a->owner = this;
  a->conn = c;
  a->req.data = a;
  if (rc == 0)
    rc = uv_tcp_connect(&a->req, c->handle(), reinterpret_cast<const sockaddr*>(&ss), &on_connect);
  if (rc < 0) {
    delete a;
    abandon_connection(*c);
    attempt_failed(uv_error(rc));
    return;
  }
  attempt_ = a;
  wheel_.schedule(timer_, options_->connect_timeout);
}

void Connector::on_connect(uv_connect_t* req, int status) {
  auto* a = static_cast<Attempt*>(req->data);
  Connector* self = a->owner;
  Connection* c = a->conn;
  delete a;
  if (!self) return;  // abandoned: the connection is already closing
  self->attempt_ = nullptr;
  self->wheel_.cancel(self->timer_);
  if (status < 0) {
    abandon_connection(*c);
    self->attempt_failed(uv_error(status));
    return;
  }
  self->failures_before_open_ = self->failures_;
  self->failures_ = 0;
  self->opened_at_ = self->wheel_.now();
  self->prompt_ = false;
  ++self->connects_;
  NetStats& st = *self->stats_;
  ++st.accepted;
  if (++st.current > st.peak) st.peak = st.current;
  self->conn_ = c;
  open_connection(*c);
}

void Connector::attempt_failed(std::error_code ec) {
  ++stats_->connect_failures;
  ++failures_;
  const auto& o = *options_;
  Duration delay{-1};
  if (o.reconnect && !stopped_ && (o.max_attempts == 0 || failures_ < o.max_attempts)) {
    delay = o.backoff(failures_);
    delay -= detail::random_up_to(std::chrono::duration_cast<Duration>(delay * o.backoff_jitter));
    wheel_.schedule(timer_, delay);
  } else {
    started_ = false;
  }
  if (o.on_connect_error) o.on_connect_error(ec, delay);
}

void Connector::connection_closed(Connection& conn) noexcept {
  if (conn_ == &conn) conn_ = nullptr;
  --stats_->current;
  // A connection whose transport stage failed (a TLS handshake refused or
  // timed out) never reached the handler: for the application that is a
  // connect that failed, and it is retried as one.
  const bool never_ready = conn.in_byte_stage();
  const CloseReason reason = conn.close_reason();
  const bool prompt = std::exchange(prompt_, false);
  delete &conn;
  if (never_ready && !stopped_) {
    failures_ = failures_before_open_;
    // Every layer names its timeouts *_timeout (lib/src/net/README.md):
    // the stage's deadline passed, or the peer refused.
    const std::string_view name = to_string(reason);
    const bool timeout = name.size() >= 8 && name.substr(name.size() - 8) == "_timeout";
    attempt_failed(make_error_code(timeout ? errc::timed_out : errc::protocol_error));
    return;
  }
  if (stopped_ || !options_->reconnect) {
    started_ = false;
    return;
  }
  // A connection that was open for stable_after is not a failed attempt:
  // come back after the initial backoff (jittered), growing only if connects
  // then fail. One closed sooner counts as one more failure, unless the peer
  // asked to be called back (reconnect_promptly).
  const auto& o = *options_;
  Duration delay = o.backoff_initial;
  if (!prompt && wheel_.now() - opened_at_ < o.stable_after) {
    failures_ = failures_before_open_ + 1;
    delay = o.backoff(failures_);
  }
  delay -= detail::random_up_to(std::chrono::duration_cast<Duration>(delay * o.backoff_jitter));
  wheel_.schedule(timer_, delay);
}

}  // namespace heartwheel::net
