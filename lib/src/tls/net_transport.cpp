// TLS as net's transport stage (see heartwheel/tls/net_transport.h): one
// Session per connection between the socket and the handler.
#include <heartwheel/common/error.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/tls/net_transport.h>
#include <heartwheel/tls/session.h>

#include <array>
#include <chrono>
#include <string>
#include <stdexcept>
#include <utility>

namespace heartwheel::tls {

net::CloseReason close_reason_for(FailureCause cause) noexcept {
  switch (cause) {
    case FailureCause::timeout: return close_reason::tls_handshake_timeout;
    case FailureCause::protocol_error: return close_reason::tls_protocol_error;
    case FailureCause::no_shared_cipher: return close_reason::tls_no_shared_cipher;
    case FailureCause::certificate: return close_reason::tls_certificate;
    case FailureCause::none:
    case FailureCause::other: break;
  }
  return close_reason::tls_failed;
}

namespace {

// Per loop thread: the plaintext of one feed() and the ciphertext of one
// read's answer and of one write. Separate strings because a handler that
// gets plaintext may write (nested in on_bytes).
constexpr std::size_t kPlaintextBuffer = 64 * 1024;
// A write's ciphertext string keeps its capacity up to this between writes
// (one large write must not pin its size on the thread for good).
constexpr std::size_t kKeptCapacity = 256 * 1024;

std::span<char> plaintext_buffer() noexcept {
  thread_local std::array<char, kPlaintextBuffer> buffer;
  return buffer;
}

std::string& read_out() noexcept {
  thread_local std::string s;
  return s;
}

std::string& write_out() noexcept {
  thread_local std::string s;
  return s;
}

void trim(std::string& s) noexcept {
  s.clear();
  if (s.capacity() > kKeptCapacity) std::string().swap(s);
}

// What a session's feed() wrote during one on_bytes call (the handshake's
// last flight: the tickets; a KeyUpdate's answer) waits for the end of that
// call and goes out in front of the first thing the handler writes meanwhile
// (its answer to the request that came with the client's Finished), or of
// the stage's close_notify or alert: one write() and one TCP segment where
// there were two. Per thread, for one transport at a time: a transport whose
// on_bytes runs while another's holds (nested) writes at once, as before.
struct Held {
  const void* owner = nullptr;
  std::string bytes;
};

Held& held() noexcept {
  thread_local Held h;
  return h;
}

class SessionTransport : public net::ByteStage {
 public:
  SessionTransport(Session session, Duration handshake_timeout) noexcept
      : session_(std::move(session)), handshake_timeout_(handshake_timeout) {}

  void start(net::Connection& conn) override {
    conn.set_timeout(deadline::tls_handshake_timeout, handshake_timeout_);
    std::string& out = read_out();
    out.clear();
    if (!session_.start(out)) {  // a client whose options allow no cipher
      fail(conn, out);
      return;
    }
    if (!out.empty()) net::ByteStageIo::write(conn, out);
  }

  ~SessionTransport() override {
    if (held().owner == this) release_held();
  }

  void on_bytes(net::Connection& conn, std::string_view bytes) override {
    Held& h = held();
    if (h.owner != nullptr) {  // nested in another's: write at once
      feed_all(conn, bytes);
      return;
    }
    h.owner = this;
    try {
      feed_all(conn, bytes);
    } catch (...) {  // the handler's: guarded() closes the connection
      release_held();
      throw;
    }
    flush_held(conn);
  }

  std::error_code write(net::Connection& conn, const std::string_view* parts,
                        std::size_t count) override {
    std::string& out = write_out();
    out.clear();
    take_held(out);
    for (std::size_t i = 0; i < count; ++i) {
      if (const std::error_code ec = session_.write(parts[i], out)) {
        trim(out);
        if (session_.failed()) conn.close(net::CloseReason::error, ec);
        return ec;
      }
    }
    const std::error_code ec = net::ByteStageIo::write(conn, out);
    trim(out);
    return ec;
  }

  void closing(net::Connection& conn, bool queue) override {
    std::string& out = write_out();
    out.clear();
    take_held(out);
    session_.close(out);
    if (queue) {
      net::ByteStageIo::write(conn, out);
    } else {
      net::ByteStageIo::write_now(conn, out);
    }
    trim(out);
  }

  void on_deadline(net::Connection& conn, net::DeadlineEvent event) override {
    if (event.kind == deadline::tls_handshake_timeout) {
      failed(FailureCause::timeout);
      conn.close(close_reason::tls_handshake_timeout);
    } else {
      conn.close(net::close_reason_for(event.kind));
    }
  }

  void on_eof(net::Connection& conn) override { conn.close(net::CloseReason::peer_closed); }

 protected:
  // The handshake failed (before the close): a client's hook says why.
  virtual void failed(FailureCause) {}
  const Session& session() const noexcept { return session_; }
  Duration handshake_timeout() const noexcept { return handshake_timeout_; }

 private:
  // on_bytes: feed() until the bytes are used up, delivering the plaintext.
  void feed_all(net::Connection& conn, std::string_view bytes) {
    Held& h = held();
    const std::span<char> plain = plaintext_buffer();
    std::string& out = read_out();
    for (;;) {
      out.clear();
      const FeedResult r = session_.feed(bytes, plain, out);
      bytes.remove_prefix(r.consumed);
      if (r.failed) {
        fail(conn, out);
        return;
      }
      if (!out.empty()) {
        if (h.owner == this) {
          h.bytes += out;
        } else if (net::ByteStageIo::write(conn, out)) {
          return;  // closed
        }
      }
      if (conn.closing()) return;
      if (r.handshake_done) {
        conn.clear_deadline(deadline::tls_handshake_timeout);
        if (!net::ByteStageIo::ready(conn, session_.resumed())) return;
      }
      if (r.plaintext > 0) {
        net::ByteStageIo::deliver(conn, std::string_view(plain.data(), r.plaintext));
        if (conn.closing()) return;
      }
      if (r.peer_closed) {
        net::ByteStageIo::end_of_stream(conn);
        return;
      }
      if (!r.plaintext_out_full) return;
    }
  }

