// tls::Context: options, files refused with the file and the reason,
// resumption by tickets, and reload (new handshakes get the new certificate,
// established sessions keep theirs, a bad file changes nothing).
#include <heartwheel/tls/context.h>
#include <heartwheel/tls/session.h>
#include <openssl/ssl.h>

#include <catch2/catch.hpp>

#include "integration/process_support.h"
#include "tls_support.h"

using namespace tls_test;

namespace {

// The message of the ContextError that making a server of `cert` throws.
std::string refusal(const tls::CertificateFiles& cert) {
  try {
    tls::Context c(server_options(cert));
  } catch (const tls::ContextError& e) {
    return e.what();
  }
  FAIL("no ContextError");
  return {};
}

}  // namespace

TEST_CASE("Context options that contradict each other are refused", "[tls][context]") {
  tls::ContextOptions server;  // a server without a certificate
  CHECK_THROWS_WITH(server.validate(), Catch::Contains("needs a certificate"));
  tls::ContextOptions client = client_options();
  client.certificates = {certs().ec_one, certs().rsa};
  CHECK_THROWS_WITH(client.validate(), Catch::Contains("at most one certificate"));
  client.certificates = {certs().ec_one};  // mutual TLS (redis-server's tls-auth-clients)
  CHECK_NOTHROW(tls::Context(client));
  client = client_options(certs().ec_one.certificate);
  client.insecure = true;
  CHECK_THROWS_WITH(client.validate(), Catch::Contains("exclude each other"));
  client = client_options();
  client.min_version = tls::Version::tls1_3;
  client.max_version = tls::Version::tls1_2;
  CHECK_THROWS_WITH(client.validate(), Catch::Contains("min_version"));
  client = client_options();
  client.alpn = {""};
  CHECK_THROWS_WITH(client.validate(), Catch::Contains("ALPN"));
  server = server_options(certs().ec_one);
  server.client_session_cache = true;
  CHECK_THROWS_WITH(server.validate(), Catch::Contains("client options"));
  server = server_options(certs().ec_one);
  server.ciphers = "NO-SUCH-CIPHER";
  CHECK_THROWS_AS(tls::Context(server), std::invalid_argument);
  // A Session of the wrong role.
  tls::Context c(client_options());
  CHECK_THROWS_AS(tls::Session::server(c), std::invalid_argument);
  CHECK_NOTHROW(server_options(certs().ec_one).validate());
}

TEST_CASE("A file that cannot be used is refused with its name and the reason",
          "[tls][context][files]") {
  const Certs& c = certs();
  const std::string missing = c.file("missing.pem");
  CHECK(refusal({missing, c.ec_one.key}) == missing + ": No such file or directory");
  const std::string text = c.file("not-pem.txt");
  write_file(text, "hello, I am not a certificate\n");
  CHECK(refusal({text, c.ec_one.key}) ==
        text + ": no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)");
  CHECK_THAT(refusal({c.ec_one.certificate, text}), Catch::StartsWith(text + ": no PEM private key"));
  CHECK(refusal({c.dir, c.ec_one.key}) == c.dir + ": not a regular file");
  const std::string cut = c.file("cut.crt");
  const std::string whole = hwproc::read_file(c.ec_one.certificate);
  write_file(cut, whole.substr(0, whole.size() / 2));
  CHECK_THAT(refusal({cut, c.ec_one.key}), Catch::StartsWith(cut + ": no certificate could be read"));
  CHECK(refusal({c.ec_one.certificate, c.encrypted_key}) ==
        c.encrypted_key + ": the private key is encrypted (pass phrases are not supported)");
  CHECK(refusal({c.ec_one.certificate, c.ec_two.key}) ==
        c.ec_two.key + ": the private key does not match the certificate in " +
            c.ec_one.certificate);
  tls::ContextOptions two_ec = server_options(c.ec_one);
  two_ec.certificates.push_back(c.ec_two);
  CHECK_THROWS_WITH(tls::Context(two_ec), Catch::Contains("one certificate per key type"));
  tls::ContextOptions client = client_options(text);
  CHECK_THROWS_WITH(tls::Context(client), Catch::StartsWith(text + ": no PEM certificate"));
  // The certificate and its key in one file work (the key block is skipped
  // when the chain is read).
  const std::string combined = c.file("combined.pem");
  write_file(combined, whole + hwproc::read_file(c.ec_one.key));
  CHECK_NOTHROW(tls::Context(server_options({combined, combined})));
}

