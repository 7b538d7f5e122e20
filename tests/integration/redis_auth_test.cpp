// The Redis link's AUTH against a real redis-server of the test's own, with
// requirepass and with an ACL user: the right password carries commands and
// pub/sub on every connection (reconnects too); a wrong or missing one is
// reported (the address, never the password), counted, and retried with the
// connector's backoff, not in a tight loop. Over mutual TLS (a client
// certificate; tests/unit/tls_support.h makes the certificates).
#include <heartwheel/redis/error.h>
#include <heartwheel/redis/subscriber.h>
#include <heartwheel/tls/context.h>
#include <heartwheel/tls/net_transport.h>

#include <algorithm>
#include <memory>

#include "redis_test_support.h"
#include "unit/tls_support.h"

using namespace hwtest;
using hwproc::Ms;
namespace tls = heartwheel::tls;

namespace {

bool any_contains(const std::vector<std::string>& lines, std::string_view text) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("A Redis client with the right password runs commands, again after Redis restarts",
          "[redis][auth]") {
  hwproc::Watchdog dog(Ms(60000));
  RedisServer server(RedisServerOptions{.password = "open sesame"});
  TestLoop t;
  auto o = link_to<redis::ClientOptions>(server);
  o.password = "open sesame";
  LinkEvents events;
  events.hook(o);
  redis::Client client(*t.wheel, o);
  client.start();
  Outcome set;
  REQUIRE_FALSE(client.command({"SET", "k", "v"}, set.callback()));
  REQUIRE(t.run_until([&] { return set.done; }));
  CHECK_FALSE(set.error);
  CHECK(server.command({"GET", "k"}).str() == "v");

  server.kill();
  server.restart();
  Outcome get;
  REQUIRE(t.run_until([&] { return client.connected() && events.connects == 2; }));
  REQUIRE_FALSE(client.command({"GET", "k"}, get.callback()));
  REQUIRE(t.run_until([&] { return get.done; }));
  CHECK_FALSE(get.error);  // the second connection authenticated too (else NOAUTH)
  CHECK(client.stats().auth_failures == 0);
  CHECK(events.errors.empty());
}

TEST_CASE("A Redis link with an ACL user authenticates as that user, subscriber included",
          "[redis][auth]") {
  hwproc::Watchdog dog(Ms(60000));
  RedisServer server(RedisServerOptions{.password = "pw-1", .user = "chat"});
  TestLoop t;
  auto co = link_to<redis::ClientOptions>(server);
  co.user = "chat";
  co.password = "pw-1";
  redis::Client client(*t.wheel, co);
  client.start();
  auto so = link_to<redis::SubscriberOptions>(server);
  so.user = "chat";
  so.password = "pw-1";
  std::vector<std::string> got;
  so.on_message = [&](const redis::Message& m) { got.emplace_back(m.payload); };
  redis::Subscriber sub(*t.wheel, so);
  sub.subscribe("room");
  sub.start();
  REQUIRE(t.run_until([&] { return sub.active("room") && client.connected(); }));
  Outcome who, pub;
  REQUIRE_FALSE(client.command({"ACL", "WHOAMI"}, who.callback()));
  REQUIRE_FALSE(client.command({"PUBLISH", "room", "hi"}, pub.callback()));
  REQUIRE(t.run_until([&] { return pub.done && got.size() == 1; }));
  CHECK(who.reply.str() == "chat");
  CHECK(pub.reply.integer() == 1);
  CHECK(got == std::vector<std::string>{"hi"});
}

TEST_CASE("A refused AUTH is reported with the address, counted and retried with backoff",
          "[redis][auth]") {
  hwproc::Watchdog dog(Ms(60000));
  RedisServer server(RedisServerOptions{.password = "right", .user = "chat"});
  TestLoop t;
  auto o = link_to<redis::ClientOptions>(server);
  o.user = "chat";
  o.password = "wrong-password-xyz";
  o.connector.backoff_initial = std::chrono::milliseconds(50);
  o.connector.backoff_max = std::chrono::milliseconds(400);
  LinkEvents events;
  events.hook(o);
  redis::Client client(*t.wheel, o);
  client.start();
  REQUIRE(t.run_until([&] { return client.stats().auth_failures >= 1; }));
  t.run_for(1500ms);
  const redis::LinkStats s = client.stats();
  // Backoff 50, 100, 200, 400, 400 ms (less jitter): a handful of tries in
  // 1.5 s, never hundreds.
  CHECK(s.auth_failures >= 2);
  CHECK(s.auth_failures <= 10);
  CHECK(s.setup_errors == 0);
  REQUIRE_FALSE(events.errors.empty());
  const std::string address = "127.0.0.1:" + std::to_string(server.port());
  CHECK(any_contains(events.errors, "AUTH refused by " + address + " for user chat: WRONGPASS"));
  CHECK_FALSE(any_contains(events.errors, "wrong-password-xyz"));
  // A command waits in the buffer, then fails on its deadline: nothing ran.
  Outcome set;
  REQUIRE_FALSE(client.command({"SET", "k", "v"}, set.callback(), {.timeout = 200ms}));
  REQUIRE(t.run_until([&] { return set.done; }));
  CHECK(set.error);
}

TEST_CASE("A link without a password to a Redis that wants one reports NOAUTH and retries",
          "[redis][auth]") {
  hwproc::Watchdog dog(Ms(60000));
  RedisServer server(RedisServerOptions{.password = "pw"});
  TestLoop t;
  auto o = link_to<redis::SubscriberOptions>(server);
  o.on_message = [](const redis::Message&) {};
  LinkEvents events;
  events.hook(o);
  redis::Subscriber sub(*t.wheel, o);
  sub.subscribe("room");
  sub.start();
  REQUIRE(t.run_until([&] { return sub.stats().auth_failures >= 2; }));
  CHECK(any_contains(events.errors, "for the default user: NOAUTH"));
  CHECK_FALSE(sub.active("room"));
}

TEST_CASE("AUTH to a Redis with no password is refused as a configuration error",
          "[redis][auth]") {
  hwproc::Watchdog dog(Ms(60000));
  RedisServer server;
  TestLoop t;
  auto o = link_to<redis::ClientOptions>(server);
  o.password = "not-configured";
  LinkEvents events;
  events.hook(o);
  redis::Client client(*t.wheel, o);
  client.start();
  REQUIRE(t.run_until([&] { return client.stats().auth_failures >= 1; }));
  CHECK(any_contains(events.errors, "AUTH refused by 127.0.0.1:"));
  CHECK_FALSE(any_contains(events.errors, "not-configured"));
}

TEST_CASE("A Redis link over mutual TLS with AUTH carries commands and messages",
          "[redis][auth][tls]") {
  hwproc::Watchdog dog(Ms(60000));
  const auto& certs = tls_test::certs();
  // Redis: ec_one's certificate; it trusts ec_two's (the client's).
  RedisServer server(RedisServerOptions{.password = "pw",
                                        .tls_cert = certs.ec_one.certificate,
                                        .tls_key = certs.ec_one.key,
                                        .tls_ca = certs.ec_two.certificate});
  TestLoop t;
  tls::ContextOptions co = tls_test::client_options(certs.ec_one.certificate);
  co.alpn.clear();
  co.certificates = {certs.ec_two};
  const auto context = std::make_shared<tls::Context>(co);

  auto o = link_to<redis::ClientOptions>(server);
  o.connector.port = server.tls_port();
  o.connector.transport = tls::client_transport(context, "127.0.0.1");
  o.password = "pw";
  redis::Client client(*t.wheel, o);
  auto so = link_to<redis::SubscriberOptions>(server);
  so.connector.port = server.tls_port();
  so.connector.transport = o.connector.transport;
  so.password = "pw";
  std::vector<std::string> got;
  so.on_message = [&](const redis::Message& m) { got.emplace_back(m.payload); };
  redis::Subscriber sub(*t.wheel, so);
  sub.subscribe("room");
  client.start();
  sub.start();
  REQUIRE(t.run_until([&] { return sub.active("room") && client.connected(); }));
  Outcome pub;
  REQUIRE_FALSE(client.command({"PUBLISH", "room", "over tls"}, pub.callback()));
  REQUIRE(t.run_until([&] { return pub.done && got.size() == 1; }));
  CHECK(pub.reply.integer() == 1);
  CHECK(got == std::vector<std::string>{"over tls"});
  // Both connections came in on the TLS port.
  CHECK(server.command({"INFO", "stats"}).str().find("total_connections_received") !=
        std::string::npos);

  // Without a client certificate Redis refuses the handshake: no connection.
  tls::ContextOptions bare = tls_test::client_options(certs.ec_one.certificate);
  bare.alpn.clear();
  auto lo = link_to<redis::ClientOptions>(server);
  lo.connector.port = server.tls_port();
  lo.connector.transport =
      tls::client_transport(std::make_shared<tls::Context>(bare), "127.0.0.1");
  lo.password = "pw";
  redis::Client lone(*t.wheel, lo);
  lone.start();
  // TLS 1.3: the client's side of the handshake is done before Redis checks
  // the certificate, so a connection may open and be closed at once by
  // Redis's alert; no command ever gets through.
  Outcome ping;
  REQUIRE_FALSE(lone.command({"PING"}, ping.callback(), {.timeout = 500ms}));
  REQUIRE(t.run_until([&] { return ping.done; }));
  CHECK(ping.error);
  CHECK(lone.stats().replies_ok == 0);
}
