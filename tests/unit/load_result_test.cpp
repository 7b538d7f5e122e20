#include <arpa/inet.h>

#include <catch2/catch.hpp>

#include "duration.h"
#include "options.h"
#include "result.h"

using namespace heartwheel::load;
using namespace std::chrono_literals;

namespace {
LoadResult sample(std::uint64_t seed) {
  LoadResult r;
  r.processes = 1;
  r.connections_attempted = 100 + seed;
  r.connections_established = 90 + seed;
  r.connect_errors["ECONNREFUSED"] = seed;
  r.connect_errors["ETIMEDOUT"] = 1;
  r.errors["read:ECONNRESET"] = 2;
  r.messages_sent = 1000 * seed;
  r.messages_received = 999 * seed;
  r.dead_count = 10;
  r.dead_closed = 9;
  r.live_closed_by_server = seed;
  r.http_status["200"] = 5;
  r.ramp_ms = 100 * seed;
  r.ws_restart_closes = 10 * seed;
  r.ws_restart_closes_per_s = std::vector<std::uint64_t>(seed + 1, seed);  // longer per worker
  for (std::uint64_t v = 0; v < 100; ++v) {
    r.rtt_us.record(v * seed + 17);
    r.dead_close_ms.record(5000 + v * seed);
  }
  return r;
}
}  // namespace

TEST_CASE("Merging worker results adds counters, error maps and histograms", "[load][result]") {
  LoadResult merged;
  merged.merge(sample(1));
  merged.merge(sample(2));
  merged.merge(sample(3));
  CHECK(merged.processes == 3);
  CHECK(merged.connections_attempted == 306);
  CHECK(merged.connect_errors.at("ECONNREFUSED") == 6);
  CHECK(merged.connect_errors.at("ETIMEDOUT") == 3);
  CHECK(merged.errors.at("read:ECONNRESET") == 6);
  CHECK(merged.http_status.at("200") == 15);
  CHECK(merged.live_closed_by_server == 6);
  CHECK(merged.dead_not_closed() == 3);
  CHECK(merged.ramp_ms == 300);  // the slowest process, not the sum
  CHECK(merged.ws_restart_closes == 60);
  // Per second since start: added second by second, as long as the longest.
  CHECK(merged.ws_restart_closes_per_s == std::vector<std::uint64_t>{6, 6, 5, 3});
  heartwheel::stats::Histogram all;
  for (std::uint64_t s = 1; s <= 3; ++s)
    for (std::uint64_t v = 0; v < 100; ++v) all.record(v * s + 17);
  CHECK(merged.rtt_us == all);
}

TEST_CASE("A worker result survives the pipe's JSON form unchanged", "[load][result]") {
  const LoadResult r = sample(4);
  const LoadResult back = LoadResult::from_json(nlohmann::json::parse(r.to_json().dump()));
  CHECK(back.to_json() == r.to_json());
  CHECK(back.rtt_us == r.rtt_us);
  CHECK(back.ws_restart_closes_per_s == r.ws_restart_closes_per_s);
  CHECK_THROWS_AS(LoadResult::from_json(nlohmann::json::object()), std::invalid_argument);
}

TEST_CASE("The report has the documented fields", "[load][result]") {
  const auto j = sample(2).report_json(1);
  for (const char* key : {"connections_established", "connect_errors", "messages_sent",
                          "messages_received", "rtt_us", "dead", "live_closed_by_server"})
    CHECK(j.contains(key));
  for (const char* key : {"p50", "p90", "p99", "p999", "max"}) CHECK(j["rtt_us"].contains(key));
  CHECK(j["dead"]["count"] == 10);
  CHECK(j["dead"]["closed"] == 9);
  for (const char* key : {"min", "p50", "p99", "max"})
    CHECK(j["dead"]["close_after_ms"].contains(key));
  CHECK(j["dead"]["close_after_ms"]["min"] == 5000);
  CHECK(j["complete"] == true);
}

TEST_CASE("A merged result with a worker missing says it is incomplete", "[load][result]") {
  LoadResult merged;
  merged.merge(sample(1));
  merged.merge(sample(2));  // the third worker never reported
  CHECK_FALSE(merged.complete(3));
  const auto j = merged.report_json(3);
  CHECK(j["complete"] == false);
  CHECK(j["workers_reported"] == 2);
  CHECK(j["workers_expected"] == 3);
  merged.merge(sample(3));
  CHECK(merged.complete(3));
  CHECK(merged.report_json(3)["complete"] == true);
}

TEST_CASE("Source address ranges expand in order", "[load][options]") {
  const auto ips = parse_source_ips("127.0.0.1-127.0.0.3,127.0.1.9");
  REQUIRE(ips.size() == 4);
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &ips[2].sin_addr, text, sizeof text);
  CHECK(std::string(text) == "127.0.0.3");
  inet_ntop(AF_INET, &ips[3].sin_addr, text, sizeof text);
  CHECK(std::string(text) == "127.0.1.9");
  CHECK_THROWS_AS(parse_source_ips("127.0.0.5-127.0.0.1"), std::invalid_argument);
  CHECK_THROWS_AS(parse_source_ips("example.com"), std::invalid_argument);
}

