// FailureCause: names, and how OpenSSL's reasons fall into the classes.
#include <heartwheel/tls/failure.h>
#include <openssl/err.h>
#include <openssl/x509.h>

#include "failure_detail.h"

namespace heartwheel::tls {

const char* to_string(FailureCause cause) noexcept {
  switch (cause) {
    case FailureCause::none: return "none";
    case FailureCause::timeout: return "timeout";
    case FailureCause::protocol_error: return "protocol_error";
    case FailureCause::no_shared_cipher: return "no_shared_cipher";
    case FailureCause::certificate: return "certificate";
    case FailureCause::other: return "other";
  }
  return "other";
}

namespace detail {

FailureCause classify(std::uint32_t code) noexcept {
  if (code == 0 || ERR_SYSTEM_ERROR(code) || ERR_GET_LIB(code) != ERR_LIB_SSL) {
    return FailureCause::other;
  }
  switch (ERR_GET_REASON(code)) {
    case SSL_R_NO_SHARED_CIPHER:
    case SSL_R_NO_SHARED_GROUPS:
    case SSL_R_NO_SHARED_SIGNATURE_ALGORITHMS:
    case SSL_R_NO_SUITABLE_SIGNATURE_ALGORITHM:
    case SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE:  // what a client hears of the above
      return FailureCause::no_shared_cipher;
    case SSL_R_CERTIFICATE_VERIFY_FAILED:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
      return FailureCause::certificate;
    case ERR_R_MALLOC_FAILURE & ERR_REASON_MASK:
    case ERR_R_INTERNAL_ERROR & ERR_REASON_MASK:
      return FailureCause::other;
    default:
      return FailureCause::protocol_error;
  }
}

std::string describe(std::uint32_t code, const SSL* ssl) {
  if (code == 0) return "failed without an OpenSSL error (out of memory writing the output?)";
  if (ERR_GET_LIB(code) == ERR_LIB_SSL) {
    switch (ERR_GET_REASON(code)) {
      case SSL_R_HTTP_REQUEST:
        return "plain HTTP sent to a TLS port (http request)";
      case SSL_R_HTTPS_PROXY_REQUEST:
        return "an HTTP proxy request sent to a TLS port (https proxy request)";
      case SSL_R_UNSUPPORTED_PROTOCOL:
        return "unsupported protocol (the peer offered no version this side allows: "
               "TLS 1.2 and 1.3 only)";
      case SSL_R_CERTIFICATE_VERIFY_FAILED:
        if (ssl) {
          return std::string("certificate verify failed: ") +
                 X509_verify_cert_error_string(SSL_get_verify_result(ssl));
        }
        break;
      default:
        break;
    }
  }
  const char* reason = ERR_reason_error_string(code);
  if (reason) return reason;
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  return buf;
}

}  // namespace detail
}  // namespace heartwheel::tls
