// The stats structs' field tables (heartwheel/common/stat_fields.h): each
// table is well formed, and merge(), the JSON form and the Prometheus
// families all follow it, field by field. (That every member has a row is a
// static_assert beside each table.)
#include <heartwheel/common/stat_fields.h>
#include <heartwheel/http/session_stats.h>
#include <heartwheel/metrics/stat_families.h>
#include <heartwheel/net/stats.h>
#include <heartwheel/pubsub/stats.h>
#include <heartwheel/pubsub_redis/redis_broker.h>
#include <heartwheel/push/delayed_stats.h>
#include <heartwheel/redis/lock.h>
#include <heartwheel/redis/stats.h>
#include <heartwheel/rpc/call_table.h>
#include <heartwheel/rpc/net_handler.h>
#include <heartwheel/timer/expiring_map.h>
#include <heartwheel/ws/stats.h>

#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "metrics_text.h"

using heartwheel::StatKind;
using heartwheel::StatTable;
using metrics_text::has_line;

namespace {

// Gives every member its own value, from `first` on.
template <class S>
void fill(StatTable<S> table, S& s, std::uint64_t first) {
  for (const auto& f : table)
    if (!f.name.empty()) s.*f.member = first++;
}

// Rows: JSON keys unique, a family's rows together, the first with the help
// and every one with the same kind, labelled when more than one, with
// distinct labels.
template <class S>
void check_rows(StatTable<S> table) {
  std::set<std::string> names, closed_families, labels;
  std::string_view family;
  StatKind kind = StatKind::counter;
  for (const auto& f : table) {
    INFO("row " << f.name << " / " << f.metric);
    if (!f.name.empty()) CHECK(names.insert(std::string(f.name)).second);
    if (f.metric.empty()) continue;
    CHECK(heartwheel::metrics::valid_metric_name(f.metric));
    if (f.metric != family) {
      if (!family.empty()) closed_families.insert(std::string(family));
      CHECK(closed_families.count(std::string(f.metric)) == 0);
      CHECK_FALSE(f.help.empty());
      family = f.metric;
      kind = f.kind;
      labels.clear();
    } else {
      CHECK(f.help.empty());
      CHECK(f.kind == kind);
      CHECK_FALSE(f.label_name.empty());
    }
    if (!f.label_name.empty())
      CHECK(labels.insert(std::string(f.label_name) + "=" + std::string(f.label_value)).second);
  }
}

// Merging twice adds every member twice, an aliased row's member once.
template <class S>
void check_merge(StatTable<S> table) {
  S a{};
  const S before = a;
  S b{};
  fill(table, b, 1000);
  a.merge(b);
  a.merge(b);
  for (const auto& f : table) {
    INFO("member " << f.name << " / " << f.metric);
    CHECK(a.*f.member == before.*f.member + 2 * (b.*f.member));
  }
}

template <class S>
void check_json(StatTable<S> table, const S& s, const std::string& json) {
  for (const auto& f : table) {
    if (f.name.empty()) continue;
    CHECK_THAT(json, Catch::Contains("\"" + std::string(f.name) + "\":" +
                                     std::to_string(s.*f.member)));
  }
}

template <class S>
void check_families(StatTable<S> table, const S& s, const std::string& text) {
  for (const auto& f : table) {
    if (f.metric.empty()) continue;
    std::string line(f.metric);
    if (!f.label_name.empty())
      line += "{" + std::string(f.label_name) + "=\"" + std::string(f.label_value) + "\"}";
    CHECK(has_line(text, line + " " + std::to_string(s.*f.member)));
    CHECK(has_line(text, "# TYPE " + std::string(f.metric) +
                             (f.kind == StatKind::gauge ? " gauge" : " counter")));
  }
}

template <class S>
void check_table(StatTable<S> table) {
  check_rows(table);
  check_merge(table);
}

}  // namespace

TEST_CASE("The net tables drive merge, the JSON form and the net families", "[stats][metrics]") {
  namespace net = heartwheel::net;
  check_table(net::NetStats::fields());
  check_table(net::ProxyProtocolStats::fields());
  check_table(net::OverloadStats::fields());
  check_table(heartwheel::WheelStats::fields());
  check_table(heartwheel::LoopWheel::LoopStats::fields());
  net::LoopSnapshot s;
  fill(net::NetStats::fields(), s.net, 100);
  fill(net::ProxyProtocolStats::fields(), s.net.proxy, 200);
  fill(net::OverloadStats::fields(), s.net.overload, 300);
  fill(heartwheel::WheelStats::fields(), s.wheel, 400);
  fill(heartwheel::LoopWheel::LoopStats::fields(), s.loop, 500);
  const std::string json = to_json(s);
  check_json(net::NetStats::fields(), s.net, json);
  check_json(net::ProxyProtocolStats::fields(), s.net.proxy, json);
  check_json(net::OverloadStats::fields(), s.net.overload, json);
  check_json(heartwheel::WheelStats::fields(), s.wheel, json);
  check_json(heartwheel::LoopWheel::LoopStats::fields(), s.loop, json);
  heartwheel::metrics::TextWriter out;
  heartwheel::metrics::write(out, s);
  check_families(net::NetStats::fields(), s.net, out.text());
  check_families(net::ProxyProtocolStats::fields(), s.net.proxy, out.text());
  check_families(net::OverloadStats::fields(), s.net.overload, out.text());
  check_families(heartwheel::WheelStats::fields(), s.wheel, out.text());
  check_families(heartwheel::LoopWheel::LoopStats::fields(), s.loop, out.text());
}

