// PEM files for a Context: read once into memory (so a missing or unreadable
// file is reported with errno's words, not OpenSSL's), then parsed from a
// memory BIO.
#include "pem_files.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace heartwheel::tls::detail {

namespace {

constexpr std::size_t kMaxPemBytes = 1 << 20;

[[noreturn]] void refuse(const std::string& file, std::string reason) {
  ERR_clear_error();
  throw ContextError(LoadError{file, std::move(reason)});
}

// OpenSSL's words for the first error in the thread's queue.
std::string openssl_reason() {
  const unsigned long code = ERR_peek_error();
  const char* reason = code ? ERR_reason_error_string(code) : nullptr;
  return reason ? reason : "unknown OpenSSL error";
}

// Pass phrase callback: never prompt on a terminal. Records that one was
// asked for, so the error can say the key is encrypted.
int no_pass_phrase(char*, int, int, void* asked) {
  *static_cast<bool*>(asked) = true;
  return -1;
}

BioPtr memory_bio(const std::string& text) {
  BioPtr bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  if (!bio) throw std::bad_alloc();
  return bio;
}

bool has_pem_marker(const std::string& text) {
  return text.find("-----BEGIN ") != std::string::npos;
}

// True if the last PEM read stopped only because no PEM block was left.
bool at_end_of_pem() {
  const unsigned long code = ERR_peek_last_error();
  return ERR_GET_LIB(code) == ERR_LIB_PEM && ERR_GET_REASON(code) == PEM_R_NO_START_LINE;
}

}  // namespace

std::string read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) refuse(path, std::strerror(errno));
  struct stat st {};
  std::string text;
  const char* problem = nullptr;
  if (::fstat(fd, &st) != 0) {
    problem = std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    problem = "not a regular file";
  } else if (static_cast<std::size_t>(st.st_size) > kMaxPemBytes) {
    problem = "larger than 1 MiB, not a PEM certificate or key";
  } else {
    text.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        problem = std::strerror(errno);
        break;
      }
      if (n == 0) break;  // shrank while read: keep what is there
      got += static_cast<std::size_t>(n);
    }
    text.resize(got);
  }
  ::close(fd);
  if (problem) refuse(path, problem);
  return text;
}

std::vector<X509Ptr> load_certificates(const std::string& path) {
  const std::string text = read_file(path);
  if (!has_pem_marker(text)) {
    refuse(path, "no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)");
  }
  ERR_clear_error();
  BioPtr bio = memory_bio(text);
  std::vector<X509Ptr> out;
  bool asked = false;
  for (;;) {  // other PEM blocks (a key in the same file) are skipped
    X509Ptr cert(PEM_read_bio_X509_AUX(bio.get(), nullptr, no_pass_phrase, &asked));
    if (!cert) break;
    out.push_back(std::move(cert));
  }
  if (out.empty()) refuse(path, "no certificate could be read: " + openssl_reason());
  if (!at_end_of_pem()) {
    refuse(path, "certificate " + std::to_string(out.size() + 1) +
                     " is malformed: " + openssl_reason());
  }
  ERR_clear_error();
  return out;
}

PkeyPtr load_private_key(const std::string& path) {
  const std::string text = read_file(path);
  if (!has_pem_marker(text)) {
    refuse(path, "no PEM private key in it (expected -----BEGIN PRIVATE KEY-----)");
  }
  ERR_clear_error();
  BioPtr bio = memory_bio(text);
  bool asked = false;
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_pass_phrase, &asked));
  if (!key && asked) refuse(path, "the private key is encrypted (pass phrases are not supported)");
  if (!key) refuse(path, "no private key could be read: " + openssl_reason());
  ERR_clear_error();
  return key;
}

KeyedChain load_keyed_chain(const CertificateFiles& files) {
  KeyedChain out{load_certificates(files.certificate), load_private_key(files.key)};
  if (X509_check_private_key(out.chain.front().get(), out.key.get()) != 1) {
    refuse(files.key, "the private key does not match the certificate in " + files.certificate);
  }
  return out;
}

}  // namespace heartwheel::tls::detail
