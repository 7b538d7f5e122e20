// redis::Client against a real redis-server of the test's own: commands and
// pipelining, per-command deadlines, scripts, streams, a Redis killed and
// restarted on the same port, a Redis frozen with SIGSTOP.
#include <heartwheel/common/error.h>
#include <heartwheel/redis/client.h>
#include <heartwheel/redis/stream.h>

#include "redis_test_support.h"

using namespace hwtest;
using hwproc::Ms;
using hwerrc = heartwheel::errc;

TEST_CASE("A Redis client runs commands and pipelines a thousand of them in one write",
          "[redis][client]") {
  hwproc::Watchdog dog(Ms(60000));
  RedisServer server;
  TestLoop t;
  auto o = link_to<redis::ClientOptions>(server);
  redis::Client client(*t.wheel, o);
  Outcome early;
  CHECK(client.command({"PING"}, early.callback()) == redis::errc::stopped);
  client.start();

  // Issued before the connection is up: buffered, then sent in order.
  const std::string binary("a\0b\r\nc", 6);
  Outcome set, get, missing, wrong, push, range;
  REQUIRE_FALSE(client.command({"SET", "k", binary}, set.callback()));
  REQUIRE_FALSE(client.command({"GET", "k"}, get.callback()));
  REQUIRE_FALSE(client.command({"GET", "nothing"}, missing.callback()));
  REQUIRE_FALSE(client.command({"LPUSH", "k", "x"}, wrong.callback()));
  REQUIRE_FALSE(client.command({"RPUSH", "list", "a", "b", "c"}, push.callback()));
  REQUIRE_FALSE(client.command({"LRANGE", "list", "0", "-1"}, range.callback()));
  CHECK(client.buffered() == 6);
  REQUIRE(t.run_until([&] { return range.done; }));
  CHECK(set.reply.is("OK"));
  CHECK(get.reply == redis::Reply::string(binary));
  CHECK(missing.reply.is_nil());
  CHECK(wrong.error == redis::errc::server_error);
  CHECK(wrong.reply.str().substr(0, 9) == "WRONGTYPE");
  CHECK(push.reply == redis::Reply::integer(3));
  CHECK(range.reply == redis::Reply::array({redis::Reply::string("a"), redis::Reply::string("b"),
                                            redis::Reply::string("c")}));
  CHECK(client.command({"SUBSCRIBE", "x"}, nullptr) == redis::errc::not_allowed);
  CHECK(client.command({"client", "reply", "off"}, nullptr) == redis::errc::not_allowed);

  // A thousand INCRs issued in one go leave in one write, and their replies
  // come back in order.
  const auto writes_before = client.stats().writes;
  std::vector<std::int64_t> values;
  for (int i = 0; i < 1000; ++i)
    REQUIRE_FALSE(client.command({"INCR", "counter"}, [&](std::error_code ec, redis::Reply r) {
      CHECK_FALSE(ec);
      values.push_back(r.integer());
    }));
  CHECK(client.in_flight() == 1000);  // all sent before any reply was read
  REQUIRE(t.run_until([&] { return values.size() == 1000; }));
  for (std::size_t i = 0; i < values.size(); ++i)
    CHECK(values[i] == static_cast<std::int64_t>(i + 1));
  CHECK(client.stats().writes - writes_before <= 2);  // the batch (and perhaps a PING)

  const redis::LinkStats s = client.stats();
  CHECK(s.connected == 1);
  CHECK(s.connects == 1);
  CHECK(s.commands == 1006);
  CHECK(s.sent == 1006);
  CHECK(s.replies_ok == 1005);
  CHECK(s.replies_error == 1);
  CHECK(s.buffered_total == 6);
  CHECK(s.in_flight == 0);
  CHECK(s.timed_out + s.failed_disconnected + s.failed_stopped == 0);

  // stop() fails what is pending and refuses what comes after.
  Outcome pending;
  REQUIRE_FALSE(client.command({"BLPOP", "never", "0"}, pending.callback(), {.timeout = {}}));
  client.stop();
  CHECK(pending.error == redis::errc::stopped);
  CHECK(client.command({"PING"}, nullptr) == redis::errc::stopped);
  CHECK(client.stats().failed_stopped == 1);
}

