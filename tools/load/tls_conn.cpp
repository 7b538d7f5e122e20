// --tls: each connection's tls::Session between the socket and the mode's
// session code (worker.h). The handshake starts at the TCP connect, runs
// under the connect timeout, and on_open follows it; reads are fed through
// the session, sends are encrypted first. The handshake time goes to the
// tls_handshake_us histogram; resumed handshakes (--tls-resume) are counted.
#include <heartwheel/tls/context.h>
#include <heartwheel/tls/session.h>

#include <array>
#include <memory>
#include <new>
#include <string>

#include "tls_flags.h"
#include "worker.h"

namespace heartwheel::load {

namespace {
constexpr std::size_t kPlaintextBuffer = 64 * 1024;
}  // namespace

void Worker::tls_setup() {
  cli::ClientContextFlags c;
  c.ca = options_.tls_ca;
  c.insecure = options_.tls_insecure;
  c.session_cache = options_.tls_resume;
  tls_ = cli::client_context(c);
}

void Worker::tls_start(Conn& c) {
  // The handshake's start (on_open resets it; last_write_ns moves with every
  // handshake message sent).
  c.next_send_ns = uv_hrtime();
  const Endpoint& target = options_.targets[c.index % options_.targets.size()];
  const std::string& name = options_.tls_server_name.empty() ? target.host : options_.tls_server_name;
  try {
    c.tls = new tls::Session(tls::Session::client(
        *tls_, name, target.host + ":" + std::to_string(target.port)));
  } catch (const std::bad_alloc&) {
    ++result_.connect_errors["tls_other"];
    attempt_failed(c, "tls");
    return close_conn(c);
  }
  tls_out_.clear();
  if (!c.tls->start(tls_out_)) {
    ++result_.connect_errors[std::string("tls_") + tls::to_string(c.tls->cause())];
    attempt_failed(c, "tls");
    return close_conn(c);
  }
  if (const int rc = uv_read_start(reinterpret_cast<uv_stream_t*>(&c.tcp), &Worker::on_alloc,
                                   &Worker::on_read);
      rc < 0)
    return connect_failed(c, rc);
  send_raw(c, reinterpret_cast<const std::uint8_t*>(tls_out_.data()), tls_out_.size());
}

void Worker::tls_data(Conn& c, const std::uint8_t* data, std::size_t len) {
  thread_local std::array<char, kPlaintextBuffer> plain;
  std::string_view in(reinterpret_cast<const char*>(data), len);
  for (;;) {
    tls_out_.clear();
    const tls::FeedResult r = c.tls->feed(in, plain, tls_out_);
    in.remove_prefix(r.consumed);
    if (!tls_out_.empty())
      send_raw(c, reinterpret_cast<const std::uint8_t*>(tls_out_.data()), tls_out_.size());
    if (r.failed) {
      const std::string cause = std::string("tls_") + tls::to_string(c.tls->cause());
      if (c.state == Conn::State::connecting) {
        ++result_.connect_errors[cause];
        attempt_failed(c, "tls");
        return close_conn(c);
      }
      return protocol_error(c, cause.c_str());
    }
    if (c.state != Conn::State::connecting && c.state != Conn::State::open) return;
    if (r.handshake_done) {
      result_.tls_handshake_us.record((uv_hrtime() - c.next_send_ns) / 1000);
      ++result_.tls_handshakes;
      if (c.tls->resumed()) ++result_.tls_resumed;
      on_open(c);
      if (c.state != Conn::State::open) return;
    }
    if (r.plaintext > 0) {
      on_data(c, reinterpret_cast<const std::uint8_t*>(plain.data()), r.plaintext);
      if (c.state != Conn::State::open) return;
    }
    if (r.peer_closed) {  // the server's close_notify: as its FIN
      finish_http(c);
      return server_closed(c, "read", UV_EOF);
    }
    if (!r.plaintext_out_full) return;
  }
}

void Worker::tls_send(Conn& c, std::string_view plaintext) {
  std::string out;  // not tls_out_: a send may come from inside tls_data's on_data
  if (c.tls->write(plaintext, out)) return protocol_error(c, "tls_write");
  send_raw(c, reinterpret_cast<const std::uint8_t*>(out.data()), out.size());
}

void Worker::handshake_over(Conn& c) noexcept {
  if (!c.handshaking) return;
  c.handshaking = false;
  --pending_;
}

void Worker::tls_free(Conn& c) {
  delete c.tls;
  c.tls = nullptr;
}

}  // namespace heartwheel::load
