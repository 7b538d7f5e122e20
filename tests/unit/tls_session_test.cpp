// tls::Session through memory: the handshake, data both ways, large writes
// fed in small pieces, close_notify, versions, ciphers, ALPN, SNI, key types
// and the failures a server meets (plain HTTP, garbage, bad records,
// certificates its clients refuse).
#include <heartwheel/common/error.h>
#include <heartwheel/tls/session.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <catch2/catch.hpp>
#include <random>

#include "tls_support.h"

using namespace tls_test;

namespace {

// One established pair of ECDSA certificate, the client verifying it.
struct Established {
  tls::Context server{server_options(certs().ec_one)};
  tls::Context client{client_options(certs().ec_one.certificate)};
  Pair p = connect(client, server);
};

}  // namespace

TEST_CASE("A client and a server session shake hands through memory and exchange data",
          "[tls][session]") {
  Established e;
  Pair& p = e.p;
  CHECK(p.client.session.established());
  CHECK(p.server.session.established());
  CHECK(p.client.handshakes_done == 1);
  CHECK(p.server.handshakes_done == 1);
  CHECK(p.client.session.version() == "TLSv1.3");
  CHECK(p.server.session.version() == "TLSv1.3");
  CHECK_FALSE(p.client.session.cipher().empty());
  CHECK_FALSE(p.client.session.resumed());
  CHECK(peer_common_name(p.client.session) == "ec-one");

  REQUIRE_FALSE(p.client.session.write("GET / HTTP/1.1\r\n\r\n", p.client.out));
  pump(p.client, p.server);
  CHECK(p.server.received == "GET / HTTP/1.1\r\n\r\n");
  REQUIRE_FALSE(p.server.session.write("HTTP/1.1 200 OK\r\n\r\n", p.server.out));
  REQUIRE_FALSE(p.server.session.write("", p.server.out));  // nothing, no error
  pump(p.client, p.server);
  CHECK(p.client.received == "HTTP/1.1 200 OK\r\n\r\n");
  CHECK(p.client.failures + p.server.failures == 0);
}

TEST_CASE("A handshake fed one byte at a time completes, and half a ClientHello just waits",
          "[tls][session]") {
  tls::Context server(server_options(certs().ec_one));
  tls::Context client(client_options(certs().ec_one.certificate));
  End c(tls::Session::client(client, "localhost"));
  End s(tls::Session::server(server));
  REQUIRE(c.session.start(c.out));
  const std::string hello = std::exchange(c.out, {});
  // Half of it: the server takes every byte and waits for the rest (the
  // deadline for the rest is the caller's).
  deliver(s, std::string_view(hello).substr(0, hello.size() / 2), 1);
  CHECK(s.session.handshaking());
  CHECK(s.out.empty());
  CHECK(s.failures == 0);
  CHECK(s.session.native_handle() == nullptr);  // no SSL object for half a record
  deliver(s, std::string_view(hello).substr(hello.size() / 2), 1);
  CHECK_FALSE(s.out.empty());  // ServerHello .. Finished
  CHECK(s.session.native_handle() != nullptr);
  pump(c, s, 1);
  CHECK(c.session.established());
  CHECK(s.session.established());
  CHECK(c.handshakes_done == 1);
  CHECK(s.handshakes_done == 1);
}

TEST_CASE("Large writes arrive whole when their records come in small pieces", "[tls][session]") {
  Established e;
  Pair& p = e.p;
  const std::string big = random_bytes(1 << 20, 7);
  REQUIRE_FALSE(p.client.session.write(big, p.client.out));
  CHECK(p.client.out.size() > big.size());  // records: headers and tags on top
  // Pieces of 1 to 1,500 bytes, cutting records and headers anywhere.
  std::mt19937 rng(11);
  std::string wire = std::exchange(p.client.out, {});
  std::string_view rest = wire;
  while (!rest.empty()) {
    const std::size_t n = std::min<std::size_t>(rest.size(), 1 + rng() % 1500);
    deliver(p.server, rest.substr(0, n));
    rest.remove_prefix(n);
  }
  CHECK(p.server.received.size() == big.size());
  CHECK(p.server.received == big);

  // The other way, two writes, fed as one block through the 4 KiB buffer.
  const std::string a = random_bytes(300000, 3), b = random_bytes(70000, 5);
  REQUIRE_FALSE(p.server.session.write(a, p.server.out));
  REQUIRE_FALSE(p.server.session.write(b, p.server.out));
  pump(p.client, p.server);
  CHECK(p.client.received == a + b);
}

