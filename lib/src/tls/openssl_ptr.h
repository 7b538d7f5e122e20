// Owning pointers for the OpenSSL objects the tls layer builds (private).
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>

namespace heartwheel::tls::detail {

template <class T, void (*Free)(T*)>
struct OpenSslFree {
  void operator()(T* p) const noexcept { Free(p); }
};

using BioPtr = std::unique_ptr<BIO, OpenSslFree<BIO, BIO_free_all>>;
using X509Ptr = std::unique_ptr<X509, OpenSslFree<X509, X509_free>>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, OpenSslFree<EVP_PKEY, EVP_PKEY_free>>;
using SslCtxPtr = std::unique_ptr<SSL_CTX, OpenSslFree<SSL_CTX, SSL_CTX_free>>;

}  // namespace heartwheel::tls::detail
