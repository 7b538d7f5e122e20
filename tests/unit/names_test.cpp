// The names of deadline kinds and close reasons (heartwheel/net/names.h):
// net's own spelled as the statistics always spelled them, the layers'
// registered before main, conflicts refused, and the statistics spelling
// every named number.
#include <heartwheel/http/deadlines.h>
#include <heartwheel/net/names.h>
#include <heartwheel/net/stats.h>
#include <heartwheel/ws/deadlines.h>

#include <catch2/catch.hpp>

#include <csignal>
#include <string>
#include <string_view>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace heartwheel::net;
namespace http = heartwheel::http;
namespace ws = heartwheel::ws;
using std::string_view;

TEST_CASE("net spells its own reasons and kinds as the statistics always did", "[names]") {
  const std::vector<string_view> reasons = {
      "read_idle", "write_idle", "all_idle",  "request_timeout", "max_age",
      "write_stall", "pong_timeout", "peer_closed", "protocol_close", "protocol_error",
      "error", "slow_consumer", "limit", "ip_limit", "overload", "proxy_header_timeout",
      "proxy_header_invalid", "drain", "local", "proxy_untrusted"};
  REQUIRE(reasons.size() == kNetCloseReasons);
  for (std::size_t i = 0; i < kNetCloseReasons; ++i) {
    CHECK(to_string(static_cast<CloseReason>(i)) == reasons[i]);
    CHECK(is_named(static_cast<CloseReason>(i)));
  }
  const std::vector<string_view> kinds = {"read_idle", "write_idle", "all_idle",
                                          "request_timeout", "max_age", "write_stall",
                                          "proxy_header_timeout", "ping", "pong_timeout"};
  REQUIRE(kinds.size() == kNetDeadlines);
  for (std::size_t i = 0; i < kNetDeadlines; ++i) {
    const auto kind = static_cast<Deadline>(i);
    CHECK(to_string(kind) == kinds[i]);
    // Every kind but ping closes with the reason of its own name.
    CHECK(to_string(close_reason_for(kind)) == (kind == Deadline::ping ? "local" : kinds[i]));
  }
  // A number nobody named.
  CHECK_FALSE(is_named(CloseReason{kNetCloseReasons}));
  CHECK(to_string(CloseReason{kNetCloseReasons}) == string_view("unknown"));
  CHECK(to_string(Deadline{kNetDeadlines}) == string_view("unknown"));
  CHECK(close_reason_for(Deadline{kNetDeadlines}) == CloseReason::local);
}

TEST_CASE("The layers' names are registered before main, with their close reasons", "[names]") {
  CHECK(to_string(http::close_reason::header_timeout) == string_view("header_timeout"));
  CHECK(to_string(http::close_reason::body_timeout) == string_view("body_timeout"));
  CHECK(to_string(http::close_reason::keepalive_timeout) == string_view("keepalive_timeout"));
  CHECK(to_string(ws::close_reason::close_timeout) == string_view("close_timeout"));
  CHECK(to_string(http::deadline::keepalive_timeout) == string_view("keepalive_timeout"));
  CHECK(to_string(ws::deadline::close_timeout) == string_view("close_timeout"));
  CHECK(close_reason_for(http::deadline::header_timeout) == http::close_reason::header_timeout);
  CHECK(close_reason_for(http::deadline::body_timeout) == http::close_reason::body_timeout);
  CHECK(close_reason_for(http::deadline::keepalive_timeout) ==
        http::close_reason::keepalive_timeout);
  CHECK(close_reason_for(ws::deadline::close_timeout) == ws::close_reason::close_timeout);
  // In the layers' ranges, above net's own.
  CHECK(static_cast<unsigned>(http::close_reason::header_timeout) >= kLayerCloseReasonFirst);
  CHECK(static_cast<unsigned>(ws::deadline::close_timeout) >= kLayerDeadlineFirst);
}