TEST_CASE("Plaintext is handed out in as many calls as the caller's buffer needs",
          "[tls][session]") {
  Established e;
  Pair& p = e.p;
  const std::string msg = random_bytes(10000, 1);
  REQUIRE_FALSE(p.client.session.write(msg, p.client.out));
  const std::string wire = std::exchange(p.client.out, {});
  char small[1000];
  std::string got;
  std::string_view rest = wire;
  int calls = 0;
  for (;;) {
    const tls::FeedResult r = p.server.session.feed(rest, small, p.server.out);
    ++calls;
    got.append(small, r.plaintext);
    rest.remove_prefix(r.consumed);
    if (!r.plaintext_out_full) break;
    CHECK(r.plaintext == sizeof small);
  }
  CHECK(rest.empty());
  CHECK(got == msg);
  CHECK(calls >= 10);
}

TEST_CASE("close_notify goes out on close and is recognised by the peer", "[tls][session]") {
  Established e;
  Pair& p = e.p;
  REQUIRE_FALSE(p.client.session.write("last words", p.client.out));
  p.client.session.close(p.client.out);
  CHECK(p.client.session.close_sent());
  const std::size_t with_notify = p.client.out.size();
  p.client.session.close(p.client.out);  // once only
  CHECK(p.client.out.size() == with_notify);
  CHECK(p.client.session.write("more", p.client.out) == heartwheel::errc::closed);

  deliver(p.server, std::exchange(p.client.out, {}));
  CHECK(p.server.received == "last words");
  CHECK(p.server.peer_closes == 1);
  CHECK(p.server.session.peer_closed());
  CHECK_FALSE(p.server.session.failed());
  // The server may still answer (a half-close), then closes too.
  REQUIRE_FALSE(p.server.session.write("bye", p.server.out));
  p.server.session.close(p.server.out);
  deliver(p.client, std::exchange(p.server.out, {}));
  CHECK(p.client.received == "bye");
  CHECK(p.client.peer_closes == 1);
  CHECK(p.client.failures + p.server.failures == 0);
}

TEST_CASE("Writing before the handshake is done is refused", "[tls][session]") {
  tls::Context client(client_options());
  tls::Session s = tls::Session::client(client, "localhost");
  std::string out;
  CHECK(s.write("early", out) == heartwheel::errc::invalid_argument);
  s.close(out);  // nothing to close yet
  CHECK(out.empty());
  CHECK_FALSE(s.close_sent());
}

TEST_CASE("A TLS 1.1 client is refused as a protocol error", "[tls][session][version]") {
  tls::Context server(server_options(certs().ec_one));
  End srv(tls::Session::server(server));
  // A real TLS 1.1 ClientHello, from OpenSSL with its old versions allowed.
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  REQUIRE(ctx);
  SSL_CTX_set_min_proto_version(ctx, TLS1_VERSION);
  SSL_CTX_set_max_proto_version(ctx, TLS1_1_VERSION);
  REQUIRE(SSL_CTX_set_cipher_list(ctx, "DEFAULT:@SECLEVEL=0") == 1);
  SSL* old = SSL_new(ctx);
  BIO* to_client = BIO_new(BIO_s_mem());
  BIO* from_client = BIO_new(BIO_s_mem());
  SSL_set_bio(old, to_client, from_client);
  SSL_set_connect_state(old);
  CHECK(SSL_do_handshake(old) == -1);  // wants the server's answer
  std::string hello(static_cast<std::size_t>(BIO_pending(from_client)), '\0');
  REQUIRE(BIO_read(from_client, hello.data(), static_cast<int>(hello.size())) ==
          static_cast<int>(hello.size()));
  REQUIRE(hello.size() > 5);
  CHECK(hello[1] == 3);  // record version 3.x, handshake for <= 3.2 (TLS 1.1)

  deliver(srv, hello);
  CHECK(srv.session.failed());
  CHECK(srv.failures == 1);
  CHECK(srv.session.cause() == tls::FailureCause::protocol_error);
  CHECK_THAT(srv.session.message(), Catch::Contains("unsupported protocol"));
  // The alert the server wrote makes the old client fail too.
  REQUIRE_FALSE(srv.out.empty());
  BIO_write(to_client, srv.out.data(), static_cast<int>(srv.out.size()));
  CHECK(SSL_do_handshake(old) <= 0);
  CHECK(SSL_get_error(old, -1) == SSL_ERROR_SSL);
  ERR_clear_error();
  SSL_free(old);
  SSL_CTX_free(ctx);
}

