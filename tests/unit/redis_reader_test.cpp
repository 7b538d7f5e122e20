// The Redis link's sans-I/O parts: the RESP reader (hiredis glue), replies,
// command encoding, scripts' SHA-1s, stream replies, stats, options.
#include <heartwheel/common/error.h>
#include <heartwheel/redis/client.h>
#include <heartwheel/redis/command.h>
#include <heartwheel/redis/reader.h>
#include <heartwheel/redis/stats.h>
#include <heartwheel/redis/stream.h>
#include <heartwheel/redis/subscriber.h>

#include <catch2/catch.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using namespace heartwheel;
using redis::Reply;

namespace {

std::vector<Reply> read_all(redis::ReplyReader& reader, std::string_view bytes,
                            std::size_t piece = 0) {
  std::vector<Reply> out;
  Reply r;
  if (piece == 0) piece = bytes.size() ? bytes.size() : 1;
  for (std::size_t at = 0; at < bytes.size(); at += piece) {
    reader.feed(bytes.substr(at, piece));
    while (reader.next(r)) out.push_back(std::move(r));
  }
  return out;
}

const Reply kSample = Reply::array({
    Reply::string(std::string("bulk\r\nwith\0nul", 14)),
    Reply::integer(-42),
    Reply(),
    Reply::status("OK"),
    Reply::error("ERR wrong"),
    Reply::array({}),
    Reply::array({Reply::array({Reply::string("")}), Reply::integer(9223372036854775807LL)}),
});

}  // namespace

TEST_CASE("The RESP reader builds every reply type and gives the same replies for any split",
          "[redis][reader]") {
  const std::string bytes = encode(kSample) + encode(Reply::status("PONG")) + encode(Reply()) +
                            "*-1\r\n" + encode(Reply::integer(0));
  redis::ReplyReader whole;
  const auto expected = read_all(whole, bytes);
  REQUIRE(expected.size() == 5);
  CHECK(expected[0] == kSample);
  CHECK(expected[1].is("pong"));
  CHECK(expected[2].is_nil());
  CHECK(expected[3].is_nil());  // a nil array is nil too
  CHECK(expected[4] == Reply::integer(0));
  CHECK(whole.buffered() == 0);
  CHECK(whole.replies() == 5);
  for (std::size_t piece = 1; piece <= 17; ++piece) {
    redis::ReplyReader split;
    CHECK(read_all(split, bytes, piece) == expected);
  }
  // Seeded random splits (printed on failure).
  std::mt19937 rng(12345);
  for (int round = 0; round < 200; ++round) {
    redis::ReplyReader split;
    std::vector<Reply> got;
    Reply r;
    std::string splits;
    for (std::size_t at = 0; at < bytes.size();) {
      const std::size_t n = std::min<std::size_t>(bytes.size() - at, 1 + rng() % 9);
      splits += std::to_string(n) + ' ';
      split.feed(std::string_view(bytes).substr(at, n));
      while (split.next(r)) got.push_back(std::move(r));
      at += n;
    }
    INFO("splits: " << splits);
    REQUIRE(got == expected);
  }
}

TEST_CASE("The RESP reader keeps an incomplete reply until its last byte", "[redis][reader]") {
  redis::ReplyReader reader;
  Reply r;
  reader.feed("*2\r\n$5\r\nhel");
  CHECK_FALSE(reader.next(r));
  CHECK_FALSE(reader.error());
  CHECK(reader.buffered() == 11);
  reader.feed("lo\r\n:7\r");
  CHECK_FALSE(reader.next(r));
  reader.feed("\n+next");
  REQUIRE(reader.next(r));
  CHECK(r == Reply::array({Reply::string("hello"), Reply::integer(7)}));
  CHECK_FALSE(reader.next(r));
  CHECK(reader.buffered() == 5);
  reader.reset();
  CHECK(reader.buffered() == 0);
  reader.feed("+OK\r\n");
  REQUIRE(reader.next(r));
  CHECK(r.is("ok"));
}

TEST_CASE("The RESP reader refuses bytes that are not RESP and says why", "[redis][reader]") {
  redis::ReplyReader reader;
  Reply r;
  reader.feed("+OK\r\n!what\r\n");
  REQUIRE(reader.next(r));  // the reply before the bad byte is delivered
  CHECK(r.is("OK"));
  CHECK_FALSE(reader.next(r));
  CHECK(reader.error() == errc::protocol_error);
  CHECK(std::string(reader.error_message()).find("got \"!\" as reply type byte") !=
        std::string::npos);
  // Sticky: nothing more is read.
  CHECK(reader.feed("+OK\r\n") == errc::protocol_error);
  CHECK_FALSE(reader.next(r));

  // hiredis 0.14 reads arrays nested at most 7 deep.
  redis::ReplyReader deep;
  CHECK(read_all(deep, "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n").size() == 1);
  CHECK_FALSE(deep.error());
  CHECK(read_all(deep, "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n").empty());
  CHECK(deep.error() == errc::protocol_error);
}