TEST_CASE("A client resumes with the ticket of its previous connection", "[tls][context][resume]") {
  tls::Context server(server_options(certs().ec_one));
  auto version = GENERATE(tls::Version::tls1_3, tls::Version::tls1_2);
  CAPTURE(static_cast<int>(version));
  tls::ContextOptions co = client_options(certs().ec_one.certificate);
  co.max_version = version;
  co.client_session_cache = true;
  tls::Context client(co);
  {
    Pair first = connect(client, server);
    REQUIRE(first.client.session.established());
    CHECK_FALSE(first.client.session.resumed());
    // TLS 1.3 tickets follow the handshake; the client takes them in its
    // next read (connect() pumped them across already). The connection
    // then ends without close_notify (the socket just closed).
  }
  Pair second = connect(client, server);
  REQUIRE(second.client.session.established());
  CHECK(second.client.session.resumed());
  CHECK(second.server.session.resumed());
  CHECK(peer_common_name(second.client.session) == "ec-one");
  REQUIRE_FALSE(second.client.session.write("resumed", second.client.out));
  pump(second.client, second.server);
  CHECK(second.server.received == "resumed");
  // Another key has no session; a client without the cache never resumes.
  Pair other = connect(client, server, "localhost", "another-server:443");
  CHECK_FALSE(other.client.session.resumed());
  tls::ContextOptions plain = client_options(certs().ec_one.certificate);
  plain.max_version = version;
  tls::Context no_cache(plain);
  connect(no_cache, server);
  CHECK_FALSE(connect(no_cache, server).client.session.resumed());
}

namespace {

// A client connection whose SSL counts the NewSessionTicket messages it
// reads (OpenSSL's message callback sees them decrypted).
struct CountedPair {
  Pair pair;
  int tickets = 0;
};

void count_ticket(int write_p, int, int content_type, const void* buf, std::size_t len, SSL*,
                  void* arg) {
  const auto* msg = static_cast<const unsigned char*>(buf);
  if (!write_p && content_type == SSL3_RT_HANDSHAKE && len > 0 &&
      msg[0] == SSL3_MT_NEWSESSION_TICKET) {
    ++*static_cast<int*>(arg);
  }
}

// `counted.pair` connected like connect(), counting into `counted.tickets`
// (made in place: the callback keeps the counter's address).
void connect_counting(CountedPair& counted) {
  SSL* ssl = counted.pair.client.session.native_handle();
  REQUIRE(ssl != nullptr);
  SSL_set_msg_callback(ssl, count_ticket);
  SSL_set_msg_callback_arg(ssl, &counted.tickets);
  REQUIRE(counted.pair.client.session.start(counted.pair.client.out));
  pump(counted.pair.client, counted.pair.server);
  REQUIRE(counted.pair.client.session.established());
}

}  // namespace

TEST_CASE("A full handshake sends session_tickets tickets and a resumed one a new ticket",
          "[tls][context][resume]") {
  // 1 by default (OpenSSL's is 2): each costs the server an encrypted copy
  // of the session; one resumes the next connection, which brings the next.
  const int tickets = GENERATE(-1, 0, 1, 2, 3);
  CAPTURE(tickets);
  tls::ContextOptions so = server_options(certs().ec_one);
  if (tickets >= 0) so.session_tickets = static_cast<std::uint8_t>(tickets);
  const int expected = tickets < 0 ? 1 : tickets;
  tls::Context server(so);
  tls::ContextOptions co = client_options(certs().ec_one.certificate);
  co.client_session_cache = true;
  tls::Context client(co);
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    CountedPair c{
        Pair{End(tls::Session::client(client, "localhost")), End(tls::Session::server(server))}};
    connect_counting(c);
    // The handshake's last flight is pumped with it: every ticket is read.
    const bool resumed = round > 0 && expected > 0;
    CHECK(c.pair.client.session.resumed() == resumed);
    CHECK(c.pair.server.session.resumed() == resumed);
    // After a resumption OpenSSL sends one ticket, whatever the number.
    CHECK(c.tickets == (resumed ? 1 : expected));
    REQUIRE_FALSE(c.pair.client.session.write("hello", c.pair.client.out));
    pump(c.pair.client, c.pair.server);
    CHECK(c.pair.server.received == "hello");
  }
}