TEST_CASE("TLS 1.2 is spoken with a client that allows nothing newer", "[tls][session][version]") {
  tls::Context server(server_options(certs().ec_one));
  tls::ContextOptions co = client_options(certs().ec_one.certificate);
  co.max_version = tls::Version::tls1_2;
  tls::Context client(co);
  Pair p = connect(client, server);
  REQUIRE(p.server.session.established());
  CHECK(p.server.session.version() == "TLSv1.2");
  CHECK(p.server.session.cipher() == "ECDHE-ECDSA-AES128-GCM-SHA256");
  // Only a TLS 1.3 session frees its SSL object after the handshake.
  CHECK(p.server.session.native_handle() != nullptr);
  REQUIRE_FALSE(p.server.session.write("over 1.2", p.server.out));
  pump(p.client, p.server);
  CHECK(p.client.received == "over 1.2");
}

TEST_CASE("No cipher in common fails both sides as no_shared_cipher", "[tls][session]") {
  tls::ContextOptions so = server_options(certs().ec_one);
  so.ciphers = "ECDHE-ECDSA-AES128-GCM-SHA256";
  so.ciphersuites = "TLS_AES_128_GCM_SHA256";
  tls::ContextOptions co = client_options();
  co.ciphers = "ECDHE-ECDSA-CHACHA20-POLY1305";
  co.ciphersuites = "TLS_CHACHA20_POLY1305_SHA256";
  tls::Context server(so), client(co);
  Pair p = connect(client, server);
  CHECK(p.server.session.failed());
  CHECK(p.server.session.cause() == tls::FailureCause::no_shared_cipher);
  CHECK_THAT(p.server.session.message(), Catch::Contains("no shared cipher"));
  CHECK(p.client.session.failed());
  CHECK(p.client.session.cause() == tls::FailureCause::no_shared_cipher);
  CHECK(p.server.failures == 1);
  CHECK(p.server.handshakes_done == 0);
}

TEST_CASE("Plain HTTP sent to a TLS port fails as a protocol error", "[tls][session]") {
  tls::Context server(server_options(certs().ec_one));
  End srv(tls::Session::server(server));
  deliver(srv, "GET / HTTP/1.1\r\nHost: example\r\n\r\n");
  CHECK(srv.failures == 1);
  CHECK(srv.session.cause() == tls::FailureCause::protocol_error);
  CHECK_THAT(srv.session.message(), Catch::Contains("HTTP"));
  // A failed session takes nothing more.
  char buf[64];
  std::string out;
  const tls::FeedResult r = srv.session.feed("more bytes", buf, out);
  CHECK(r.consumed == 0);
  CHECK_FALSE(r.failed);  // reported once
  CHECK(srv.session.cause() == tls::FailureCause::protocol_error);
}

TEST_CASE("Garbage bytes fail as a protocol error", "[tls][session]") {
  tls::Context server(server_options(certs().ec_one));
  End srv(tls::Session::server(server));
  deliver(srv, random_bytes(200, 99).replace(0, 1, "\x42"));
  CHECK(srv.failures == 1);
  CHECK(srv.session.cause() == tls::FailureCause::protocol_error);
  CHECK_FALSE(srv.session.message().empty());
}

TEST_CASE("A corrupted record after the handshake fails as a protocol error", "[tls][session]") {
  Established e;
  Pair& p = e.p;
  REQUIRE_FALSE(p.client.session.write("tampered with", p.client.out));
  p.client.out[p.client.out.size() - 3] ^= 0x20;  // inside the AEAD tag
  deliver(p.server, std::exchange(p.client.out, {}));
  CHECK(p.server.received.empty());
  CHECK(p.server.session.failed());
  CHECK(p.server.session.cause() == tls::FailureCause::protocol_error);
  CHECK_THAT(p.server.session.message(), Catch::Contains("bad record mac"));
  CHECK_FALSE(p.server.out.empty());  // an alert to send before closing
}

