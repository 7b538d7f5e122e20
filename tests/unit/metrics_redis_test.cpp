// The Redis families (heartwheel/redis/stats.h: write_metrics): one per field of
// the redis layer's table, a sample per link, and per-master families for
// cluster links.
#include <heartwheel/metrics/stat_families.h>
#include <heartwheel/redis/stats.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "metrics_text.h"

namespace metrics = heartwheel::metrics;
namespace redis = heartwheel::redis;
using metrics_text::families;
using metrics_text::has_line;

TEST_CASE("The Redis families follow the link stats table with a sample per link and master",
          "[metrics][names][redis]") {
  redis::LinkStats broker, push;
  broker.connected = 4;
  broker.redirects_moved = 3;
  broker.failovers = 1;
  broker.slot_map_refreshes = 9;
  push.buffered_total = 2;
  redis::MasterStats m;
  m.address = "127.0.0.1:7000";
  m.slots = 5461;
  m.connected = true;
  m.pending = 2;
  m.link.disconnects = 1;
  const std::vector<redis::MasterStats> masters{m};
  metrics::TextWriter out;
  const heartwheel::redis::LinkMetrics links[] = {{"broker", broker, masters}, {"push", push, {}}};
  metrics::write(out, links);
  const std::string& text = out.text();
  const auto names = families(text);
  CHECK(names.size() == redis::LinkStats::fields().size() + 4);
  CHECK(names.front() == "heartwheel_redis_links");
  CHECK(has_line(text, "# TYPE heartwheel_redis_connected gauge"));
  CHECK(has_line(text, "heartwheel_redis_connected{link=\"broker\"} 4"));
  CHECK(has_line(text, "heartwheel_redis_redirects_moved_total{link=\"broker\"} 3"));
  CHECK(has_line(text, "heartwheel_redis_failovers_total{link=\"broker\"} 1"));
  CHECK(has_line(text, "heartwheel_redis_slot_map_refreshes_total{link=\"broker\"} 9"));
  CHECK(has_line(text, "heartwheel_redis_redirects_ask_total{link=\"push\"} 0"));
  // A counter already named *_total keeps its name.
  CHECK(has_line(text, "heartwheel_redis_buffered_total{link=\"push\"} 2"));
  CHECK(has_line(text,
                 "heartwheel_redis_master_connected{link=\"broker\",master=\"127.0.0.1:7000\"} 1"));
  CHECK(has_line(text,
                 "heartwheel_redis_master_slots{link=\"broker\",master=\"127.0.0.1:7000\"} 5461"));
  CHECK(has_line(
      text, "heartwheel_redis_master_disconnects_total{link=\"broker\",master=\"127.0.0.1:7000\"} 1"));
  CHECK_THROWS_AS(metrics::write(out, links), std::logic_error);  // each family once
}