TEST_CASE("The WebSocket table drives merge, the JSON form and the ws families",
          "[stats][metrics]") {
  namespace ws = heartwheel::ws;
  check_table(ws::Stats::fields());
  ws::Stats s;
  fill(ws::Stats::fields(), s, 100);
  check_json(ws::Stats::fields(), s, to_json(s));
  heartwheel::metrics::TextWriter out;
  heartwheel::metrics::write(out, s);
  check_families(ws::Stats::fields(), s, out.text());
}

TEST_CASE("The pub/sub tables drive merge, the JSON forms and the pubsub families",
          "[stats][metrics]") {
  namespace pubsub = heartwheel::pubsub;
  check_table(pubsub::ChannelStats::fields());
  check_table(pubsub::HubStats::fields());
  check_table(pubsub::BusStats::fields());
  pubsub::HubStats hub;
  fill(pubsub::HubStats::fields(), hub, 100);
  fill(pubsub::ChannelStats::fields(), hub.delivery, 200);
  const std::string json = to_json(hub);
  check_json(pubsub::HubStats::fields(), hub, json);
  check_json(pubsub::ChannelStats::fields(), hub.delivery, json);
  check_json(pubsub::ChannelStats::fields(), hub.delivery, to_json(hub.delivery));
  pubsub::BusStats bus;
  fill(pubsub::BusStats::fields(), bus, 300);
  check_json(pubsub::BusStats::fields(), bus, to_json(bus));
  heartwheel::metrics::TextWriter out;
  heartwheel::metrics::write(out, hub);
  heartwheel::metrics::write(out, bus);
  check_families(pubsub::HubStats::fields(), hub, out.text());
  check_families(pubsub::ChannelStats::fields(), hub.delivery, out.text());
  check_families(pubsub::BusStats::fields(), bus, out.text());
}

TEST_CASE("The HTTP and RPC tables drive merge and their families", "[stats][metrics]") {
  namespace http = heartwheel::http;
  namespace rpc = heartwheel::rpc;
  check_table(http::SessionStats::fields());
  check_table(rpc::NetHandlerStats::fields());
  http::SessionStats h;
  fill(http::SessionStats::fields(), h, 100);
  rpc::NetHandlerStats r;
  fill(rpc::NetHandlerStats::fields(), r, 200);
  heartwheel::metrics::TextWriter out;
  heartwheel::metrics::write(out, h);
  heartwheel::metrics::write(out, r);
  check_families(http::SessionStats::fields(), h, out.text());
  check_families(rpc::NetHandlerStats::fields(), r, out.text());
  // The aliased row: a pong answers each ping received.
  CHECK(has_line(out.text(), "heartwheel_rpc_frames_sent_total{type=\"pong\"} " +
                                 std::to_string(r.pings_received)));
}

TEST_CASE("The Redis link table drives merge, the JSON form and one family per row",
          "[stats][metrics][redis]") {
  namespace redis = heartwheel::redis;
  check_table(redis::LinkStats::fields());
  redis::LinkStats s;
  fill(redis::LinkStats::fields(), s, 100);
  check_json(redis::LinkStats::fields(), s, to_json(s));
  heartwheel::metrics::TextWriter out;
  const redis::LinkMetrics links[] = {{"a", s, {}}};
  heartwheel::metrics::write(out, links);
  for (const auto& f : redis::LinkStats::fields()) {
    INFO(f.name);
    CHECK(has_line(out.text(),
                   std::string(f.metric) + "{link=\"a\"} " + std::to_string(s.*f.member)));
    // Counters end in _total, gauges do not.
    CHECK(std::string_view(f.metric).ends_with("_total") == (f.kind == StatKind::counter));
  }
}

TEST_CASE("The delayed queue table drives merge, the JSON form and the push families",
          "[stats][metrics][push]") {
  namespace push = heartwheel::push;
  check_table(push::DelayedQueueStats::fields());
  push::DelayedQueueStats s;
  fill(push::DelayedQueueStats::fields(), s, 100);
  check_json(push::DelayedQueueStats::fields(), s, to_json(s));
  heartwheel::metrics::TextWriter out;
  heartwheel::metrics::write(out, s);
  check_families(push::DelayedQueueStats::fields(), s, out.text());
  CHECK(has_line(out.text(), "# TYPE heartwheel_push_delayed_held gauge"));
  CHECK(has_line(out.text(), "heartwheel_push_delayed_claimed_total " + std::to_string(s.claimed)));
}

TEST_CASE("Every other stats struct publishes a well-formed field table", "[stats]") {
  check_rows(heartwheel::rpc::CallTableStats::fields());
  check_rows(heartwheel::redis::LockStats::fields());
  check_rows(heartwheel::pubsub::RedisBrokerStats::fields());
  check_rows(heartwheel::ExpiringMap<int, int>::Stats::fields());
  // The broker's JSON follows its table (the link and masters by hand).
  heartwheel::pubsub::RedisBrokerStats b;
  fill(heartwheel::pubsub::RedisBrokerStats::fields(), b, 100);
  const std::string json = to_json(b);
  check_json(heartwheel::pubsub::RedisBrokerStats::fields(), b, json);
  CHECK_THAT(json, Catch::Contains("\"link\":{"));
}