TEST_CASE(
    "A Redis command whose deadline passes fails with timed_out and its late reply is "
    "discarded",
    "[redis][client][deadline]") {
  hwproc::Watchdog dog(Ms(60000));
  RedisServer server;
  TestLoop t(2ms);
  auto o = link_to<redis::ClientOptions>(server);
  o.command_timeout = std::chrono::seconds(5);
  redis::Client client(*t.wheel, o);
  client.start();
  REQUIRE(t.run_until([&] { return client.connected(); }));

  // The oldest command times out on its own deadline: BLPOP waits 1 s in
  // Redis, the client gives it 200 ms. The GET behind it is answered after.
  Outcome blpop, get;
  // Deadlines count from the loop's clock (never ahead of hr_now()).
  const Duration start = t.wheel->now().time_since_epoch();
  REQUIRE_FALSE(client.command({"BLPOP", "empty", "1"}, blpop.callback(), {.timeout = 200ms}));
  REQUIRE_FALSE(client.command({"GET", "k"}, get.callback()));
  REQUIRE(t.run_until([&] { return blpop.done; }));
  CHECK(blpop.error == hwerrc::timed_out);
  CHECK(blpop.at - start >= 200ms);
  CHECK(blpop.at - start < 900ms);
  CHECK_FALSE(get.done);
  REQUIRE(t.run_until([&] { return get.done; }));
  CHECK_FALSE(get.error);
  CHECK(get.at - start >= 900ms);  // held up behind the BLPOP in Redis
  CHECK(blpop.calls == 1);         // the late nil reply went nowhere

  // A shorter deadline behind a longer one fires first: the slot holds the
  // minimum in flight, not only the oldest command's.
  Outcome slow, quick;
  const Duration start2 = t.wheel->now().time_since_epoch();
  REQUIRE_FALSE(client.command({"BLPOP", "empty", "1"}, slow.callback(), {.timeout = 3s}));
  REQUIRE_FALSE(client.command({"PING"}, quick.callback(), {.timeout = 150ms}));
  REQUIRE(t.run_until([&] { return quick.done; }));
  CHECK(quick.error == hwerrc::timed_out);
  CHECK(quick.at - start2 >= 150ms);
  CHECK_FALSE(slow.done);
  REQUIRE(t.run_until([&] { return slow.done; }));
  CHECK_FALSE(slow.error);  // BLPOP's own timeout: a nil reply
  CHECK(slow.reply.is_nil());
  REQUIRE(t.run_until([&] { return client.in_flight() == 0; }));

  const redis::LinkStats s = client.stats();
  CHECK(s.timed_out == 2);
  CHECK(s.late_replies == 2);
  CHECK(s.replies_ok == 2);
  CHECK(s.disconnects == 0);  // a timeout does not cost the connection
}

