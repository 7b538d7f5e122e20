// redis::Subscriber against a real redis-server of the test's own: messages
// on channels and patterns, unsubscribing, and re-subscribing everything
// after Redis is killed and restarted on the same port.
#include <heartwheel/redis/subscriber.h>

#include <tuple>

#include "redis_test_support.h"

using namespace hwtest;
using hwproc::Ms;

namespace {

// What a subscriber saw.
struct Inbox {
  std::vector<std::tuple<std::string, std::string, std::string>>
      messages;                           // channel, payload, pattern
  std::vector<std::string> subscribed;    // names confirmed, with "again:" on a reconnect
  std::vector<std::size_t> resubscribed;  // on_resubscribed counts

  void hook(redis::SubscriberOptions& o) {
    o.on_message = [this](const redis::Message& m) {
      messages.emplace_back(m.channel, m.payload, m.pattern);
    };
    o.on_subscribed = [this](std::string_view name, bool pattern, bool again) {
      subscribed.push_back(std::string(again ? "again:" : "") + (pattern ? "p:" : "") +
                           std::string(name));
    };
    o.on_resubscribed = [this](std::size_t n) { resubscribed.push_back(n); };
  }
};

std::int64_t publish(RedisServer& server, std::string_view channel, std::string_view data) {
  return server.command({"PUBLISH", channel, data}).integer();
}

}  // namespace

TEST_CASE("A Redis subscriber gets messages of its channels and patterns until it unsubscribes",
          "[redis][subscriber]") {
  hwproc::Watchdog dog(Ms(60000));
  RedisServer server;
  TestLoop t;
  auto o = link_to<redis::SubscriberOptions>(server);
  Inbox inbox;
  inbox.hook(o);
  redis::Subscriber sub(*t.wheel, o);
  sub.subscribe("news");
  sub.subscribe("news");  // idempotent
  sub.psubscribe("user:*");
  CHECK(sub.subscriptions() == 2);
  CHECK_FALSE(sub.active("news"));
  sub.start();
  REQUIRE(t.run_until([&] { return sub.active("news") && sub.active_pattern("user:*"); }));
  CHECK(inbox.subscribed == std::vector<std::string>{"news", "p:user:*"});

  CHECK(publish(server, "news", "hello") == 1);
  CHECK(publish(server, "user:42", "hi 42") == 1);
  CHECK(publish(server, "other", "nobody") == 0);
  REQUIRE(t.run_until([&] { return inbox.messages.size() == 2; }));
  CHECK(inbox.messages[0] == std::make_tuple("news", "hello", ""));
  CHECK(inbox.messages[1] == std::make_tuple("user:42", "hi 42", "user:*"));

  // A channel added while connected is subscribed at once; one removed is
  // unsubscribed (Redis then counts no receiver).
  sub.subscribe("late");
  sub.unsubscribe("news");
  CHECK_FALSE(sub.wants("news"));
  REQUIRE(t.run_until([&] { return sub.active("late"); }));
  t.run_for(50ms);
  CHECK(publish(server, "news", "gone") == 0);
  CHECK(publish(server, "late", "yes") == 1);
  REQUIRE(t.run_until([&] { return inbox.messages.size() == 3; }));
  CHECK(inbox.messages[2] == std::make_tuple("late", "yes", ""));

  // The heartbeat's PINGs are answered in the subscribed mode too.
  const redis::LinkStats s = sub.stats();
  CHECK(s.subscriptions == 2);
  CHECK(s.active_subscriptions == 2);
  CHECK(s.subscribes == 3);
  CHECK(s.unsubscribes == 1);
  CHECK(s.messages == 3);
  CHECK(s.resubscribes == 0);
  CHECK(s.protocol_errors == 0);
}

TEST_CASE(
    "A Redis subscriber re-subscribes every channel after Redis restarts and gets what is "
    "published after",
    "[redis][subscriber][reconnect]") {
  hwproc::Watchdog dog(Ms(90000));
  RedisServer server;
  TestLoop t;
  auto o = link_to<redis::SubscriberOptions>(server);
  o.heartbeat.interval = 200ms;
  Inbox inbox;
  inbox.hook(o);
  LinkEvents events;
  events.hook(o);
  redis::Subscriber sub(*t.wheel, o);
  for (const char* c : {"c1", "c2", "c3"}) sub.subscribe(c);
  sub.psubscribe("news.*");
  sub.start();
  REQUIRE(t.run_until([&] { return sub.stats().active_subscriptions == 4; }));
  CHECK(inbox.resubscribed.empty());  // the first connection is not a re-subscription

  server.kill();
  REQUIRE(t.run_until([&] { return events.disconnects.size() == 1; }));
  CHECK_FALSE(sub.connected());
  CHECK_FALSE(sub.active("c1"));
  sub.subscribe("c4");    // wanted while Redis is down
  sub.unsubscribe("c3");  // and one not wanted any more
  t.run_for(200ms);       // connects refused, backing off

  server.restart();
  REQUIRE(t.run_until([&] { return !inbox.resubscribed.empty(); }));
  CHECK(inbox.resubscribed == std::vector<std::size_t>{4});
  CHECK(sub.active("c1"));
  CHECK(sub.active("c4"));
  CHECK_FALSE(sub.wants("c3"));
  CHECK(sub.active_pattern("news.*"));

  // Published after the restart: delivered (the failure this prevents is
  // updates that silently stop after Redis comes back).
  CHECK(publish(server, "c1", "1") == 1);
  CHECK(publish(server, "c2", "2") == 1);
  CHECK(publish(server, "c3", "3") == 0);
  CHECK(publish(server, "c4", "4") == 1);
  CHECK(publish(server, "news.eu", "5") == 1);
  REQUIRE(t.run_until([&] { return inbox.messages.size() == 4; }));
  CHECK(std::get<0>(inbox.messages[0]) == "c1");
  CHECK(std::get<0>(inbox.messages[2]) == "c4");
  CHECK(std::get<2>(inbox.messages[3]) == "news.*");

  const redis::LinkStats s = sub.stats();
  CHECK(s.reconnects == 1);
  CHECK(s.resubscribes == 4);
  CHECK(s.resubscribe_rounds == 1);
  CHECK(s.subscriptions == 4);
  CHECK(s.active_subscriptions == 4);
  CHECK(s.connect_failures >= 1);
  CHECK(events.connects == 2);
  const std::size_t again = static_cast<std::size_t>(
      std::count_if(inbox.subscribed.begin(), inbox.subscribed.end(),
                    [](const std::string& n) { return n.rfind("again:", 0) == 0; }));
  CHECK(again == 4);
}