TEST_CASE("session_tickets is a server option of at most kMaxSessionTickets",
          "[tls][context][resume]") {
  tls::ContextOptions so = server_options(certs().ec_one);
  so.session_tickets = tls::kMaxSessionTickets;
  CHECK_NOTHROW(so.validate());
  so.session_tickets = tls::kMaxSessionTickets + 1;
  CHECK_THROWS_WITH(so.validate(), Catch::Contains("session_tickets must be 0 to 8 (got 9)"));
  tls::ContextOptions co = client_options();
  co.session_tickets = 2;
  CHECK_THROWS_WITH(co.validate(), Catch::Contains("session_tickets is a server option"));
}

TEST_CASE("reload: new handshakes get the new certificate, established sessions keep theirs",
          "[tls][context][reload]") {
  const Certs& c = certs();
  // The server's files, as certbot would renew them in place.
  const tls::CertificateFiles live = live_copy("live", c.ec_one);
  tls::Context server(server_options(live));
  tls::ContextOptions co = client_options();
  co.client_session_cache = true;
  tls::Context client(co);
  CHECK(server.generation() == 1);
  Pair before = connect(client, server);
  REQUIRE(before.client.session.established());
  CHECK(peer_common_name(before.client.session) == "ec-one");

  copy_file(c.ec_two.certificate, live.certificate);
  copy_file(c.ec_two.key, live.key);
  CHECK_FALSE(server.reload().has_value());
  CHECK(server.generation() == 2);

  Pair after = connect(client, server);
  REQUIRE(after.client.session.established());
  CHECK(peer_common_name(after.client.session) == "ec-two");
  // The ticket came from the previous generation's keys: a full handshake.
  CHECK_FALSE(after.client.session.resumed());

  // The session made before the reload goes on with its certificate.
  REQUIRE_FALSE(before.client.session.write("still here", before.client.out));
  pump(before.client, before.server);
  CHECK(before.server.received == "still here");
  REQUIRE_FALSE(before.server.session.write("and so am I", before.server.out));
  pump(before.client, before.server);
  CHECK(before.client.received == "and so am I");
  CHECK(peer_common_name(before.client.session) == "ec-one");
}

TEST_CASE("reload: a bad file is refused with a message and the old certificate stays",
          "[tls][context][reload]") {
  const Certs& c = certs();
  const tls::CertificateFiles live = live_copy("live2", c.ec_one);
  tls::Context server(server_options(live));
  tls::Context client(client_options());

  write_file(live.certificate, "-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n");
  std::optional<tls::LoadError> error = server.reload();
  REQUIRE(error.has_value());
  CHECK(error->file == live.certificate);
  CHECK_THAT(error->message(), Catch::StartsWith(live.certificate + ": no certificate could be read"));
  CHECK(server.generation() == 1);
  Pair p = connect(client, server);
  REQUIRE(p.client.session.established());
  CHECK(peer_common_name(p.client.session) == "ec-one");

  // Half a renewal: the new certificate is in, its key is not yet.
  copy_file(c.ec_two.certificate, live.certificate);
  error = server.reload();
  REQUIRE(error.has_value());
  CHECK(error->file == live.key);
  CHECK_THAT(error->reason, Catch::Contains("does not match the certificate in " + live.certificate));
  CHECK(peer_common_name(connect(client, server).client.session) == "ec-one");

  std::remove(live.key.c_str());
  error = server.reload();
  REQUIRE(error.has_value());
  CHECK(error->message() == live.key + ": No such file or directory");

  copy_file(c.ec_two.key, live.key);
  CHECK_FALSE(server.reload().has_value());
  CHECK(server.generation() == 2);
  CHECK(peer_common_name(connect(client, server).client.session) == "ec-two");
}