TEST_CASE("Source port ranges parse, and 'kernel' hands the choice back to connect()",
          "[load][options]") {
  std::uint16_t lo = 1, hi = 1;
  parse_source_ports("20000-29999", lo, hi);
  CHECK(lo == 20000);
  CHECK(hi == 29999);
  parse_source_ports("kernel", lo, hi);
  CHECK(lo == 0);
  CHECK(hi == 0);
  CHECK_THROWS_AS(parse_source_ports("5-1", lo, hi), std::invalid_argument);
  CHECK_THROWS_AS(parse_source_ports("0-10", lo, hi), std::invalid_argument);
  CHECK_THROWS_AS(parse_source_ports("1-70000", lo, hi), std::invalid_argument);
  LoadOptions o;
  o.targets = parse_targets("127.0.0.1:7000");
  o.source_ips = parse_source_ips("127.0.0.1-127.0.0.2");
  o.processes = 4;
  o.connections = 30000;
  o.source_port_lo = 20000;
  o.source_port_hi = 29999;  // 10,000 ports per address, 15,000 connections per address
  CHECK_THROWS_WITH(validate(o), Catch::Contains("--source-ports"));
  o.source_port_hi = 34999;
  CHECK_NOTHROW(validate(o));
}

TEST_CASE("Targets parse as HOST:PORT lists", "[load][options]") {
  const auto t = parse_targets("127.0.0.1:7000,localhost:7001");
  REQUIRE(t.size() == 2);
  CHECK(ntohs(t[1].addr.sin_port) == 7001);
  CHECK_THROWS_AS(parse_targets("127.0.0.1"), std::invalid_argument);
  CHECK_THROWS_AS(parse_targets("127.0.0.1:0"), std::invalid_argument);
}

TEST_CASE("Dead connections are spread evenly and shares cover every connection",
          "[load][options]") {
  std::uint64_t dead = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) dead += is_dead(0.1, i);
  CHECK(dead == 100);
  CHECK(!is_dead(0.0, 5));
  CHECK(is_dead(1.0, 5));
  LoadOptions o;
  o.connections = 10;
  o.processes = 3;
  CHECK(share_of(o, 0).connections == 4);
  CHECK(share_of(o, 1).connections == 3);
  CHECK(share_of(o, 2).connections == 3);
}

TEST_CASE("Validation asks for more processes when one would pass the file limit",
          "[load][options]") {
  LoadOptions o;
  o.targets = parse_targets("127.0.0.1:7000");
  o.connections = per_process_connection_limit() + 1;
  o.processes = 1;
  CHECK_THROWS_WITH(validate(o), Catch::Contains("--processes"));
  o.processes = 2;
  o.source_ips = parse_source_ips("127.0.0.1-127.0.0.2");
  CHECK_NOTHROW(validate(o));
}

TEST_CASE("The ws report derives expected and missing publications from the merged offsets",
          "[load][result][ws]") {
  // Worker 0 published: target 0 ended at offset 10, target 1 at 7.
  LoadResult publisher;
  publisher.processes = 1;
  publisher.ws_upgraded = 1;
  publisher.ws_offsets["0/load-0:final"] = 10;
  publisher.ws_offsets["1/load-0:final"] = 7;
  // Worker 1: two subscribers on target 0 from offset 2, one saw up to 10,
  // the other up to 8 (two still in flight); one gap seen on the way.
  LoadResult subscribers;
  subscribers.processes = 1;
  subscribers.ws_upgraded = 3;
  subscribers.delivered = 8 + 6 + 7;
  subscribers.missing_gaps = 1;
  subscribers.ws_offsets["0/load-0:clients"] = 2;
  subscribers.ws_offsets["0/load-0:base_sum"] = 4;
  subscribers.ws_offsets["0/load-0:last_sum"] = 18;
  // ... and one on target 1 from 0, up to 7.
  subscribers.ws_offsets["1/load-0:clients"] = 1;
  subscribers.ws_offsets["1/load-0:base_sum"] = 0;
  subscribers.ws_offsets["1/load-0:last_sum"] = 7;
  LoadResult merged;
  merged.merge(publisher);
  merged.merge(subscribers);
  const auto w = merged.report_json(2)["ws"];
  CHECK(w["live_subscribers_at_end"] == 3);
  CHECK(w["expected"] == 2 * 10 - 4 + 7);
  CHECK(w["missing_tail"] == 2);
  CHECK(w["missing"] == 3);
  CHECK(w["every_publication_reached_every_live_subscriber"] == false);
}

TEST_CASE(
    "Without a publisher on a target the ws report holds its subscribers to the first "
    "target's offsets",
    "[load][result][ws]") {
  LoadResult r;
  r.processes = 1;
  r.ws_upgraded = 1;
  r.ws_offsets["0/load-0:final"] = 5;
  r.ws_offsets["2/load-0:clients"] = 1;
  r.ws_offsets["2/load-0:base_sum"] = 1;
  r.ws_offsets["2/load-0:last_sum"] = 5;
  const auto w = r.report_json(1)["ws"];
  CHECK(w["expected"] == 4);
  CHECK(w["missing"] == 0);
}