TEST_CASE("Registration refuses taken numbers, taken names, net's range and bad names",
          "[names]") {
  // The same registration again (another translation unit, another copy of
  // the library): accepted.
  static constexpr CloseReasonName again{http::close_reason::header_timeout, "header_timeout"};
  CHECK(register_name(again) == NameStatus::already);
  static constexpr DeadlineName again_kind{http::deadline::header_timeout, "header_timeout",
                                           http::close_reason::header_timeout};
  CHECK(register_name(again_kind) == NameStatus::already);
  // A number another layer took.
  static constexpr CloseReasonName other_name{http::close_reason::header_timeout, "mine"};
  CHECK(register_name(other_name) == NameStatus::number_taken);
  static constexpr DeadlineName other_reason{http::deadline::header_timeout, "header_timeout",
                                             http::close_reason::body_timeout};
  CHECK(register_name(other_reason) == NameStatus::number_taken);
  // A name another number has: a layer's, or net's own.
  static constexpr CloseReasonName layer_name{CloseReason{60}, "body_timeout"};
  CHECK(register_name(layer_name) == NameStatus::name_taken);
  static constexpr CloseReasonName net_name{CloseReason{60}, "drain"};
  CHECK(register_name(net_name) == NameStatus::name_taken);
  static constexpr DeadlineName net_kind_name{Deadline{30}, "ping", CloseReason::local};
  CHECK(register_name(net_kind_name) == NameStatus::name_taken);
  // net's range (its own numbers and the ones it keeps free), and beyond the counters.
  static constexpr CloseReasonName own{CloseReason::drain, "mine"};
  CHECK(register_name(own) == NameStatus::reserved);
  static constexpr CloseReasonName spare{CloseReason{kLayerCloseReasonFirst - 1}, "mine"};
  CHECK(register_name(spare) == NameStatus::reserved);
  static constexpr CloseReasonName beyond{CloseReason{kCloseReasonCapacity}, "mine"};
  CHECK(register_name(beyond) == NameStatus::out_of_range);
  static constexpr DeadlineName own_kind{Deadline{kLayerDeadlineFirst - 1}, "mine",
                                         CloseReason::local};
  CHECK(register_name(own_kind) == NameStatus::reserved);
  static constexpr DeadlineName beyond_kind{Deadline{kDeadlineCapacity}, "mine",
                                            CloseReason::local};
  CHECK(register_name(beyond_kind) == NameStatus::out_of_range);
  // Names become JSON keys and label values.
  static constexpr CloseReasonName empty{CloseReason{60}, ""};
  static constexpr CloseReasonName upper{CloseReason{60}, "Mine"};
  static constexpr CloseReasonName quote{CloseReason{60}, "mine\""};
  static constexpr CloseReasonName null{CloseReason{60}, nullptr};
  for (const CloseReasonName* n : {&empty, &upper, &quote, &null})
    CHECK(register_name(*n) == NameStatus::bad_name);
  // A kind's reason must have a name first.
  static constexpr DeadlineName orphan{Deadline{30}, "orphan_timeout", CloseReason{61}};
  CHECK(register_name(orphan) == NameStatus::reason_unnamed);
  // Nothing refused left a trace.
  CHECK_FALSE(is_named(CloseReason{60}));
  CHECK_FALSE(is_named(Deadline{30}));
  CHECK(to_string(http::close_reason::header_timeout) == string_view("header_timeout"));
}

TEST_CASE("A registered name is read lock-free from any thread", "[names]") {
  static constexpr CloseReasonName reason{CloseReason{63}, "test_expired"};
  static constexpr DeadlineName kind{Deadline{31}, "test_expiry", CloseReason{63}};
  const NameStatus r = register_name(reason);
  CHECK((r == NameStatus::added || r == NameStatus::already));
  const NameStatus k = register_name(kind);
  CHECK((k == NameStatus::added || k == NameStatus::already));
  std::string seen;
  CloseReason closes_with = CloseReason::local;
  std::thread reader([&] {
    seen = to_string(Deadline{31});
    closes_with = close_reason_for(Deadline{31});
  });
  reader.join();
  CHECK(seen == "test_expiry");
  CHECK(closes_with == CloseReason{63});
  CHECK(to_string(CloseReason{63}) == string_view("test_expired"));
}

TEST_CASE("A conflicting registrar stops the program at start, naming the conflict", "[names]") {
  int out[2];
  REQUIRE(::pipe(out) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // a second layer that took HTTP's number
    std::signal(SIGABRT, SIG_DFL);  // not Catch2's handler: die of it
    ::dup2(out[1], STDERR_FILENO);
    static constexpr CloseReasonName clash[] = {{http::close_reason::header_timeout, "auth_failed"}};
    const NameRegistrar registrar{clash, {}};
    ::_exit(0);  // not reached
  }
  ::close(out[1]);
  std::string message;
  char buf[256];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) message.append(buf, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
  CHECK_THAT(message, Catch::Contains("auth_failed") && Catch::Contains("number_taken") &&
                          Catch::Contains("header_timeout"));
}

TEST_CASE("Statistics spell every named number, zeros included, and merge by number",
          "[names][stats]") {
  LoopSnapshot a;
  LoopSnapshot b;
  a.net.closed_by_reason[static_cast<std::size_t>(http::close_reason::body_timeout)] = 2;
  b.net.closed_by_reason[static_cast<std::size_t>(http::close_reason::body_timeout)] = 3;
  b.net.idle_events[static_cast<std::size_t>(ws::deadline::close_timeout)] = 4;
  a.merge(b);
  const std::string json = to_json(a);
  CHECK_THAT(json, Catch::Contains("\"closed_by_reason\":{\"read_idle\":0,"));
  CHECK_THAT(json, Catch::Contains("\"body_timeout\":5"));
  CHECK_THAT(json, Catch::Contains("\"close_timeout\":4"));
  CHECK_THAT(json, Catch::Contains("\"keepalive_timeout\":0"));
  CHECK_THAT(json, Catch::Contains("\"idle_events\":{\"read_idle\":0,"));
  CHECK_THAT(json, !Catch::Contains("unknown"));
  // write_stall is net's inner check, never an event.
  CHECK_THAT(json, Catch::Contains("\"max_age\":0,\"proxy_header_timeout\":0,\"ping\":0"));
  CHECK(a.net.closed() == 5);
}
