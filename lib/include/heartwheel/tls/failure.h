// heartwheel/tls/failure.h - why a TLS handshake or connection failed, in
// the few classes a server counts (stats JSON, Prometheus) and acts on.
//
// Threads: plain values, any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace heartwheel::tls {

enum class FailureCause : std::uint8_t {
  none,              // not failed
  timeout,           // the handshake took too long: decided by the caller (its
                     // deadline), never by a Session
  protocol_error,    // not TLS (plain HTTP to a TLS port, garbage), a bad or
                     // unexpected record, a version refused (TLS 1.1), an alert
  no_shared_cipher,  // no cipher suite or key-exchange group in common (the
                     // peer's handshake_failure alert, seen by a client)
  certificate,       // a client refused the server's certificate (chain,
                     // name, dates), or the peer's alert says it refused ours
  other,             // anything else: out of memory, an OpenSSL internal error
};

inline constexpr std::size_t kFailureCauseCount = 6;

// "none", "timeout", "protocol_error", "no_shared_cipher", "certificate",
// "other": the spelling in statistics and metrics labels.
const char* to_string(FailureCause cause) noexcept;

}  // namespace heartwheel::tls
