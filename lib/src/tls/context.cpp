// tls::Context: options, generations and reload (see context.h).
#include <heartwheel/tls/context.h>
#include <openssl/err.h>

#include <stdexcept>
#include <string>

#include "context_internal.h"

namespace heartwheel::tls {

void ContextOptions::validate() const {
  const bool server = role == Role::server;
  if (server && certificates.empty()) {
    throw std::invalid_argument("tls: a server needs a certificate and its key");
  }
  if (!server && certificates.size() > 1) {
    throw std::invalid_argument("tls: a client presents at most one certificate");
  }
  for (const CertificateFiles& f : certificates) {
    if (f.certificate.empty() || f.key.empty()) {
      throw std::invalid_argument("tls: a certificate needs both a certificate file and a key file");
    }
  }
  if (server && (insecure || !ca_file.empty() || client_session_cache)) {
    throw std::invalid_argument(
        "tls: insecure, ca_file and client_session_cache are client options");
  }
  if (insecure && !ca_file.empty()) {
    throw std::invalid_argument("tls: insecure and ca_file exclude each other");
  }
  if (min_version > max_version) {
    throw std::invalid_argument("tls: min_version is above max_version");
  }
  if (!server && session_tickets != ContextOptions{}.session_tickets) {
    throw std::invalid_argument("tls: session_tickets is a server option");
  }
  if (session_tickets > kMaxSessionTickets) {
    throw std::invalid_argument("tls: session_tickets must be 0 to " +
                                std::to_string(kMaxSessionTickets) + " (got " +
                                std::to_string(session_tickets) + ")");
  }
  for (const std::string& p : alpn) {
    if (p.empty() || p.size() > 255) {
      throw std::invalid_argument("tls: an ALPN protocol name must have 1 to 255 bytes");
    }
  }
}

Context::ClientCache::~ClientCache() {
  for (auto& entry : sessions) SSL_SESSION_free(entry.second);
}

void Context::ClientCache::put(const std::string& key, SSL_SESSION* session) noexcept {
  std::lock_guard lock(mutex);
  try {
    auto [it, inserted] = sessions.try_emplace(key, session);
    if (!inserted) {
      SSL_SESSION_free(it->second);
      it->second = session;
    } else if (sessions.size() > kMaxKeys) {
      sessions.erase(it);
      for (auto& entry : sessions) SSL_SESSION_free(entry.second);
      sessions.clear();
      sessions.emplace(key, session);
    }
  } catch (...) {  // bad_alloc: not kept
    SSL_SESSION_free(session);
  }
}

void Context::ClientCache::offer(std::string_view key, SSL* ssl) noexcept {
  std::lock_guard lock(mutex);
  try {
    auto it = sessions.find(key);
    if (it != sessions.end()) SSL_set_session(ssl, it->second);  // takes its own reference
  } catch (...) {  // bad_alloc: no resumption this time
  }
}

int Context::ClientCache::on_new_session(SSL* ssl, SSL_SESSION* session) noexcept {
  const Context* owner = detail::owner_of(SSL_get_SSL_CTX(ssl));
  const auto* key = static_cast<const std::string*>(SSL_get_ex_data(ssl, detail::resume_key_index()));
  if (!owner || !owner->client_cache() || !key) return 0;
  owner->client_cache()->put(*key, session);
  return 1;
}

Context::Context(ContextOptions options) : options_(std::move(options)) {
  options_.validate();
  if (options_.client_session_cache) cache_ = std::make_unique<ClientCache>();
  current_.store(build(1));
}

Context::~Context() = default;

std::shared_ptr<const Context::Generation> Context::build(std::uint64_t number) const {
  SSL_CTX* ctx = detail::build_ssl_ctx(options_, *this, &ClientCache::on_new_session);
  try {
    return std::make_shared<const Generation>(ctx, number);
  } catch (...) {
    SSL_CTX_free(ctx);
    throw;
  }
}

std::optional<LoadError> Context::reload() {
  std::lock_guard lock(reload_mutex_);
  try {
    const std::uint64_t next = current_.load()->number + 1;
    current_.store(build(next));
    return std::nullopt;
  } catch (const ContextError& e) {
    return e.error();
  } catch (const std::exception& e) {  // bad_alloc; options were checked at construction
    ERR_clear_error();
    return LoadError{"", e.what()};
  }
}

std::uint64_t Context::generation() const noexcept { return current_.load()->number; }

ssl_ctx_st* Context::current_native_handle() const noexcept {
  SSL_CTX* ctx = current_.load()->ctx;
  SSL_CTX_up_ref(ctx);
  return ctx;
}

ssl_st* Context::new_ssl() const noexcept {
  // The shared_ptr keeps the generation alive across SSL_new, which takes
  // the SSL's own reference to the SSL_CTX: a reload() on another thread
  // may replace the generation at any moment.
  const std::shared_ptr<const Generation> generation = current_.load();
  return SSL_new(generation->ctx);
}

}  // namespace heartwheel::tls