TEST_CASE("A Lua script runs by EVALSHA and falls back to EVAL once when Redis lost it",
          "[redis][client][script]") {
  hwproc::Watchdog dog(Ms(60000));
  RedisServer server;
  TestLoop t;
  redis::Client client(*t.wheel, link_to<redis::ClientOptions>(server));
  client.start();
  // A claim in the shape the delayed pushes use: remove from the schedule,
  // then take the payload, atomically.
  const redis::Script claim(
      "if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then "
      "local p = redis.call('HGET', KEYS[2], ARGV[1]) redis.call('HDEL', KEYS[2], ARGV[1]) "
      "return p end return false");
  Outcome load;
  REQUIRE_FALSE(client.command({"SCRIPT", "LOAD", claim.source()}, load.callback()));
  REQUIRE(t.run_until([&] { return load.done; }));
  CHECK(load.reply.str() == claim.sha1());

  auto schedule = [&](std::string_view id, std::string_view payload) {
    Outcome z, h;
    REQUIRE_FALSE(client.command({"ZADD", "delayed", "1000", id}, z.callback()));
    REQUIRE_FALSE(client.command({"HSET", "payload", id, payload}, h.callback()));
    REQUIRE(t.run_until([&] { return h.done; }));
  };
  schedule("a", "first");
  Outcome claimed, again;
  REQUIRE_FALSE(client.command(claim.call({"delayed", "payload"}, {"a"}), claimed.callback()));
  REQUIRE_FALSE(client.command(claim.call({"delayed", "payload"}, {"a"}), again.callback()));
  REQUIRE(t.run_until([&] { return again.done; }));
  CHECK(claimed.reply == redis::Reply::string("first"));
  CHECK(again.reply.is_nil());  // only one claim wins
  CHECK(client.stats().script_fallbacks == 0);

  // Redis forgets its scripts (a restart, a failover, SCRIPT FLUSH): the
  // NOSCRIPT answer is not the caller's; the call is made again as EVAL.
  Outcome flushed;
  REQUIRE_FALSE(client.command({"SCRIPT", "FLUSH"}, flushed.callback()));
  schedule("b", "second");
  Outcome after_flush, cached_again;
  REQUIRE_FALSE(client.command(claim.call({"delayed", "payload"}, {"b"}), after_flush.callback()));
  REQUIRE(t.run_until([&] { return after_flush.done; }));
  CHECK_FALSE(after_flush.error);
  CHECK(after_flush.reply == redis::Reply::string("second"));
  CHECK(client.stats().script_fallbacks == 1);
  REQUIRE_FALSE(client.command(claim.call({"delayed", "payload"}, {"b"}), cached_again.callback()));
  REQUIRE(t.run_until([&] { return cached_again.done; }));
  CHECK(cached_again.reply.is_nil());
  CHECK(client.stats().script_fallbacks == 1);  // EVAL cached it again

  // A script's own error is the caller's.
  const redis::Script broken("return redis.call('NOSUCHCOMMAND')");
  Outcome bad;
  REQUIRE_FALSE(client.command(broken.call({}), bad.callback()));
  REQUIRE(t.run_until([&] { return bad.done; }));
  CHECK(bad.error == redis::errc::server_error);
  // Loaded ahead of its first call (SCRIPT LOAD compiles, the error is at
  // run time): no NOSCRIPT, the error is the script's own.
  CHECK(client.stats().script_fallbacks == 1);
}

TEST_CASE("A script's first calls on a connection find it loaded and run in the order made",
          "[redis][client][script]") {
  // Calls made one per loop turn from the connect on, to a Redis that never
  // saw the script: each call's list entry must come in call order. Without
  // the SCRIPT LOAD ahead of the first call, the early calls each got
  // NOSCRIPT and went again as EVAL, and a call made between those answers
  // could run before an earlier call's EVAL.
  hwproc::Watchdog dog(Ms(60000));
  RedisServer server;
  TestLoop t;
  redis::Client client(*t.wheel, link_to<redis::ClientOptions>(server));
  client.start();
  const redis::Script push("return redis.call('RPUSH', KEYS[1], ARGV[1])");
  constexpr int kCalls = 300;
  int made = 0;
  int answered = 0;
  REQUIRE(t.run_until([&] {
    if (made < kCalls) {
      const std::string n = std::to_string(made++);
      REQUIRE_FALSE(client.command(push.call({"order"}, {n}), [&](std::error_code ec, redis::Reply) {
        CHECK_FALSE(ec);
        ++answered;
      }));
    }
    return answered == kCalls;
  }));
  CHECK(client.stats().script_fallbacks == 0);
  Outcome list;
  REQUIRE_FALSE(client.command({"LRANGE", "order", "0", "-1"}, list.callback()));
  REQUIRE(t.run_until([&] { return list.done; }));
  REQUIRE(list.reply.size() == kCalls);
  for (int i = 0; i < kCalls; ++i) CHECK(list.reply[static_cast<std::size_t>(i)].str() == std::to_string(i));
}