TEST_CASE("The server selects http/1.1 by ALPN when the client offers it", "[tls][session][alpn]") {
  tls::Context server(server_options(certs().ec_one));
  SECTION("offered among others") {
    tls::ContextOptions co = client_options();
    co.alpn = {"h2", "http/1.1"};
    tls::Context client(co);
    Pair p = connect(client, server);
    CHECK(p.server.session.alpn() == "http/1.1");
    CHECK(p.client.session.alpn() == "http/1.1");
  }
  SECTION("the default client offers http/1.1") {
    tls::Context client(client_options());
    Pair p = connect(client, server);
    CHECK(p.client.session.alpn() == "http/1.1");
  }
  SECTION("nothing in common: no ALPN, the handshake goes on") {
    tls::ContextOptions co = client_options();
    co.alpn = {"h2"};
    tls::Context client(co);
    Pair p = connect(client, server);
    CHECK(p.server.session.established());
    CHECK(p.server.session.alpn().empty());
  }
  SECTION("not offered") {
    tls::ContextOptions co = client_options();
    co.alpn.clear();
    tls::Context client(co);
    Pair p = connect(client, server);
    CHECK(p.server.session.established());
    CHECK(p.server.session.alpn().empty());
  }
}

TEST_CASE("The SNI name a client sends reaches the server session", "[tls][session][sni]") {
  tls::Context server(server_options(certs().ec_one));
  tls::Context client(client_options());  // insecure: any name
  Pair p = connect(client, server, "chat.example.test");
  REQUIRE(p.server.session.established());
  CHECK(p.server.session.server_name() == "chat.example.test");
  CHECK(p.client.session.server_name() == "chat.example.test");
  // An address is no SNI name (RFC 6066): none is sent.
  Pair q = connect(client, server, "127.0.0.1");
  REQUIRE(q.server.session.established());
  CHECK(q.server.session.server_name().empty());
}

TEST_CASE("ECDSA P-256 and RSA certificates both serve handshakes", "[tls][session][keys]") {
  tls::Context ec_server(server_options(certs().ec_one));
  tls::Context rsa_server(server_options(certs().rsa));
  tls::Context rsa_client(client_options(certs().rsa.certificate));
  tls::Context ec_client(client_options(certs().ec_one.certificate));
  Pair ec = connect(ec_client, ec_server);
  REQUIRE(ec.client.session.established());
  CHECK(peer_key_type(ec.client.session) == "EC");
  Pair rsa = connect(rsa_client, rsa_server);
  REQUIRE(rsa.client.session.established());
  CHECK(peer_key_type(rsa.client.session) == "RSA");
  CHECK(peer_common_name(rsa.client.session) == "rsa-one");

  // Both on one server: a client that can only take RSA gets the RSA chain.
  tls::ContextOptions both = server_options(certs().ec_one);
  both.certificates.push_back(certs().rsa);
  tls::Context dual(both);
  tls::ContextOptions rsa_only = client_options();
  rsa_only.max_version = tls::Version::tls1_2;
  rsa_only.ciphers = "ECDHE-RSA-AES128-GCM-SHA256";
  tls::Context old_client(rsa_only);
  Pair a = connect(old_client, dual);
  REQUIRE(a.client.session.established());
  CHECK(peer_key_type(a.client.session) == "RSA");
  tls::Context new_client(client_options());
  Pair b = connect(new_client, dual);
  REQUIRE(b.client.session.established());
  CHECK(peer_key_type(b.client.session) == "EC");
}

TEST_CASE("A client refuses a certificate it does not trust or that names another host",
          "[tls][session][verify]") {
  tls::Context server(server_options(certs().ec_one));
  SECTION("untrusted chain") {
    tls::Context client(client_options(certs().stranger.certificate));
    Pair p = connect(client, server);
    CHECK(p.client.session.failed());
    CHECK(p.client.session.cause() == tls::FailureCause::certificate);
    CHECK_THAT(p.client.session.message(), Catch::Contains("certificate verify failed"));
    // The client's alert tells the server why.
    CHECK(p.server.session.failed());
    CHECK(p.server.session.cause() == tls::FailureCause::certificate);
  }
  SECTION("another host name") {
    tls::Context client(client_options(certs().ec_one.certificate));
    Pair p = connect(client, server, "other.example.test");
    CHECK(p.client.session.cause() == tls::FailureCause::certificate);
    CHECK_THAT(p.client.session.message(), Catch::Contains("hostname mismatch"));
  }
  SECTION("an address in the certificate's IP names") {
    tls::Context client(client_options(certs().ec_one.certificate));
    Pair ok = connect(client, server, "127.0.0.1");
    CHECK(ok.client.session.established());
    Pair bad = connect(client, server, "127.0.0.2");
    CHECK(bad.client.session.cause() == tls::FailureCause::certificate);
  }
}