  // The session failed: its alert goes out if the socket takes it now
  // (behind what is held: the alert's record number counts it).
  void fail(net::Connection& conn, const std::string& alert) {
    Held& h = held();
    if (h.owner == this && !h.bytes.empty()) {
      h.bytes += alert;
      net::ByteStageIo::write_now(conn, h.bytes);
      release_held();
    } else if (!alert.empty()) {
      net::ByteStageIo::write_now(conn, alert);
    }
    failed(session_.cause());
    conn.close(close_reason_for(session_.cause()));
  }

  // The held bytes, if this transport holds any, start `out` (empty).
  void take_held(std::string& out) noexcept {
    Held& h = held();
    if (h.owner != this || h.bytes.empty()) return;
    out.swap(h.bytes);  // the strings trade their buffers: no copy
  }

  // The end of on_bytes: what is still held goes out unless the
  // connection closed meanwhile; the thread's slot is free again.
  void flush_held(net::Connection& conn) {
    Held& h = held();
    if (h.owner != this) return;
    struct Release {  // also when the write throws (bad_alloc)
      SessionTransport& t;
      ~Release() { t.release_held(); }
    } release{*this};
    if (!h.bytes.empty() && !conn.closing()) net::ByteStageIo::write(conn, h.bytes);
  }

  void release_held() noexcept {
    Held& h = held();
    h.owner = nullptr;
    trim(h.bytes);
  }

  Session session_;
  // The stage's timeout, read once at start(): a copy here keeps the
  // transport free of its factory's lifetime.
  Duration handshake_timeout_;
};

// A client's transport: the server's plus the failure hook (kept out of the
// server's, which has many more connections and no use for it).
class ClientSessionTransport final : public SessionTransport {
 public:
  ClientSessionTransport(Session session, Duration handshake_timeout,
                         std::shared_ptr<const HandshakeFailureHook> hook) noexcept
      : SessionTransport(std::move(session), handshake_timeout), hook_(std::move(hook)) {}

 private:
  void failed(FailureCause cause) override {
    if (!hook_) return;
    const std::string message =
        cause == FailureCause::timeout
            ? "no handshake within " +
                  std::to_string(
                      std::chrono::duration_cast<std::chrono::milliseconds>(handshake_timeout())
                          .count()) +
                  " ms"
            : session().message();
    (*hook_)(cause, message);
  }

  std::shared_ptr<const HandshakeFailureHook> hook_;
};

void check(const std::shared_ptr<const Context>& context, Role role,
           const TransportOptions& options) {
  if (!context) throw std::invalid_argument("tls transport: no context");
  if (context->role() != role)
    throw std::invalid_argument(role == Role::server ? "tls transport: a server needs a server Context"
                                                     : "tls transport: a client needs a client Context");
  if (options.handshake_timeout.count() <= 0)
    throw std::invalid_argument("tls transport: handshake_timeout must be positive");
}

class ServerFactory final : public net::ByteStageFactory {
 public:
  ServerFactory(std::shared_ptr<Context> context, TransportOptions options)
      : context_(std::move(context)), options_(options) {}
  const std::shared_ptr<Context>& context() const noexcept { return context_; }
  std::unique_ptr<net::ByteStage> make(net::Connection&) noexcept override {
    try {
      return std::make_unique<SessionTransport>(Session::server(*context_),
                                                options_.handshake_timeout);
    } catch (...) {
      return nullptr;
    }
  }

 private:
  std::shared_ptr<Context> context_;
  TransportOptions options_;
};

class ClientFactory final : public net::ByteStageFactory {
 public:
  ClientFactory(std::shared_ptr<const Context> context, std::string server_name,
                std::string resume_key, TransportOptions options)
      : context_(std::move(context)),
        server_name_(std::move(server_name)),
        resume_key_(std::move(resume_key)),
        timeout_(options.handshake_timeout),
        hook_(options.on_failure
                  ? std::make_shared<const HandshakeFailureHook>(std::move(options.on_failure))
                  : nullptr) {}
  std::unique_ptr<net::ByteStage> make(net::Connection&) noexcept override {
    try {
      return std::make_unique<ClientSessionTransport>(
          Session::client(*context_, server_name_, resume_key_), timeout_, hook_);
    } catch (...) {
      return nullptr;
    }
  }

 private:
  std::shared_ptr<const Context> context_;
  std::string server_name_;
  std::string resume_key_;
  Duration timeout_;
  std::shared_ptr<const HandshakeFailureHook> hook_;
};

}  // namespace

std::shared_ptr<net::ByteStageFactory> server_transport(std::shared_ptr<Context> context,
                                                        TransportOptions options) {
  check(context, Role::server, options);
  return std::make_shared<ServerFactory>(std::move(context), options);
}

std::shared_ptr<Context> server_context(const net::ByteStageFactory* factory) noexcept {
  const auto* server = dynamic_cast<const ServerFactory*>(factory);
  return server ? server->context() : nullptr;
}

std::shared_ptr<net::ByteStageFactory> client_transport(std::shared_ptr<const Context> context,
                                                        std::string server_name,
                                                        std::string resume_key,
                                                        TransportOptions options) {
  check(context, Role::client, options);
  return std::make_shared<ClientFactory>(std::move(context), std::move(server_name),
                                         std::move(resume_key), std::move(options));
}

}  // namespace heartwheel::tls
