#include "tls_support.h"

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <random>

#include "integration/process_support.h"

namespace tls_test {

namespace {

// The `openssl` command line's path (Child does not search PATH).
std::string openssl_program() {
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/bin:/bin";
  for (std::size_t start = 0; start <= dirs.size();) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string candidate = dirs.substr(start, end - start) + "/openssl";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  FAIL("no openssl command line on PATH (apt-get install openssl)");
  return {};
}

void run_openssl(std::vector<std::string> args) {
  args.insert(args.begin(), openssl_program());
  hwproc::ChildOptions options;
  options.capture_stderr = true;
  hwproc::Child child(args, options);
  const std::optional<int> status = child.wait_exit(hwproc::Ms(60000));
  INFO("openssl " << args[1] << ": " << child.errors());
  REQUIRE(status == 0);
}

tls::CertificateFiles make_cert(const std::string& dir, const std::string& name, bool rsa) {
  tls::CertificateFiles f{dir + "/" + name + ".crt", dir + "/" + name + ".key"};
  std::vector<std::string> args = {"req", "-x509", "-nodes", "-days", "2", "-subj", "/CN=" + name,
                                   "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                                   "-keyout", f.key, "-out", f.certificate, "-newkey"};
  if (rsa) {
    args.push_back("rsa:2048");
  } else {
    args.insert(args.end(), {"ec", "-pkeyopt", "ec_paramgen_curve:P-256"});
  }
  run_openssl(args);
  return f;
}

struct CertsOwner {
  hwproc::TempDir tmp;
  Certs certs;
  CertsOwner() {
    certs.dir = tmp.file("");
    certs.dir.pop_back();  // the trailing '/'
    certs.ec_one = make_cert(certs.dir, "ec-one", false);
    certs.ec_two = make_cert(certs.dir, "ec-two", false);
    certs.rsa = make_cert(certs.dir, "rsa-one", true);
    certs.stranger = make_cert(certs.dir, "stranger", false);
    certs.encrypted_key = certs.dir + "/ec-one-encrypted.key";
    run_openssl({"pkey", "-in", certs.ec_one.key, "-aes256", "-passout", "pass:secret", "-out",
                 certs.encrypted_key});
  }
};

}  // namespace

const Certs& certs() {
  static CertsOwner owner;  // removed at exit with its folder
  return owner.certs;
}

void write_file(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  REQUIRE(out.good());
}

void copy_file(const std::string& source, const std::string& target) {
  write_file(target, hwproc::read_file(source));
}

tls::CertificateFiles live_copy(const std::string& name, const tls::CertificateFiles& from) {
  const tls::CertificateFiles live{certs().file(name + ".crt"), certs().file(name + ".key")};
  copy_file(from.certificate, live.certificate);
  copy_file(from.key, live.key);
  return live;
}

tls::ContextOptions server_options(const tls::CertificateFiles& cert) {
  tls::ContextOptions o;
  o.role = tls::Role::server;
  o.certificates = {cert};
  return o;
}

tls::ContextOptions client_options(const std::string& trusted) {
  tls::ContextOptions o;
  o.role = tls::Role::client;
  if (trusted.empty()) {
    o.insecure = true;
  } else {
    o.ca_file = trusted;
  }
  return o;
}

void deliver(End& to, std::string_view bytes, std::size_t chunk) {
  std::array<char, 4096> plain{};
  while (!bytes.empty()) {
    std::string_view piece = bytes.substr(0, std::min(chunk, bytes.size()));
    bytes.remove_prefix(piece.size());
    for (;;) {
      const tls::FeedResult r = to.session.feed(piece, plain, to.out);
      to.received.append(plain.data(), r.plaintext);
      to.handshakes_done += r.handshake_done;
      to.peer_closes += r.peer_closed;
      to.failures += r.failed;
      piece.remove_prefix(r.consumed);
      if (r.plaintext_out_full) continue;
      if (piece.empty() || r.consumed == 0) break;
    }
    if (to.session.failed() || to.session.peer_closed()) return;
  }
}

bool exchange(End& a, End& b, std::size_t chunk) {
  for (int round = 0; round < 64 && (!a.out.empty() || !b.out.empty()); ++round) {
    const std::string to_b = std::exchange(a.out, {});
    deliver(b, to_b, chunk);
    const std::string to_a = std::exchange(b.out, {});
    deliver(a, to_a, chunk);
  }
  return a.out.empty() && b.out.empty();
}

void pump(End& a, End& b, std::size_t chunk) { REQUIRE(exchange(a, b, chunk)); }

Pair try_connect(const tls::Context& client, const tls::Context& server,
                 std::string_view server_name) {
  Pair p{End(tls::Session::client(client, server_name)), End(tls::Session::server(server))};
  if (p.client.session.start(p.client.out)) exchange(p.client, p.server);
  return p;
}

Pair connect(const tls::Context& client, const tls::Context& server, std::string_view server_name,
             std::string_view resume_key) {
  Pair p{End(tls::Session::client(client, server_name, resume_key)), End(tls::Session::server(server))};
  REQUIRE(p.client.session.start(p.client.out));
  REQUIRE_FALSE(p.client.out.empty());  // the ClientHello
  pump(p.client, p.server);
  return p;
}

std::string peer_common_name(const tls::Session& session) {
  X509* cert = SSL_get0_peer_certificate(session.native_handle());
  if (!cert) return {};
  char buf[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof buf);
  return buf;
}

std::string peer_key_type(const tls::Session& session) {
  X509* cert = SSL_get0_peer_certificate(session.native_handle());
  if (!cert) return {};
  switch (EVP_PKEY_get_base_id(X509_get0_pubkey(cert))) {
    case EVP_PKEY_EC: return "EC";
    case EVP_PKEY_RSA: return "RSA";
    default: return "other";
  }
}

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

}  // namespace tls_test