TEST_CASE("XADD and XRANGE replies parse into stream entries in order", "[redis][client][stream]") {
  hwproc::Watchdog dog(Ms(60000));
  RedisServer server;
  TestLoop t;
  redis::Client client(*t.wheel, link_to<redis::ClientOptions>(server));
  client.start();
  std::vector<redis::StreamId> ids;
  for (int i = 0; i < 5; ++i)
    REQUIRE_FALSE(client.command(
        {"XADD", "history:chat", "MAXLEN", "~", "100", "*", "data", "m" + std::to_string(i)},
        [&](std::error_code ec, redis::Reply r) {
          REQUIRE_FALSE(ec);
          auto id = redis::StreamId::parse(r.str());
          REQUIRE(id);
          ids.push_back(*id);
        }));
  REQUIRE(t.run_until([&] { return ids.size() == 5; }));
  for (std::size_t i = 1; i < ids.size(); ++i) CHECK(ids[i - 1] < ids[i]);

  // Everything after the second entry: the gap a reconnecting node reads.
  std::vector<redis::StreamEntry> entries;
  Outcome range;
  REQUIRE_FALSE(client.command({"XRANGE", "history:chat", ids[1].successor().to_string(), "+"},
                               range.callback()));
  REQUIRE(t.run_until([&] { return range.done; }));
  REQUIRE_FALSE(redis::parse_entries(std::move(range.reply), entries));
  REQUIRE(entries.size() == 3);
  CHECK(entries[0].id == ids[2].to_string());
  CHECK(entries[0].field("data") == "m2");
  CHECK(entries[2].field("data") == "m4");

  Outcome read;
  REQUIRE_FALSE(
      client.command({"XREAD", "COUNT", "2", "STREAMS", "history:chat", "0"}, read.callback()));
  REQUIRE(t.run_until([&] { return read.done; }));
  std::vector<redis::StreamEntries> streams;
  REQUIRE_FALSE(redis::parse_xread(std::move(read.reply), streams));
  REQUIRE(streams.size() == 1);
  CHECK(streams[0].stream == "history:chat");
  CHECK(streams[0].entries.size() == 2);

  Outcome not_a_stream;
  REQUIRE_FALSE(client.command({"XRANGE", "nokey-but-string", "-", "+"}, nullptr));
  REQUIRE_FALSE(client.command({"SET", "s", "x"}, nullptr));
  REQUIRE_FALSE(client.command({"XRANGE", "s", "-", "+"}, not_a_stream.callback()));
  REQUIRE(t.run_until([&] { return not_a_stream.done; }));
  std::vector<redis::StreamEntry> none;
  CHECK(redis::parse_entries(std::move(not_a_stream.reply), none) == redis::errc::server_error);
}

