// The HTTP session on a net::Connection: a thin adapter, so that every
// protocol decision stays in the I/O-free Session (and its unit tests). Each
// Transport operation is one Connection call.
#include <heartwheel/common/error.h>
#include <heartwheel/http/net_handler.h>
#include <heartwheel/net/connection.h>

namespace heartwheel::http {

struct NetHandler::Conn final : Transport {
  Conn(NetHandler& h, net::Connection& c)
      : owner(&h), conn(&c), session(h.options_, h.handler_, *this, h.stats_) {}

  void send(std::string_view head, std::string_view body) override {
    if (const std::error_code ec = conn->write({head, body}))
      conn->close(net::CloseReason::error, ec);  // a no-op if it is closing already
  }
  void send_shared(std::string_view head, std::shared_ptr<const std::string> body) override {
    if (const std::error_code ec = conn->write(head, std::move(body)))
      conn->close(net::CloseReason::error, ec);
  }
  void close(CloseMode mode, net::CloseReason reason) override {
    if (mode == CloseMode::kAbort)
      conn->close(reason);
    else
      conn->close_after_flush(reason);
  }
  void set_reading(bool on) override {
    if (on)
      conn->resume_reading();
    else
      conn->pause_reading();
  }
  bool writable() const noexcept override { return conn->writable(); }
  std::size_t queued_bytes() const noexcept override { return conn->queued_bytes(); }
  void notify_when_drained() override { conn->notify_when_drained(); }
  bool yield_turn() override { return conn->call_next_turn(); }
  TimerService& timers() noexcept override { return conn->timers(); }
  void set_deadline(net::Deadline slot, TimePoint when) override {
    // Keep-alive (and the wait for a first byte) is the idle time between
    // messages: under overload it shrinks like the server's idle timeouts
    // (net/overload.h), scaled when it starts.
    if (slot == deadline::keepalive_timeout && when != kNever) {
      const TimePoint now = conn->timers().now();
      if (when > now) when = deadline_after(now, conn->scale_idle_timeout(when - now));
    }
    conn->set_deadline(slot, when);
  }
  void begin_request(Duration timeout) override { conn->begin_request(timeout); }
  void end_request() override { conn->end_request(); }
  // The session's last act (see Transport::switch_protocols): free it, then
  // give the connection to the new protocol.
  void switch_protocols(UpgradeHandler take_over, std::string rest) override {
    net::Connection& c = *conn;
    owner->forget(this);      // deletes this: only locals from here on
    if (c.closing()) return;  // the 101 could not be written: nothing to hand over
    c.resume_reading();       // the session paused it at the upgrade request
    try {
      take_over(c, std::move(rest));
    } catch (...) {
      c.close(net::CloseReason::error, make_error_code(errc::protocol_error));
    }
  }

  NetHandler* owner;
  net::Connection* conn;
  Session session;
  Conn* next = nullptr;
  Conn* prev = nullptr;
};

NetHandler::NetHandler(SessionOptions options, http::Handler handler)
    : options_(std::move(options)), handler_(std::move(handler)) {
  options_.validate();
}

NetHandler::~NetHandler() {
  // Connections a destroyed net::Server abandoned (closed without on_close):
  // free their sessions here, which tells pending Responders (their
  // on_abandon may cancel wheel entries: the loop's wheel must still be
  // alive, as it is when the handler goes before it, as in runtime::Workers).
  while (head_ != nullptr) {
    Conn* c = head_;
    head_ = c->next;
    delete c;
  }
  count_ = 0;
  if (publish_) publish_(stats_);
}

void NetHandler::on_open(net::Connection& conn) {
  // The send timeout is the connection's write-stall rule. Same value as the
  // server's: nothing to do (no per-connection allocation).
  if (conn.write_policy().stall_timeout != options_.send_timeout) {
    net::WritePolicy policy = conn.write_policy();
    policy.stall_timeout = options_.send_timeout;
    conn.set_write_policy(policy);
  }
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

net::DeadlineAction NetHandler::on_deadline(net::Connection& conn, net::DeadlineEvent event) {
  auto* c = static_cast<Conn*>(conn.user_data());
  return c != nullptr ? c->session.on_deadline(event.kind) : net::DeadlineAction::close;
}

void NetHandler::on_writable(net::Connection& conn, bool writable) {
  if (auto* c = static_cast<Conn*>(conn.user_data())) c->session.on_writable(writable);
}

void NetHandler::on_eof(net::Connection& conn) {
  // Not the default (close at once): pipelined requests already received are
  // still answered, then the session closes.
  if (auto* c = static_cast<Conn*>(conn.user_data())) c->session.on_eof();
}

void NetHandler::on_drain(net::Connection& conn) {
  // Idle: closes now. Busy: the answers in flight go out, the last with
  // Connection: close, then the session closes (reason drain).
  if (auto* c = static_cast<Conn*>(conn.user_data()))
    c->session.drain();
  else
    conn.close_after_flush(net::CloseReason::drain);
}

void NetHandler::on_close(net::Connection& conn, net::CloseReason reason, std::error_code) {
  auto* c = static_cast<Conn*>(conn.user_data());
  if (c == nullptr) return;
  if (reason == net::CloseReason::write_stall) ++stats_.send_timeouts;
  // The session counted its own decision; count the connection's otherwise.
  if (!c->session.closed()) ++stats_.closed_by_reason[static_cast<std::size_t>(reason)];
  forget(c);  // ~Session: pending Responders become inactive
  if (publish_) publish_(stats_);
}

// Unlinks and frees a session: its connection closed, or switched protocols.
void NetHandler::forget(Conn* c) noexcept {
  c->conn->set_user_data(nullptr);
  if (c->prev != nullptr)
    c->prev->next = c->next;
  else
    head_ = c->next;
  if (c->next != nullptr) c->next->prev = c->prev;
  --count_;
  delete c;
}

}  // namespace heartwheel::http
