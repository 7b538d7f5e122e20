// ws::Client: the opening handshake, the session and the timing slots on a
// net::Connector's connections (heartwheel/ws/client.h).
#include <heartwheel/common/error.h>
#include <heartwheel/net/address.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/ws/client.h>
#include <heartwheel/ws/deadlines.h>

#include <stdexcept>

namespace heartwheel::ws {

std::shared_ptr<const ClientOptions> shared_client_options(ClientOptions o) {
  if (!o.address.empty()) {
    const net::HostPort hp = net::parse_host_port(o.address);
    o.connector.host = hp.host;
    o.connector.port = hp.port;
    if (o.handshake.host.empty()) o.handshake.host = o.address;
  }
  return std::make_shared<const ClientOptions>(std::move(o));
}

namespace {

// The connector's options, sharing the client options' lifetime.
std::shared_ptr<const net::ConnectorOptions> connector_of(
    const std::shared_ptr<const ClientOptions>& o) {
  if (!o) throw std::invalid_argument("ws client: options are required");
  o->validate();
  return {o, &o->connector};
}

}  // namespace

void ClientOptions::validate() const {
  if (session.role != Role::client)
    throw std::invalid_argument("ws client: session.role must be Role::client");
  session.validate();
  handshake.validate();
  connector.validate();
  if (handshake_timeout.count() <= 0)
    throw std::invalid_argument("ws client: handshake_timeout must be positive");
  if (ping_interval.count() < 0)
    throw std::invalid_argument("ws client: ping_interval must not be negative");
  if (ping_interval.count() > 0 && pong_timeout.count() <= 0)
    throw std::invalid_argument("ws client: pong_timeout must be positive when pinging");
  if (close_timeout.count() <= 0)
    throw std::invalid_argument("ws client: close_timeout must be positive");
}

Client::Client(LoopWheel& wheel, ClientHandler& handler, ClientOptions options)
    : Client(wheel, handler, shared_client_options(std::move(options))) {}

Client::Client(LoopWheel& wheel, ClientHandler& handler,
               std::shared_ptr<const ClientOptions> options, net::NetStats* shared_stats)
    : options_(std::move(options)),
      handler_(&handler),
      connector_(wheel, static_cast<net::Handler&>(*this), connector_of(options_), shared_stats) {}

Client::~Client() = default;  // the connector abandons an open connection (no callbacks)

void Client::start(Duration delay) {
  stopped_ = false;
  connector_.start(delay);
}

void Client::stop() {
  stopped_ = true;
  connector_.stop_reconnecting();
  if (!conn_) return;
  if (session_ && session_->state() == Session::State::open && !silent_) {
    close(kCloseNormal);
  } else if (!session_ || session_->state() != Session::State::closing) {
    conn_->close(net::CloseReason::local);
  }
}

bool Client::is_open() const noexcept {
  return conn_ && !conn_->closing() && session_ && session_->state() == Session::State::open &&
         !silent_;
}

std::error_code Client::checked(std::error_code ec) {
  // A full write queue closed the connection: say so.
  if (!ec && conn_ && conn_->closing() && conn_->close_reason() == net::CloseReason::slow_consumer)
    return make_error_code(errc::limit_reached);
  return ec;
}

std::error_code Client::send_text(std::string_view payload) {
  if (!is_open()) return make_error_code(errc::closed);
  return checked(session_->send_text(payload));
}

std::error_code Client::send_binary(std::string_view payload) {
  if (!is_open()) return make_error_code(errc::closed);
  return checked(session_->send_binary(payload));
}

std::error_code Client::ping(std::string_view payload) {
  if (!is_open()) return make_error_code(errc::closed);
  return checked(session_->ping(payload));
}

std::error_code Client::close(std::uint16_t code, std::string_view reason) {
  if (!is_open()) return make_error_code(errc::closed);
  const std::error_code ec = session_->close(code, reason);
  if (ec) return ec;
  if (conn_ && !conn_->closing()) {
    conn_->clear_deadline(net::Deadline::ping);
    conn_->clear_deadline(net::Deadline::pong_timeout);
    conn_->set_timeout(deadline::close_timeout, options_->close_timeout);
  }
  return {};
}

void Client::go_silent() noexcept {
  silent_ = true;
  if (!conn_) return;
  conn_->clear_deadline(net::Deadline::ping);
  conn_->clear_deadline(net::Deadline::pong_timeout);
}

void Client::reset() noexcept {
  if (conn_) conn_->reset(net::CloseReason::local);
}

// ---- the connection ------------------------------------------------------------

void Client::on_open(net::Connection& conn) {
  conn_ = &conn;
  opened_ = false;
  silent_ = false;
  received_code_ = 0;
  close_reason_.reset();
  session_.reset();
  try {
    handshake_ = std::make_unique<ClientHandshake>(options_->handshake);
  } catch (const std::exception&) {  // no randomness for the key: nothing to send
    conn.close(net::CloseReason::error, make_error_code(errc::invalid_argument));
    return;
  }
  conn.set_timeout(deadline::handshake_timeout, options_->handshake_timeout);
  conn.write(handshake_->request());
}

void Client::on_data(net::Connection& conn, std::string_view data) {
  if (silent_) return;
  if (conn.deadline(net::Deadline::pong_timeout) != kNever)
    conn.clear_deadline(net::Deadline::pong_timeout);  // any byte is life
  if (handshake_) {
    handshake_bytes(conn, data);
    return;
  }
  if (session_) session_->feed(data);
}

void Client::handshake_bytes(net::Connection& conn, std::string_view data) {
  switch (handshake_->feed(data)) {
    case ClientHandshake::Status::need_more:
      return;
    case ClientHandshake::Status::refused:
      handler_->on_handshake_failed(*this, *handshake_);
      handshake_.reset();
      conn.close(net::CloseReason::protocol_error);
      return;
    case ClientHandshake::Status::accepted:
      break;
  }
  conn.clear_deadline(deadline::handshake_timeout);
  session_.emplace(static_cast<SessionOwner&>(*this), options_->session);
  opened_ = true;
  if (options_->ping_interval.count() > 0)
    conn.set_timeout(net::Deadline::ping, options_->ping_interval);
  const std::unique_ptr<ClientHandshake> done = std::move(handshake_);
  handler_->on_open(*this, *done);
  // The server's first frames may have come with its 101.
  if (!data.empty() && session_ && !conn.closing() && !silent_) session_->feed(data);
}

net::DeadlineAction Client::on_deadline(net::Connection& conn, net::DeadlineEvent event) {
  if (event.kind == net::Deadline::ping) {
    if (silent_ || !session_ || session_->state() != Session::State::open)
      return net::DeadlineAction::keep;
    session_->ping();
    if (conn.deadline(net::Deadline::pong_timeout) == kNever)
      conn.set_timeout(net::Deadline::pong_timeout, options_->pong_timeout);
    conn.set_timeout(net::Deadline::ping, options_->ping_interval);
    return net::DeadlineAction::keep;
  }
  // handshake_timeout, pong_timeout, close_timeout and the idle policy's:
  // close with that slot's reason.
  return net::DeadlineAction::close;
}

void Client::on_eof(net::Connection& conn) {
  // The server's FIN: after a close handshake, the normal end; else the
  // connection ended abnormally (1006 unless a close frame came).
  conn.close_after_flush(session_ && session_->close_received() ? net::CloseReason::protocol_close
                                                                : net::CloseReason::peer_closed);
}

void Client::on_close(net::Connection&, net::CloseReason reason, std::error_code error) {
  if (handshake_ && !silent_) {
    // Cut off in the handshake: its answer never came whole.
    handshake_->end_of_input();
  }
  ClientCloseInfo info;
  info.code = received_code_ ? received_code_ : kCloseAbnormal;
  if (close_reason_) info.reason = *close_reason_;
  info.sent_code = session_ ? session_->sent_close_code() : 0;
  info.net_reason = reason;
  info.error = error;
  info.was_open = opened_;
  conn_ = nullptr;
  handshake_.reset();
  handler_->on_close(*this, info);
  session_.reset();  // not from inside its own callbacks: net's close comes on a later turn
  close_reason_.reset();
}

// ---- the session's transport and events ---------------------------------------------

void Client::send(std::string_view head, std::string_view payload) {
  if (!conn_ || silent_) return;
  const std::error_code ec = conn_->write({head, payload});
  if (ec == errc::limit_reached) conn_->close(net::CloseReason::slow_consumer, ec);
}

void Client::close() {
  // The close handshake is complete (or failed): TCP closes once flushed.
  if (!conn_) return;
  conn_->clear_deadline(net::Deadline::ping);
  conn_->clear_deadline(net::Deadline::pong_timeout);
  conn_->clear_deadline(deadline::close_timeout);
  conn_->close_after_flush(session_ && session_->failed() ? net::CloseReason::protocol_error
                                                          : net::CloseReason::protocol_close);
}

void Client::on_message(Session&, MessageType type, std::string& payload) {
  handler_->on_message(*this, type, payload);
}

void Client::on_ping(Session&, std::string_view payload) { handler_->on_ping(*this, payload); }

void Client::on_pong(Session&, std::string_view payload) { handler_->on_pong(*this, payload); }

void Client::on_close(Session&, std::uint16_t code, std::string_view reason) {
  received_code_ = code;
  if (!reason.empty()) close_reason_ = std::make_unique<std::string>(reason);
  // A restarting server spreads these closes over its drain window: come
  // back at once, even from a connection younger than stable_after (which
  // would otherwise count as a failed attempt and grow the backoff).
  if (code == kCloseServiceRestart) connector_.reconnect_promptly();
}

void Client::on_protocol_error(Session&, std::uint16_t, std::string_view) {}

}  // namespace heartwheel::ws