TEST_CASE(
    "Commands during a Redis outage fail or wait in the bounded buffer and go out when it "
    "is back",
    "[redis][client][reconnect]") {
  hwproc::Watchdog dog(Ms(90000));
  RedisServer server;
  TestLoop t;
  auto o = link_to<redis::ClientOptions>(server);
  o.command_timeout = std::chrono::seconds(30);
  o.max_buffered = 3;
  LinkEvents events;
  events.hook(o);
  redis::Client client(*t.wheel, o);
  client.start();
  REQUIRE(t.run_until([&] { return client.connected(); }));

  // In flight when Redis dies: one fails (it may have run), one is resent.
  Outcome lost, kept;
  REQUIRE_FALSE(client.command({"BLPOP", "q1", "0"}, lost.callback()));
  REQUIRE_FALSE(client.command({"BLPOP", "q2", "0"}, kept.callback(), {.retry = true}));
  t.run_for(50ms);
  server.kill();
  REQUIRE(t.run_until([&] { return lost.done; }));
  CHECK(lost.error == redis::errc::disconnected);
  CHECK_FALSE(kept.done);
  CHECK_FALSE(client.connected());
  CHECK(client.buffered() == 1);  // the retried BLPOP waits for the next connection
  REQUIRE(events.disconnects.size() == 1);

  // While Redis is down: buffered up to max_buffered, then refused; a
  // buffered command still has its deadline.
  Outcome first, expires, refused;
  REQUIRE_FALSE(client.command({"INCR", "after"}, first.callback()));
  REQUIRE_FALSE(client.command({"INCR", "never"}, expires.callback(), {.timeout = 100ms}));
  CHECK(client.command({"INCR", "after"}, refused.callback()) == redis::errc::buffer_full);
  REQUIRE(t.run_until([&] { return expires.done; }));
  CHECK(expires.error == hwerrc::timed_out);
  CHECK(client.buffered() == 2);
  t.run_for(300ms);  // several refused connects, backing off
  const redis::LinkStats down = client.stats();
  CHECK(down.connected == 0);
  CHECK(down.connect_failures >= 2);
  CHECK(down.buffered == 2);

  // Back: the buffer goes out in order, the retried BLPOP first (so the INCR
  // waits behind it until q2 gets an element).
  server.restart();
  REQUIRE(t.run_until([&] { return client.connected(); }));
  CHECK(server.command({"LPUSH", "q2", "hello"}) == redis::Reply::integer(1));
  REQUIRE(t.run_until([&] { return first.done; }));
  REQUIRE(kept.done);
  CHECK(kept.at <= first.at);
  CHECK_FALSE(kept.error);
  CHECK(kept.reply ==
        redis::Reply::array({redis::Reply::string("q2"), redis::Reply::string("hello")}));
  CHECK_FALSE(first.error);
  CHECK(first.reply == redis::Reply::integer(1));    // a fresh Redis: the INCR ran once
  CHECK(server.command({"GET", "never"}).is_nil());  // the expired one was never sent
  CHECK_FALSE(refused.done);                         // refused: no callback

  const redis::LinkStats s = client.stats();
  CHECK(s.connected == 1);
  CHECK(s.reconnects == 1);
  CHECK(s.failed_disconnected == 1);
  CHECK(s.retried == 1);
  CHECK(s.refused_buffer_full == 1);
  CHECK(s.timed_out == 1);
  CHECK(s.buffered_total == 2);
  CHECK(events.connects == 2);

  // Fail fast: without a buffer a command during an outage is refused at once.
  server.kill();
  REQUIRE(t.run_until([&] { return !client.connected(); }));
  auto fast = link_to<redis::ClientOptions>(server);
  fast.max_buffered = 0;
  redis::Client no_buffer(*t.wheel, fast);
  no_buffer.start();
  CHECK(no_buffer.command({"PING"}, nullptr) == redis::errc::not_connected);
  CHECK(no_buffer.stats().refused_not_connected == 1);
}

TEST_CASE("A silent Redis is closed by the heartbeat and the client reconnects when it wakes",
          "[redis][client][heartbeat]") {
  hwproc::Watchdog dog(Ms(90000));
  RedisServer server;
  TestLoop t(2ms);
  auto o = link_to<redis::ClientOptions>(server);
  o.heartbeat.interval = 100ms;  // closed after 300 ms without a byte
  o.heartbeat.jitter = 0;
  o.command_timeout = std::chrono::seconds(30);
  LinkEvents events;
  events.hook(o);
  redis::Client client(*t.wheel, o);
  client.start();
  REQUIRE(t.run_until([&] { return client.connected(); }));
  t.run_for(350ms);  // pings answered: nothing closes
  CHECK(client.stats().pings_sent >= 2);
  CHECK(client.stats().pong_timeouts == 0);

  server.freeze();
  const Duration frozen_at = hr_now();
  Outcome stuck;
  REQUIRE_FALSE(client.command({"GET", "k"}, stuck.callback()));
  REQUIRE(t.run_until([&] { return !events.disconnects.empty(); }, 5s));
  CHECK(events.disconnects[0] == net::CloseReason::pong_timeout);
  // The last byte came at most one interval before the freeze.
  CHECK(hr_now() - frozen_at >= 200ms);
  REQUIRE(t.run_until([&] { return stuck.done; }));
  CHECK(stuck.error == redis::errc::disconnected);

  server.thaw();
  Outcome alive;
  REQUIRE_FALSE(client.command({"PING"}, alive.callback()));
  REQUIRE(t.run_until([&] { return alive.done; }, 10s));
  CHECK_FALSE(alive.error);
  CHECK(alive.reply.is("PONG"));
  CHECK(client.connected());
  const redis::LinkStats s = client.stats();
  CHECK(s.pong_timeouts >= 1);
  CHECK(s.reconnects >= 1);
}

