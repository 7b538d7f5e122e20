// The HTTP session on a net::Connection: a thin adapter, so that every
// protocol decision stays in the I/O-free Session (and its unit tests).
#include <heartwheel/http/net_handler.h>

#include <heartwheel/net/connection.h>

namespace heartwheel::http {

namespace {

net::CloseReason net_reason(CloseReason reason) noexcept {
  switch (reason) {
    case CloseReason::kPeerClosed: return net::CloseReason::peer_closed;
    case CloseReason::kKeepaliveTimeout:
    case CloseReason::kFirstByteTimeout: return net::CloseReason::read_idle;
    case CloseReason::kHeaderTimeout:
    case CloseReason::kBodyTimeout:
    case CloseReason::kRequestTimeout: return net::CloseReason::request_timeout;
    case CloseReason::kSendTimeout: return net::CloseReason::write_stall;
    case CloseReason::kBadRequest: return net::CloseReason::error;
    case CloseReason::kDrained: return net::CloseReason::drain;
    default: return net::CloseReason::local;
  }
}

SessionOptions without_send_timeout(SessionOptions o) {
  o.validate();
  o.send_timeout = Duration{0};  // the connection's write-stall rule does it
  return o;
}

}  // namespace

struct NetHandler::Conn final : Transport {
  Conn(NetHandler& h, net::Connection& c)
      : owner(&h), conn(&c), session(c.timers(), h.options_, h.handler_, *this, h.stats_) {}

  void send(std::string bytes) override {
    const std::size_t n = bytes.size();
    if (const std::error_code ec = conn->write(bytes)) {
      conn->close(net::CloseReason::error, ec);
      return;
    }
    session.on_sent(n);  // progress is the connection's business (write stall)
  }
  void close(CloseMode mode) override {
    const net::CloseReason reason = net_reason(session.close_reason());
    if (mode == CloseMode::kAbort) conn->close(reason);
    else conn->close_after_flush(reason);
  }
  void set_reading(bool on) override {
    if (on) conn->resume_reading();
    else conn->pause_reading();
  }
  void set_busy(bool busy) override {
    if (busy) conn->begin_request(Duration{0});  // no net deadline: the session has its own
    else conn->end_request();
  }

  NetHandler* owner;
  net::Connection* conn;
  Session session;
  Conn* next = nullptr;
  Conn* prev = nullptr;
};

NetHandler::NetHandler(SessionOptions options, http::Handler handler)
    : options_(without_send_timeout(std::move(options))), handler_(std::move(handler)) {}

NetHandler::~NetHandler() {
  // Connections a destroyed net::Server abandoned (closed without on_close):
  // free their sessions here, which cancels their wheel entries and tells
  // pending Responders. The loop's wheel must still be alive (it is when the
  // handler is destroyed before it, as in net::Workers).
  while (head_ != nullptr) {
    Conn* c = head_;
    head_ = c->next;
    delete c;
  }
  count_ = 0;
  if (publish_) publish_(stats_);
}

void NetHandler::on_open(net::Connection& conn) {
  auto* c = new Conn(*this, conn);
  conn.set_user_data(c);
  c->next = head_;
  if (head_ != nullptr) head_->prev = c;
  head_ = c;
  ++count_;
  c->session.start();
}

void NetHandler::on_data(net::Connection& conn, std::string_view data) {
  if (auto* c = static_cast<Conn*>(conn.user_data())) c->session.on_data(data);
}

void NetHandler::on_eof(net::Connection& conn) {
  // Not the default (close at once): pipelined requests already received are
  // still answered, then the session closes.
  if (auto* c = static_cast<Conn*>(conn.user_data())) c->session.on_eof();
}

void NetHandler::on_close(net::Connection& conn, net::CloseReason reason, std::error_code) {
  auto* c = static_cast<Conn*>(conn.user_data());
  if (c == nullptr) return;
  conn.set_user_data(nullptr);
  if (reason == net::CloseReason::write_stall) ++stats_.send_timeouts;
  if (c->prev != nullptr) c->prev->next = c->next;
  else head_ = c->next;
  if (c->next != nullptr) c->next->prev = c->prev;
  --count_;
  delete c;  // ~Session: pending Responders become inactive
  if (publish_) publish_(stats_);
}

void NetHandler::drain_sessions() {
  // Session::drain may close its connection; net closes are deferred to a
  // later loop iteration, so the list stays intact while we walk it.
  for (Conn* c = head_; c != nullptr; c = c->next) c->session.drain();
}

}  // namespace heartwheel::http
