// ws::NetHandler: the upgrade from HTTP, the connections' life (open, data,
// EOF, drain, close) and their timing on the connection's ping,
// pong_timeout and close_timeout slots. The sends are in connection.cpp.
// See heartwheel/ws/net_handler.h.
#include <heartwheel/net/connection.h>
#include <heartwheel/net/restart.h>
#include <heartwheel/ws/net_handler.h>

#include <stdexcept>

namespace heartwheel::ws {

using net::Deadline;

namespace {
constexpr std::size_t kMaxUserStorage = 4096;
}  // namespace

const char* to_string(SlowConsumerPolicy policy) noexcept {
  return policy == SlowConsumerPolicy::skip ? "skip" : "close";
}

void NetHandlerOptions::validate() const {
  session.validate();
  if (handshake.deflate.enabled) handshake.deflate.validate();
  if (ping_interval.count() < 0)
    throw std::invalid_argument("ws: ping_interval must not be negative (0 turns pings off)");
  if (ping_interval.count() > 0 && pong_timeout.count() <= 0)
    throw std::invalid_argument("ws: pong_timeout must be positive when pings are on");
  if (close_timeout.count() <= 0)
    throw std::invalid_argument(
        "ws: close_timeout must be positive (it bounds how long a peer may take to answer our "
        "close frame)");
  if (user_storage_bytes > kMaxUserStorage)
    throw std::invalid_argument(
        "ws: user_storage_bytes must be at most 4096 (it is paid by every connection; keep a "
        "pointer to anything larger)");
}

NetHandler::NetHandler(NetHandlerOptions options, Application& application)
    : options_(std::move(options)), app_(application) {
  options_.validate();
  if (options_.handshake.deflate.enabled)
    deflate_pool_ = std::make_unique<DeflatePool>(options_.handshake.deflate, &stats_);
}

NetHandler::~NetHandler() {
  // Connections whose server was destroyed first (abandoned: no net
  // on_close): the application still hears of each one.
  while (head_ != nullptr) finish(*head_, net::CloseReason::local);
}

Connection* NetHandler::of(const net::Connection& conn) noexcept {
  return static_cast<Connection*>(conn.user_data());
}

bool NetHandler::upgrade(const http::Request& request, http::Responder responder,
                         OpenHandler on_open) {
  HandshakeResult handshake = accept_handshake(request, options_.handshake);
  if (!handshake.accepted()) {
    ++stats_.handshakes_refused;
    http::Response refusal = http::Response::text(handshake.status, handshake.error + "\n");
    for (http::Header& h : handshake.headers) refusal.headers.push_back(std::move(h));
    responder.respond(std::move(refusal));
    return false;
  }
  const bool switched = responder.upgrade(
      std::move(handshake.headers),
      [this, open = std::move(on_open), deflate = handshake.deflate](
          net::Connection& conn, std::string rest) { attach(conn, rest, open, deflate); });
  if (!switched) responder.respond(503, "Service Unavailable\n");  // draining
  return switched;
}

void NetHandler::attach(net::Connection& conn, std::string_view rest, OpenHandler on_open,
                        const DeflateParams& deflate) {
  if (deflate.enabled && !deflate_pool_)
    throw std::invalid_argument(
        "ws::NetHandler::attach: compression agreed but handshake.deflate is not enabled");
  // The connection reaches its handler (the owner) through the net
  // connection: set first, the constructor reads the options through it.
  conn.set_handler(*this);
  auto* c = Connection::make(*this, conn, options_.user_storage_bytes);
  if (deflate.enabled) {
    c->session_.use_deflate(deflate);
    ++stats_.compression_negotiated;
  }
  c->next_ = head_;
  if (head_ != nullptr) head_->prev_ = c;
  head_ = c;
  ++count_;
  ++stats_.opened;
  ++stats_.current;
  conn.set_user_data(c);
  if (options_.ping_interval.count() > 0) conn.set_timeout(Deadline::ping, options_.ping_interval);
  if (on_open) on_open(*c);
  if (!rest.empty() && !conn.closing()) c->session_.feed(rest);
}

void NetHandler::on_data(net::Connection& conn, std::string_view data) {
  Connection* c = of(conn);
  if (c == nullptr) return;
  // Any byte is life: the ping in flight needs no particular answer. A store.
  if (conn.deadline(Deadline::pong_timeout) != kNever) conn.clear_deadline(Deadline::pong_timeout);
  c->session_.feed(data);
}

net::DeadlineAction NetHandler::on_deadline(net::Connection& conn, net::DeadlineEvent event) {
  Connection* c = of(conn);
  if (c == nullptr) return net::DeadlineAction::close;
  if (event.kind == Deadline::ping) return on_ping_due(*c);
  if (event.kind == Deadline::pong_timeout) {
    ++stats_.pong_timeouts;  // closed with reason pong_timeout
    return net::DeadlineAction::close;
  }
  if (event.kind == deadline::close_timeout) {
    ++stats_.close_timeouts;  // closed with ws's reason close_timeout
    return net::DeadlineAction::close;
  }
  // The application's own kinds, its idle policy, max age, ...
  return app_.on_deadline(*c, event);
}

net::DeadlineAction NetHandler::on_ping_due(Connection& c) {
  if (c.session_.state() != Session::State::open) return net::DeadlineAction::keep;
  net::Connection& conn = *c.conn_;
  const TimePoint now = conn.timers().now();
  if (app_.send_ping(c) || !c.session_.ping()) {
    ++stats_.pings_sent;
    // The first unanswered ping starts the count; later pings do not move it.
    if (conn.deadline(Deadline::pong_timeout) == kNever)
      conn.set_deadline(Deadline::pong_timeout, deadline_after(now, options_.pong_timeout));
  }
  if (!conn.closing())
    conn.set_deadline(Deadline::ping, deadline_after(now, options_.ping_interval));
  return net::DeadlineAction::keep;
}

void NetHandler::arm_close_timeout(Connection& c) {
  net::Connection& conn = *c.conn_;
  if (conn.closing()) return;
  // While the close handshake runs no pings go out; its timeout bounds the wait.
  conn.clear_deadline(Deadline::ping);
  conn.clear_deadline(Deadline::pong_timeout);
  conn.set_timeout(deadline::close_timeout, options_.close_timeout);
}

void NetHandler::finish_timers(net::Connection& conn) noexcept {
  conn.clear_deadline(Deadline::ping);
  conn.clear_deadline(Deadline::pong_timeout);
  conn.clear_deadline(deadline::close_timeout);
}

void NetHandler::on_writable(net::Connection& conn, bool writable) {
  Connection* c = of(conn);
  if (c == nullptr) return;
  if (writable && c->session_.waiting_turn()) {
    // The turn Connection::yield_turn asked for (or a drain: either way the
    // waiting bytes go first).
    conn.resume_reading();
    c->session_.resume();
    if (c->eof_pending_ && !c->session_.waiting_turn()) {
      end_of_input(conn);
      return;
    }
    if (conn.closing()) return;
  }
  // The queue emptied (Connection::backlogged asked to hear it): the pong
  // held back goes now.
  if (writable && conn.queued_bytes() == 0) c->session_.send_owed_pong();
  // The application hears watermark crossings only (a turn comes only while
  // the connection is writable).
  if (writable == !c->unwritable_) return;
  c->unwritable_ = !writable;
  app_.on_writable(*c, writable);
}

void NetHandler::on_eof(net::Connection& conn) {
  Connection* c = of(conn);
  if (c != nullptr && c->session_.waiting_turn()) {
    c->eof_pending_ = true;  // after the bytes that wait for their turn
    return;
  }
  end_of_input(conn);
}

void NetHandler::end_of_input(net::Connection& conn) noexcept {
  // After a complete close handshake the close is under way already; before
  // it, the peer left without a close frame (1006). Either way: what is
  // queued may still reach a half-closed peer, then close.
  finish_timers(conn);
  conn.close_after_flush(net::CloseReason::peer_closed);
}

void NetHandler::on_drain(net::Connection& conn) {
  Connection* c = of(conn);
  if (c == nullptr || c->session_.state() == Session::State::closed) {
    conn.close_after_flush(net::CloseReason::drain);
    return;
  }
  c->draining_ = true;
  // Already closing: the close timeout runs. Otherwise: 1001 (1012 when a
  // restart's successor took over: come back at once), then the same.
  if (!c->session_.close_sent()) {
    if (net::restart::replaced())
      (void)c->close(kCloseServiceRestart, "service restart");
    else
      (void)c->close(kCloseGoingAway, "server shutting down");
  }
}

void NetHandler::on_close(net::Connection& conn, net::CloseReason reason, std::error_code) {
  if (Connection* c = of(conn)) finish(*c, reason);
}

void NetHandler::finish(Connection& c, net::CloseReason reason) {
  const Session& s = c.session_;
  CloseInfo info;
  info.code = s.close_received() ? s.received_close_code() : kCloseAbnormal;
  info.sent_code = s.sent_close_code();
  info.reason = reason;
  if (s.close_sent()) ++stats_.close_codes_sent[s.sent_close_code()];
  if (s.close_received())
    ++stats_.close_codes_received[s.received_close_code()];
  else
    ++stats_.abnormal_closes;
  ++stats_.closed_by_reason[static_cast<std::size_t>(reason)];
  --stats_.current;
  try {
    app_.on_close(c, info);
  } catch (...) {
    // No exception crosses the loop; the connection is gone either way.
  }
  c.conn_->set_user_data(nullptr);
  if (c.prev_ != nullptr)
    c.prev_->next_ = c.next_;
  else
    head_ = c.next_;
  if (c.next_ != nullptr) c.next_->prev_ = c.prev_;
  --count_;
  Connection::destroy(c);
}

}  // namespace heartwheel::ws