TEST_CASE("A durable write on one redis-server waits for its replica with WAIT",
          "[redis][client][wait]") {
  hwproc::Watchdog dog(Ms(60000));
  RedisServer master;
  RedisServer replica(RedisServerOptions{.replica_of = master.port()});
  TestLoop t;
  auto o = link_to<redis::ClientOptions>(master);
  o.wait_replicas = 1;
  o.wait_timeout = 2s;  // generous: the replica answers at once unless the machine is loaded
  redis::Client client(*t.wheel, o);
  client.start();
  // The replica is in sync once WAIT counts it.
  REQUIRE(t.run_until(
      [&] { return master.command({"WAIT", "1", "10"}).integer() == 1; }, 20s));

  Outcome durable, plain;
  REQUIRE_FALSE(client.command({"SET", "k", "v"}, durable.callback(), {.durable = true}));
  REQUIRE_FALSE(client.command({"SET", "p", "v"}, plain.callback()));
  REQUIRE(t.run_until([&] { return durable.done && plain.done; }));
  CHECK_FALSE(durable.error);
  CHECK(durable.reply.is("OK"));
  CHECK(replica.command({"GET", "k"}) == redis::Reply::string("v"));

  // A durable script whose EVALSHA finds no script: EVAL, and a WAIT of its
  // own after it (the one after the EVALSHA proves nothing about the EVAL).
  static const redis::Script set_script("return redis.call('SET', KEYS[1], ARGV[1])");
  Outcome first;  // the client loads the script ahead of its first call
  REQUIRE_FALSE(client.command(set_script.call({"s"}, {"w"}), first.callback()));
  REQUIRE(t.run_until([&] { return first.done; }));
  master.command({"SCRIPT", "FLUSH"});
  Outcome scripted;
  REQUIRE_FALSE(client.command(set_script.call({"s"}, {"x"}), scripted.callback(),
                               {.durable = true}));
  REQUIRE(t.run_until([&] { return scripted.done; }));
  CHECK_FALSE(scripted.error);
  CHECK(scripted.reply.is("OK"));
  CHECK(client.stats().script_fallbacks == 1);
  CHECK(replica.command({"GET", "s"}) == redis::Reply::string("x"));

  // Without the replica the write still runs, and says it is not replicated.
  replica.kill();
  Outcome lonely;
  const Duration sent = hr_now();
  REQUIRE_FALSE(client.command({"INCR", "n"}, lonely.callback(), {.durable = true}));
  REQUIRE(t.run_until([&] { return lonely.done; }));
  CHECK(lonely.error == redis::errc::not_replicated);
  CHECK(lonely.reply == redis::Reply::integer(1));
  CHECK(lonely.at - sent >= 2s);  // WAIT waited its timeout
  const auto s = client.stats();
  CHECK(s.commands == 5);
  CHECK(s.sent == 6);  // the script three times (its SCRIPT LOAD is the link's own)
  CHECK(s.waits == 4);
  CHECK(s.replies_ok == 4);
  CHECK(s.not_replicated == 1);
  CHECK(master.command({"GET", "n"}) == redis::Reply::string("1"));
}
