// See tls_flags.h.
#include "tls_flags.h"

#include <heartwheel/common/error.h>
#include <heartwheel/common/log.h>
#include <heartwheel/tls/net_transport.h>
#include <uv.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <stdexcept>
#include <utility>

#include "cli_program.h"

namespace heartwheel::cli {

void add_tls_flags(CLI::App& app, TlsFlags& f) {
  app.add_option("--tls-cert", f.cert,
                 "serve TLS with this certificate chain (PEM: the certificate, then its "
                 "intermediates; ECDSA or RSA); needs --tls-key; reloaded on SIGHUP");
  app.add_option("--tls-key", f.key, "the private key of --tls-cert (PEM, unencrypted)");
  app.add_option("--tls-handshake-timeout", f.handshake_timeout,
                 "with --tls-cert: close a connection whose TLS handshake is not done by then "
                 "(tls_handshake_timeout)")
      ->capture_default_str();
  app.add_flag("--tls-keep-ssl", f.keep_ssl,
               "with --tls-cert: keep OpenSSL's SSL object (~13 KB) for a TLS connection's "
               "life; by default a TLS 1.3 connection frees it after its handshake and "
               "heartwheel protects its records (~0.3 KB a connection)");
}

std::optional<TlsSetup> make_tls(const TlsFlags& f) {
  const Duration timeout = parse_duration_flag("--tls-handshake-timeout", f.handshake_timeout);
  if (f.cert.empty() != f.key.empty())
    throw std::invalid_argument(f.cert.empty() ? "--tls-key needs --tls-cert"
                                               : "--tls-cert needs --tls-key");
  if (f.cert.empty()) {
    if (f.keep_ssl) throw std::invalid_argument("--tls-keep-ssl needs --tls-cert");
    return std::nullopt;
  }
  if (timeout.count() <= 0) throw std::invalid_argument("--tls-handshake-timeout must be positive");
  tls::ContextOptions o;
  o.role = tls::Role::server;
  o.certificates.push_back({f.cert, f.key});
  o.free_ssl_after_handshake = !f.keep_ssl;
  TlsSetup s;
  s.context = std::make_shared<tls::Context>(std::move(o));
  s.transport = tls::server_transport(s.context, {.handshake_timeout = timeout});
  return s;
}

void add_tls_client_flags(CLI::App& app, TlsClientFlags& f) {
  app.add_flag("--tls", f.tls,
               "speak TLS (1.2/1.3) to the server, verifying its certificate for the host "
               "name given (sent as SNI unless it is an IP address)");
  app.add_option("--tls-ca", f.ca,
                 "with --tls: trust the certificates in this PEM file (default: the system's)");
  app.add_flag("--tls-insecure", f.insecure,
               "with --tls: do not verify the server's certificate (tests only)");
}

std::shared_ptr<tls::Context> make_tls_client(const TlsClientFlags& f) {
  if (!f.tls && (!f.ca.empty() || f.insecure))
    throw std::invalid_argument(f.insecure ? "--tls-insecure needs --tls" : "--tls-ca needs --tls");
  if (f.insecure && !f.ca.empty())
    throw std::invalid_argument("give --tls-ca or --tls-insecure, not both");
  if (!f.tls) return nullptr;
  ClientContextFlags c;
  c.ca = f.ca;
  c.insecure = f.insecure;
  return client_context(c);
}

std::shared_ptr<tls::Context> client_context(const ClientContextFlags& f) {
  tls::ContextOptions o;
  o.role = tls::Role::client;
  o.ca_file = f.ca;
  o.insecure = f.insecure;
  o.alpn = f.alpn;
  o.client_session_cache = f.session_cache;
  if (!f.cert.empty() || !f.key.empty()) o.certificates.push_back({f.cert, f.key});
  return std::make_shared<tls::Context>(std::move(o));
}

struct SighupReload::State {
  std::shared_ptr<tls::Context> context;
  std::string program;
  uv_loop_t loop{};
  uv_signal_t hup{};
  uv_async_t stop{};
};

SighupReload::SighupReload(std::shared_ptr<tls::Context> context, std::string program) {
  if (!context) return;
  state_ = std::make_unique<State>();
  State& s = *state_;
  s.context = std::move(context);
  s.program = std::move(program);
  check_uv(uv_loop_init(&s.loop), "uv_loop_init");
  s.hup.data = s.stop.data = &s;
  check_uv(uv_signal_init(&s.loop, &s.hup), "uv_signal_init");
  check_uv(uv_signal_start(
               &s.hup,
               [](uv_signal_t* h, int) {
                 auto* st = static_cast<State*>(h->data);
                 if (auto error = st->context->reload()) {
                   log::warning("tls: reload refused, still serving the old certificates: " +
                                error->message());
                 } else {
                   log::info("tls: certificates reloaded (generation " +
                                 std::to_string(st->context->generation()) + ")",
                             {log::field("generation", st->context->generation())});
                 }
               },
               SIGHUP),
           "uv_signal_start");
  check_uv(uv_async_init(&s.loop, &s.stop,
                         [](uv_async_t* a) {
                           auto* st = static_cast<State*>(a->data);
                           uv_close(reinterpret_cast<uv_handle_t*>(&st->hup), nullptr);
                           uv_close(reinterpret_cast<uv_handle_t*>(&st->stop), nullptr);
                         }),
           "uv_async_init");
  thread_ = std::thread([&s] {
    uv_run(&s.loop, UV_RUN_DEFAULT);
    uv_loop_close(&s.loop);
  });
}

SighupReload::~SighupReload() {
  if (!state_) return;
  uv_async_send(&state_->stop);
  thread_.join();
}

}  // namespace heartwheel::cli
