// From OpenSSL's error codes to FailureCause and a message (private to the
// tls layer).
#pragma once

#include <heartwheel/tls/failure.h>
#include <openssl/ssl.h>

#include <cstdint>
#include <string>

namespace heartwheel::tls::detail {

// The class of a packed OpenSSL error (ERR_peek_error()); 0: other.
FailureCause classify(std::uint32_t code) noexcept;

// A line for a log: OpenSSL's reason, with the verification result for a
// refused certificate and a hint for the common mistakes. `ssl` may be null.
std::string describe(std::uint32_t code, const SSL* ssl);

}  // namespace heartwheel::tls::detail
