// What a Context is made of (private to the tls layer): a generation (one
// SSL_CTX) and the client session cache.
#pragma once

#include <heartwheel/tls/context.h>
#include <openssl/ssl.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace heartwheel::tls {

// One SSL_CTX built from the options and the files as they were at one
// moment. Sessions hold their own reference to the SSL_CTX (SSL_new takes
// one), so a generation replaced by reload() lives on in its sessions.
struct Context::Generation {
  SSL_CTX* ctx = nullptr;
  std::uint64_t number = 0;
  Generation(SSL_CTX* c, std::uint64_t n) noexcept : ctx(c), number(n) {}
  ~Generation() { SSL_CTX_free(ctx); }
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;
};

// The newest session per resume key, for a client Context with
// client_session_cache. Filled from OpenSSL's new-session callback (inside
// SSL_read or the handshake: the Context's code, never the protocol's).
// At most kMaxKeys keys: when full, the whole map is dropped (a client talks
// to a handful of servers; this only bounds a misuse).
struct Context::ClientCache {
  static constexpr std::size_t kMaxKeys = 4096;
  std::mutex mutex;
  struct KeyHash {
    using is_transparent = void;  // find() by string_view, without a copy
    std::size_t operator()(std::string_view key) const noexcept {
      return std::hash<std::string_view>{}(key);
    }
  };
  std::unordered_map<std::string, SSL_SESSION*, KeyHash, std::equal_to<>> sessions;

  ClientCache() = default;
  ~ClientCache();
  ClientCache(const ClientCache&) = delete;
  ClientCache& operator=(const ClientCache&) = delete;
  // Keeps `session` (takes over the caller's reference) under `key`.
  void put(const std::string& key, SSL_SESSION* session) noexcept;
  // Offers the session kept under `key`, if any, on `ssl`.
  void offer(std::string_view key, SSL* ssl) noexcept;
  // OpenSSL's new-session callback (SSL_CTX_sess_set_new_cb): keeps the
  // session under the SSL's resume key. 1: the reference was taken.
  static int on_new_session(SSL* ssl, SSL_SESSION* session) noexcept;
};

namespace detail {

using NewSessionCallback = int (*)(SSL*, SSL_SESSION*);

// Builds a complete SSL_CTX for `options` (files read now). `context` is the
// owner (ALPN selection reads its options; owner_of() finds it), `on_new_session`
// the client cache's callback (with client_session_cache). Throws
// ContextError (a file), std::invalid_argument (a cipher string OpenSSL
// refuses), std::bad_alloc.
SSL_CTX* build_ssl_ctx(const ContextOptions& options, const Context& context,
                       NewSessionCallback on_new_session);

// The Context an SSL_CTX was built for (ex_data), or nullptr.
const Context* owner_of(const SSL_CTX* ctx) noexcept;

// ex_data of an SSL: the client's resume key (an owned std::string).
int resume_key_index() noexcept;

}  // namespace detail
}  // namespace heartwheel::tls