TEST_CASE("A reply larger than max_reply_bytes fails however it is split", "[redis][reader]") {
  const std::string big = encode(Reply::string(std::string(100, 'x')));  // 107 bytes
  const std::string ok = encode(Reply::string(std::string(20, 'y')));
  for (std::size_t piece : {std::size_t{0}, std::size_t{1}, std::size_t{10}}) {
    redis::ReplyReader reader(64);
    const auto got = read_all(reader, ok + big + ok, piece);
    INFO("piece " << piece);
    CHECK(got.size() == 1);  // the small one before it
    CHECK(reader.error() == errc::frame_too_large);
  }
  // A bulk length announcing 4 GiB fails once the limit's worth has arrived.
  redis::ReplyReader reader(1024);
  Reply r;
  reader.feed("$4294967296\r\n");
  CHECK_FALSE(reader.next(r));
  CHECK_FALSE(reader.error());
  reader.feed(std::string(2000, 'z'));
  CHECK_FALSE(reader.next(r));
  CHECK(reader.error() == errc::frame_too_large);
  // Arrays count their elements' bytes too.
  redis::ReplyReader arrays(64);
  std::string many = "*100\r\n";
  for (int i = 0; i < 100; ++i) many += ":1\r\n";
  CHECK(read_all(arrays, many).empty());
  CHECK(arrays.error() == errc::frame_too_large);
}

TEST_CASE("Replies encode back to the RESP bytes they were read from", "[redis][reader]") {
  const std::string bytes = "*3\r\n$3\r\nfoo\r\n:-1\r\n*2\r\n+OK\r\n-ERR x y\r\n";
  redis::ReplyReader reader;
  const auto got = read_all(reader, bytes);
  REQUIRE(got.size() == 1);
  CHECK(encode(got[0]) == bytes);
  CHECK(to_debug_string(got[0]) == "[\"foo\", (-1), [+OK, -ERR x y]]");
  CHECK(to_debug_string(Reply::string(std::string("a\"\n\0", 4))) == "\"a\\\"\\x0a\\x00\"");
  CHECK(std::string(to_string(redis::ReplyType::array)) == "array");
}

TEST_CASE("Commands encode as RESP arrays of bulk strings, binary-safe", "[redis][command]") {
  const redis::Command set{"SET", "key", std::string_view("v\0\r\n", 4)};
  CHECK(set.bytes() == std::string_view("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$4\r\nv\0\r\n\r\n", 32));
  CHECK(set.name() == "SET");
  CHECK_FALSE(set.breaks_reply_order());
  const std::vector<std::string> args = {"HSET", "h", "f", ""};
  const auto hset = redis::Command::from(args);
  CHECK(hset.bytes() == "*4\r\n$4\r\nHSET\r\n$1\r\nh\r\n$1\r\nf\r\n$0\r\n\r\n");
  for (const char* name : {"subscribe", "PSUBSCRIBE", "ssubscribe", "Unsubscribe", "punsubscribe",
                           "monitor", "hello", "reset"})
    CHECK(redis::Command{name}.breaks_reply_order());
  CHECK(redis::Command{"client", "Reply", "off"}.breaks_reply_order());
  CHECK_FALSE(redis::Command{"CLIENT", "SETNAME", "x"}.breaks_reply_order());
  CHECK_FALSE(redis::Command{"PUBLISH", "subscribe", "x"}.breaks_reply_order());
  CHECK_THROWS_AS(redis::Command(std::span<const std::string_view>()), std::invalid_argument);
}

TEST_CASE("A script's SHA-1 is Redis's and its EVALSHA call turns into EVAL", "[redis][command]") {
  const redis::Script one("return 1");
  CHECK(one.sha1() == "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");  // SCRIPT LOAD "return 1"
  const redis::Command call = one.call({"k1", "k2"}, {"a"});
  CHECK(call.name() == "EVALSHA");
  CHECK(call.bytes() ==
        "*6\r\n$7\r\nEVALSHA\r\n$40\r\ne0e1f9fabfc9d4800c877a703b823ac0578ff8db\r\n$1\r\n2\r\n"
        "$2\r\nk1\r\n$2\r\nk2\r\n$1\r\na\r\n");
  REQUIRE(call.script_source());
  const redis::Command eval = call.as_eval();
  CHECK(eval.name() == "EVAL");
  CHECK(eval.bytes() == redis::Command{"EVAL", "return 1", "2", "k1", "k2", "a"}.bytes());
  CHECK_FALSE(eval.script_source());
  CHECK(one.call({}).bytes() == redis::Command{"EVALSHA", one.sha1(), "0"}.bytes());
  const redis::Command get{"GET", "k"};
  CHECK_THROWS_AS(get.as_eval(), std::logic_error);
}

