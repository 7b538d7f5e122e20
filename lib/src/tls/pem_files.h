// Reading the PEM files a Context names, with errors that say which file and
// why (private to the tls layer). Every function throws ContextError.
#pragma once

#include <heartwheel/tls/context.h>

#include <string>
#include <vector>

#include "openssl_ptr.h"

namespace heartwheel::tls::detail {

// A certificate chain (the leaf first) and the key that goes with its leaf.
struct KeyedChain {
  std::vector<X509Ptr> chain;
  PkeyPtr key;
};

// The whole file; refuses what is not a readable regular file of at most
// 1 MiB (a PEM chain is a few KiB).
std::string read_file(const std::string& path);

// Every certificate of a PEM file, in order (a chain, a CA bundle); at least
// one. Other PEM blocks (a key in the same file) are skipped.
std::vector<X509Ptr> load_certificates(const std::string& path);

// The one unencrypted PEM private key of a file.
PkeyPtr load_private_key(const std::string& path);

// `files.certificate`: the chain, leaf first; `files.key`: the leaf's key.
KeyedChain load_keyed_chain(const CertificateFiles& files);

}  // namespace heartwheel::tls::detail
