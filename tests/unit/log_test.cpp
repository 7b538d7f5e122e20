// The process log (heartwheel/common/log.h) and its repeat limiter
// (log_repeats.h): the text and JSON lines, the level, the loop, the fields.
#include <heartwheel/common/log.h>
#include <heartwheel/common/log_repeats.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace hlog = heartwheel::log;

namespace {

// 2026-11-28T10:11:12.345Z
constexpr std::int64_t kTime = 1795860672345;

// Captures the lines write() makes; gives the old configuration back after.
struct Captured {
  std::vector<std::string> lines;
  hlog::Options saved = hlog::options();
  explicit Captured(hlog::Format format, hlog::Level level = hlog::Level::info) {
    hlog::configure({.level = level,
                     .format = format,
                     .program = "log-test",
                     .sink = [this](std::string_view l) { lines.emplace_back(l); }});
  }
  ~Captured() { hlog::configure(saved); }
};

}  // namespace

TEST_CASE("A text line has the time, the program, the level and the fields", "[log]") {
  const hlog::Options o{.program = "heartwheel-chat"};
  CHECK(hlog::format_line(o, kTime, -1, hlog::Level::warning, "redis: connection refused",
                          {hlog::field("node", "a:6379"), hlog::field("attempt", 3)}) ==
        "2026-11-28T10:11:12.345Z heartwheel-chat: warning: redis: connection refused "
        "node=a:6379 attempt=3");
  // info has no level word: the lines people read stay as they were.
  CHECK(hlog::format_line(o, kTime, 2, hlog::Level::info, "signal 15, draining (up to 10s)", {}) ==
        "2026-11-28T10:11:12.345Z heartwheel-chat: signal 15, draining (up to 10s) loop=2");
  // A value with a space or '=' is quoted, so key=value pairs stay parseable.
  CHECK(hlog::format_line(o, kTime, -1, hlog::Level::error, "x", {hlog::field("why", "a b=c")}) ==
        "2026-11-28T10:11:12.345Z heartwheel-chat: error: x why=\"a b=c\"");
}

TEST_CASE("A JSON line is one object that parses back to what was written", "[log]") {
  const hlog::Options o{.format = hlog::Format::json, .program = "heartwheel-push"};
  const std::string line =
      hlog::format_line(o, kTime, 1, hlog::Level::error, "a \"quoted\"\nmessage\xff",
                        {hlog::field("node", "a:6379"), hlog::field("count", std::uint64_t{7})});
  CHECK(line.find('\n') == std::string::npos);
  const auto j = nlohmann::json::parse(line);
  CHECK(j["time"] == "2026-11-28T10:11:12.345Z");
  CHECK(j["level"] == "error");
  CHECK(j["program"] == "heartwheel-push");
  CHECK(j["loop"] == 1);
  CHECK(j["msg"] == "a \"quoted\"\nmessage\xef\xbf\xbd");  // a stray byte becomes U+FFFD
  CHECK(j["node"] == "a:6379");
  CHECK(j["count"] == 7);  // a number stays a number
  // Without a loop there is no "loop" key.
  CHECK_FALSE(nlohmann::json::parse(hlog::format_line(o, kTime, -1, hlog::Level::info, "m", {}))
                  .contains("loop"));
}

TEST_CASE("Lines below the level are dropped and the rest reach the sink whole", "[log]") {
  Captured c(hlog::Format::json, hlog::Level::warning);
  hlog::debug("not this");
  hlog::info("nor this");
  hlog::warning("this", {hlog::field("k", "v")});
  hlog::error("and this");
  REQUIRE(c.lines.size() == 2);
  CHECK(nlohmann::json::parse(c.lines[0])["msg"] == "this");
  CHECK(nlohmann::json::parse(c.lines[1])["level"] == "error");
  CHECK(hlog::enabled(hlog::Level::warning));
  CHECK_FALSE(hlog::enabled(hlog::Level::info));
}

TEST_CASE("A thread's loop index goes into every line it writes", "[log]") {
  Captured c(hlog::Format::json);
  std::thread([] {
    hlog::set_thread_loop(3);
    hlog::info("from a worker");
  }).join();
  hlog::info("from main");
  REQUIRE(c.lines.size() == 2);
  CHECK(nlohmann::json::parse(c.lines[0])["loop"] == 3);
  CHECK_FALSE(nlohmann::json::parse(c.lines[1]).contains("loop"));
}

TEST_CASE("Levels and formats parse from their flag spellings only", "[log]") {
  CHECK(hlog::parse_level("warning") == hlog::Level::warning);
  CHECK(hlog::parse_level("warn") == hlog::Level::warning);
  CHECK(hlog::parse_level("debug") == hlog::Level::debug);
  CHECK_FALSE(hlog::parse_level("loud").has_value());
  CHECK(hlog::parse_format("json") == hlog::Format::json);
  CHECK_FALSE(hlog::parse_format("xml").has_value());
}

TEST_CASE("A repeated key is held back for the interval and counted in the next line", "[log]") {
  hlog::Repeats r(std::chrono::seconds(60));
  const auto t0 = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  CHECK(r.admit("a:1: refused", t0) == std::uint64_t{0});
  CHECK_FALSE(r.admit("a:1: refused", t0 + std::chrono::seconds(1)).has_value());
  CHECK_FALSE(r.admit("a:1: refused", t0 + std::chrono::seconds(59)).has_value());
  CHECK(r.admit("b:2: refused", t0 + std::chrono::seconds(2)) == std::uint64_t{0});  // its own
  CHECK(r.admit("a:1: refused", t0 + std::chrono::seconds(60)) == std::uint64_t{2});
  CHECK_FALSE(r.admit("a:1: refused", t0 + std::chrono::seconds(61)).has_value());
  CHECK(r.admit("a:1: refused", t0 + std::chrono::seconds(200)) == std::uint64_t{1});
}