TEST_CASE("Stream ids order numerically and stream replies parse or are refused",
          "[redis][stream]") {
  const auto a = redis::StreamId::parse("1700000000000-9");
  const auto b = redis::StreamId::parse("1700000000000-10");
  REQUIRE(a);
  REQUIRE(b);
  CHECK(*a < *b);
  CHECK(b->to_string() == "1700000000000-10");
  CHECK(redis::StreamId::parse("5") == redis::StreamId{5, 0});
  CHECK(a->successor() == redis::StreamId{1700000000000, 10});
  CHECK(redis::StreamId{1, UINT64_MAX}.successor() == redis::StreamId{2, 0});
  for (const char* bad : {"", "-", "1-", "x-1", "1-2-3", "18446744073709551616-0"})
    CHECK_FALSE(redis::StreamId::parse(bad));

  auto entry = [](std::string id, std::vector<std::string> kv) {
    std::vector<Reply> fields;
    for (auto& s : kv) fields.push_back(Reply::string(s));
    return Reply::array({Reply::string(std::move(id)), Reply::array(std::move(fields))});
  };
  std::vector<redis::StreamEntry> out;
  REQUIRE_FALSE(redis::parse_entries(
      Reply::array({entry("1-1", {"data", "x", "info", "y"}), entry("1-2", {})}), out));
  REQUIRE(out.size() == 2);
  CHECK(out[0].field("info") == "y");
  CHECK_FALSE(out[1].field("data"));
  CHECK(redis::parse_entries(Reply::error("WRONGTYPE"), out) == redis::errc::server_error);
  CHECK(redis::parse_entries(Reply::array({entry("1-3", {"odd"})}), out) == errc::protocol_error);
  CHECK(redis::parse_entries(Reply::integer(1), out) == errc::protocol_error);
  CHECK(out.size() == 2);  // unchanged by the refusals

  std::vector<redis::StreamEntries> streams;
  REQUIRE_FALSE(redis::parse_xread(Reply(), streams));
  CHECK(streams.empty());
  REQUIRE_FALSE(redis::parse_xread(
      Reply::array({Reply::array({Reply::string("s"), Reply::array({entry("2-0", {"a", "b"})})})}),
      streams));
  REQUIRE(streams.size() == 1);
  CHECK(streams[0].entries[0].id == "2-0");
}

TEST_CASE("Link stats merge field by field and render every field as JSON", "[redis][stats]") {
  redis::LinkStats a, b;
  a.connected = 1;
  a.commands = 10;
  a.resubscribes = 2;
  b.commands = 5;
  b.timed_out = 1;
  a.merge(b);
  CHECK(a.links == 2);
  CHECK(a.commands == 15);
  CHECK(a.timed_out == 1);
  const std::string json = to_json(a);
  CHECK(json.find("\"links\":2,") != std::string::npos);
  CHECK(json.find("\"commands\":15,") != std::string::npos);
  CHECK(json.find("\"resubscribes\":2,") != std::string::npos);
  CHECK(json.find("\"stray_messages\":0,") != std::string::npos);
  CHECK(json.find("\"channels_moved\":0}") != std::string::npos);
}

TEST_CASE("Redis link options refuse what would break the link", "[redis][options]") {
  redis::ClientOptions o;
  CHECK_NOTHROW(o.validate());
  CHECK(o.connector.port == 6379);
  auto bad = o;
  bad.connector.connection.write.slow_reader = net::SlowReaderPolicy::pause_reading;
  CHECK_THROWS_AS(bad.validate(), std::invalid_argument);
  bad = o;
  bad.setup.push_back({"SUBSCRIBE", "x"});
  CHECK_THROWS_AS(bad.validate(), std::invalid_argument);
  bad = o;
  bad.heartbeat.interval = std::chrono::seconds(1);
  bad.heartbeat.timeout = std::chrono::seconds(1);  // under 2 x interval
  CHECK_THROWS_AS(bad.validate(), std::invalid_argument);
  bad = o;
  bad.command_timeout = std::chrono::seconds(-1);
  CHECK_THROWS_AS(bad.validate(), std::invalid_argument);
  redis::SubscriberOptions so;
  CHECK_THROWS_AS(so.validate(), std::invalid_argument);  // on_message is required
  so.on_message = [](const redis::Message&) {};
  CHECK_NOTHROW(so.validate());
  CHECK(make_error_code(redis::errc::buffer_full).message().find("buffer") != std::string::npos);
  CHECK(std::string(redis::redis_category().name()) == "redis");
}
