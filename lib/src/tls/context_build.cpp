// Builds one generation's SSL_CTX from ContextOptions: the safe defaults of
// context.h, the certificates, the trust store, ALPN and the client cache.
#include <heartwheel/tls/context.h>
#include <openssl/err.h>
#include <openssl/x509_vfy.h>

#include <set>
#include <stdexcept>
#include <string>

#include "context_internal.h"
#include "pem_files.h"
#include "traffic_secrets.h"

namespace heartwheel::tls::detail {

namespace {

int ctx_owner_index() noexcept {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

void free_resume_key(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<std::string*>(ptr);
}

int to_openssl(Version v) noexcept { return v == Version::tls1_3 ? TLS1_3_VERSION : TLS1_2_VERSION; }

// ALPN's wire format: each protocol preceded by its length byte.
std::string alpn_wire(const std::vector<std::string>& protocols) {
  std::string wire;
  for (const std::string& p : protocols) {
    wire.push_back(static_cast<char>(p.size()));
    wire += p;
  }
  return wire;
}

// Server ALPN: the first of the server's protocols the client offers; none
// in common: go on without ALPN rather than fail (an echo or RPC client
// that offers something else still gets its connection).
int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                unsigned int inlen, void* arg) {
  const auto* context = static_cast<const Context*>(arg);
  for (const std::string& mine : context->options().alpn) {
    for (unsigned int i = 0; i < inlen;) {
      const unsigned int len = in[i];
      if (i + 1 + len > inlen) return SSL_TLSEXT_ERR_NOACK;  // malformed list
      if (len == mine.size() && mine.compare(0, len, reinterpret_cast<const char*>(in + i + 1),
                                             len) == 0) {
        *out = in + i + 1;
        *outlen = static_cast<unsigned char>(len);
        return SSL_TLSEXT_ERR_OK;
      }
      i += 1 + len;
    }
  }
  return SSL_TLSEXT_ERR_NOACK;
}

void add_certificates(SSL_CTX* ctx, const ContextOptions& options) {
  std::set<int> key_types;
  for (const CertificateFiles& files : options.certificates) {
    KeyedChain chain = load_keyed_chain(files);
    const int type = EVP_PKEY_get_base_id(chain.key.get());
    if (!key_types.insert(type).second) {
      throw ContextError(LoadError{files.key, "a second key of the same type (" +
                                                  std::string(EVP_PKEY_get0_type_name(
                                                      chain.key.get())) +
                                                  "): one certificate per key type"});
    }
    // OpenSSL keeps one certificate per key type; the chain calls below
    // apply to the one just set.
    if (SSL_CTX_use_certificate(ctx, chain.chain.front().get()) != 1 ||
        SSL_CTX_clear_chain_certs(ctx) != 1) {
      throw ContextError(LoadError{files.certificate, "OpenSSL refused the certificate: " +
                                                          std::string(ERR_reason_error_string(
                                                              ERR_peek_error()))});
    }
    for (std::size_t i = 1; i < chain.chain.size(); ++i) {
      if (SSL_CTX_add1_chain_cert(ctx, chain.chain[i].get()) != 1) throw std::bad_alloc();
    }
    if (SSL_CTX_use_PrivateKey(ctx, chain.key.get()) != 1) {
      const char* why = ERR_reason_error_string(ERR_peek_error());
      throw ContextError(LoadError{files.key, "OpenSSL refused the private key: " +
                                                  std::string(why ? why : "unknown error")});
    }
  }
}

void add_trust(SSL_CTX* ctx, const ContextOptions& options) {
  if (options.insecure) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    return;
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (options.ca_file.empty()) {
    SSL_CTX_set_default_verify_paths(ctx);
    return;
  }
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  for (const X509Ptr& x : load_certificates(options.ca_file)) {
    if (X509_STORE_add_cert(store, x.get()) != 1) {
      // The same certificate twice in the bundle is harmless.
      const unsigned long code = ERR_peek_last_error();
      if (ERR_GET_REASON(code) != X509_R_CERT_ALREADY_IN_HASH_TABLE) throw std::bad_alloc();
      ERR_clear_error();
    }
  }
}

}  // namespace

const Context* owner_of(const SSL_CTX* ctx) noexcept {
  return static_cast<const Context*>(SSL_CTX_get_ex_data(ctx, ctx_owner_index()));
}

int resume_key_index() noexcept {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, free_resume_key);
  return index;
}

SSL_CTX* build_ssl_ctx(const ContextOptions& options, const Context& context,
                       NewSessionCallback on_new_session) {
  ERR_clear_error();
  const bool server = options.role == Role::server;
  SslCtxPtr ctx(SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()));
  if (!ctx) throw std::bad_alloc();
  SSL_CTX* c = ctx.get();
  SSL_CTX_set_ex_data(c, ctx_owner_index(), const_cast<Context*>(&context));
  SSL_CTX_set_min_proto_version(c, to_openssl(options.min_version));
  SSL_CTX_set_max_proto_version(c, to_openssl(options.max_version));
  // Compression (CRIME) and renegotiation (a CPU lever for the peer, and a
  // handshake the connection's deadline would not see) are off.
  SSL_CTX_set_options(c, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  // An idle connection gives its read and write record buffers (~34 KiB)
  // back; they are allocated again for the next record.
  SSL_CTX_set_mode(c, SSL_MODE_RELEASE_BUFFERS);
  if (SSL_CTX_set_cipher_list(c, options.ciphers.c_str()) != 1) {
    ERR_clear_error();
    throw std::invalid_argument("tls ciphers: OpenSSL knows none of '" + options.ciphers + "'");
  }
  if (SSL_CTX_set_ciphersuites(c, options.ciphersuites.c_str()) != 1) {
    ERR_clear_error();
    throw std::invalid_argument("tls ciphersuites: OpenSSL refuses '" + options.ciphersuites + "'");
  }
  if (server) {
    // Resumption by stateless tickets only: no server-side session cache,
    // whose entries (up to 20,480 by default) would stay after their
    // connections closed.
    SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
    // Each ticket is the session encoded, encrypted and MACed, and a record:
    // send what a client will use (context.h, session_tickets).
    SSL_CTX_set_num_tickets(c, options.session_tickets);
    if (options.session_tickets == 0) SSL_CTX_set_options(c, SSL_OP_NO_TICKET);
    // A session that frees its SSL object needs its traffic secrets.
    if (options.free_ssl_after_handshake) catch_traffic_secrets(c);
    add_certificates(c, options);
    if (!options.alpn.empty()) {
      SSL_CTX_set_alpn_select_cb(c, select_alpn, const_cast<Context*>(&context));
    }
  } else {
    add_trust(c, options);
    // A client certificate, for servers that ask for one (redis-server's
    // tls-auth-clients, on by default).
    add_certificates(c, options);
    if (!options.alpn.empty()) {
      const std::string wire = alpn_wire(options.alpn);
      // Returns 0 on success (unlike the rest of OpenSSL).
      if (SSL_CTX_set_alpn_protos(c, reinterpret_cast<const unsigned char*>(wire.data()),
                                  static_cast<unsigned int>(wire.size())) != 0) {
        throw std::bad_alloc();
      }
    }
    if (options.client_session_cache) {
      // Sessions go to our cache through the callback, not OpenSSL's own.
      SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
      SSL_CTX_sess_set_new_cb(c, on_new_session);
    }
  }
  ERR_clear_error();
  return ctx.release();
}

}  // namespace heartwheel::tls::detail
