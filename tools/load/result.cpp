#include "result.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace heartwheel::load {

namespace {

// Every field, named once, so to_json/from_json/merge cannot drift. Each
// visitor walks the same field of two results side by side (pass one result
// twice to walk just one).
template <class A, class B, class F>
void counters(A& r, B& o, F&& f) {
  f("connections_attempted", r.connections_attempted, o.connections_attempted);
  f("connections_established", r.connections_established, o.connections_established);
  f("messages_sent", r.messages_sent, o.messages_sent);
  f("messages_received", r.messages_received, o.messages_received);
  f("bytes_sent", r.bytes_sent, o.bytes_sent);
  f("bytes_received", r.bytes_received, o.bytes_received);
  f("pings_sent", r.pings_sent, o.pings_sent);
  f("pongs_received", r.pongs_received, o.pongs_received);
  f("pings_answered", r.pings_answered, o.pings_answered);
  f("rpc_errors", r.rpc_errors, o.rpc_errors);
  f("sends_dropped", r.sends_dropped, o.sends_dropped);
  f("slow_writes", r.slow_writes, o.slow_writes);
  f("dead_count", r.dead_count, o.dead_count);
  f("dead_closed", r.dead_closed, o.dead_closed);
  f("dead_closed_early", r.dead_closed_early, o.dead_closed_early);
  f("dead_closed_late", r.dead_closed_late, o.dead_closed_late);
  f("live_closed_by_server", r.live_closed_by_server, o.live_closed_by_server);
  f("open_at_end", r.open_at_end, o.open_at_end);
  f("connects_unfinished", r.connects_unfinished, o.connects_unfinished);
  f("processes", r.processes, o.processes);
  f("ws_upgraded", r.ws_upgraded, o.ws_upgraded);
  f("ws_subscribed", r.ws_subscribed, o.ws_subscribed);
  f("ws_publishers", r.ws_publishers, o.ws_publishers);
  f("ws_compressed_connections", r.ws_compressed_connections, o.ws_compressed_connections);
  f("ws_compressed_messages", r.ws_compressed_messages, o.ws_compressed_messages);
  f("publications_sent", r.publications_sent, o.publications_sent);
  f("publish_acks", r.publish_acks, o.publish_acks);
  f("publish_skipped", r.publish_skipped, o.publish_skipped);
  f("delivered", r.delivered, o.delivered);
  f("duplicates", r.duplicates, o.duplicates);
  f("missing_gaps", r.missing_gaps, o.missing_gaps);
  f("server_pings", r.server_pings, o.server_pings);
  f("presence_events", r.presence_events, o.presence_events);
  f("reconnects", r.reconnects, o.reconnects);
  f("recovered", r.recovered, o.recovered);
  f("not_recovered", r.not_recovered, o.not_recovered);
  f("recovered_publications", r.recovered_publications, o.recovered_publications);
  f("ws_restart_closes", r.ws_restart_closes, o.ws_restart_closes);
  f("ws_restart_resubscribed", r.ws_restart_resubscribed, o.ws_restart_resubscribed);
  f("ws_restart_recovered", r.ws_restart_recovered, o.ws_restart_recovered);
  f("ws_publisher_restarts", r.ws_publisher_restarts, o.ws_publisher_restarts);
  f("unsubscribed_at_end", r.unsubscribed_at_end, o.unsubscribed_at_end);
  f("tls_handshakes", r.tls_handshakes, o.tls_handshakes);
  f("tls_resumed", r.tls_resumed, o.tls_resumed);
}

template <class A, class B, class F>
void count_maps(A& r, B& o, F&& f) {
  f("connect_errors", r.connect_errors, o.connect_errors);
  f("errors", r.errors, o.errors);
  f("http_status", r.http_status, o.http_status);
  f("ws_offsets", r.ws_offsets, o.ws_offsets);
}

template <class A, class B, class F>
void histograms(A& r, B& o, F&& f) {
  f("rtt_us", r.rtt_us, o.rtt_us);
  f("rtt_steady_us", r.rtt_steady_us, o.rtt_steady_us);
  f("latency_us", r.latency_us, o.latency_us);
  f("heartbeat_rtt_us", r.heartbeat_rtt_us, o.heartbeat_rtt_us);
  f("connect_us", r.connect_us, o.connect_us);
  f("tls_handshake_us", r.tls_handshake_us, o.tls_handshake_us);
  f("dead_close_ms", r.dead_close_ms, o.dead_close_ms);
  f("delivery_us", r.delivery_us, o.delivery_us);
  f("ws_restart_back_ms", r.ws_restart_back_ms, o.ws_restart_back_ms);
}

}  // namespace

void LoadResult::merge(const LoadResult& other) {
  counters(*this, other, [](const char*, std::uint64_t& v, const std::uint64_t& v2) { v += v2; });
  count_maps(*this, other, [](const char*, Counts& c, const Counts& c2) {
    for (const auto& [k, v] : c2) c[k] += v;
  });
  histograms(*this, other,
             [](const char*, stats::Histogram& h, const stats::Histogram& h2) { h.merge(h2); });
  ramp_ms = std::max(ramp_ms, other.ramp_ms);
  reconnect.merge(other.reconnect);
  ReconnectStats::add(ws_restart_closes_per_s, other.ws_restart_closes_per_s);
  ReconnectStats::add(ws_restart_back_per_s, other.ws_restart_back_per_s);
}

nlohmann::json LoadResult::to_json() const {
  nlohmann::json j;
  counters(*this, *this,
           [&](const char* name, const std::uint64_t& v, const std::uint64_t&) { j[name] = v; });
  count_maps(*this, *this, [&](const char* name, const Counts& c, const Counts&) { j[name] = c; });
  histograms(*this, *this,
             [&](const char* name, const stats::Histogram& h, const stats::Histogram&) {
               j["histograms"][name] = nlohmann::json::parse(h.to_json());
             });
  j["ramp_ms"] = ramp_ms;
  j["reconnect"] = reconnect.to_json();
  j["ws_restart_closes_per_s"] = ws_restart_closes_per_s;
  j["ws_restart_back_per_s"] = ws_restart_back_per_s;
  return j;
}

LoadResult LoadResult::from_json(const nlohmann::json& j) {
  LoadResult r;
  try {
    counters(r, r, [&](const char* name, std::uint64_t& v, std::uint64_t&) {
      v = j.at(name).get<std::uint64_t>();
    });
    count_maps(r, r, [&](const char* name, Counts& c, Counts&) { c = j.at(name).get<Counts>(); });
    histograms(r, r, [&](const char* name, stats::Histogram& h, stats::Histogram&) {
      h = stats::Histogram::from_json(j.at("histograms").at(name).dump());
    });
    r.ramp_ms = j.at("ramp_ms").get<std::uint64_t>();
    r.reconnect = ReconnectStats::from_json(j.at("reconnect"));
    r.ws_restart_closes_per_s = j.at("ws_restart_closes_per_s").get<ReconnectStats::Series>();
    r.ws_restart_back_per_s = j.at("ws_restart_back_per_s").get<ReconnectStats::Series>();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("LoadResult::from_json: ") + e.what());
  }
  return r;
}

nlohmann::json LoadResult::report_json(unsigned workers_expected) const {
  nlohmann::json j;
  j["workers_expected"] = workers_expected;
  j["workers_reported"] = processes;
  j["complete"] = complete(workers_expected);
  counters(*this, *this,
           [&](const char* name, const std::uint64_t& v, const std::uint64_t&) { j[name] = v; });
  count_maps(*this, *this, [&](const char* name, const Counts& c, const Counts&) { j[name] = c; });
  j["ramp_ms"] = ramp_ms;
  j["reconnect"] = reconnect.to_json();
  histograms(*this, *this,
             [&](const char* name, const stats::Histogram& h, const stats::Histogram&) {
               j[name] = nlohmann::json::parse(h.summary_json());
             });
  j["dead"] = {{"count", dead_count},
               {"closed", dead_closed},
               {"not_closed", dead_not_closed()},
               {"closed_early", dead_closed_early},
               {"closed_late", dead_closed_late},
               {"close_after_ms",
                {{"min", dead_close_ms.min()},
                 {"p50", dead_close_ms.percentile(50)},
                 {"p99", dead_close_ms.percentile(99)},
                 {"max", dead_close_ms.max()}}}};
  if (ws_upgraded > 0 || !ws_offsets.empty()) j["ws"] = ws_report();
  return j;
}

nlohmann::json LoadResult::ws_report() const {
  // Per (target, channel): what the live subscribers open at the end should
  // have received (clients * final - base_sum) and what they still lack after
  // the last offset each saw (clients * final - last_sum).
  std::map<std::string, std::uint64_t> final_of, clients_of, last_of, base_of;
  for (const auto& [key, v] : ws_offsets) {
    const auto colon = key.rfind(':');
    if (colon == std::string::npos) continue;
    const std::string pair = key.substr(0, colon), what = key.substr(colon + 1);
    if (what == "final")
      final_of[pair] = v;
    else if (what == "clients")
      clients_of[pair] = v;
    else if (what == "last_sum")
      last_of[pair] = v;
    else if (what == "base_sum")
      base_of[pair] = v;
  }
  std::uint64_t expected = 0, tail = 0, live = 0;
  for (const auto& [pair, n] : clients_of) {
    live += n;
    // Targets without a publisher (--publish-targets first: servers sharing a
    // broker) are expected to reach the first target's offsets.
    const std::string first = "0" + pair.substr(pair.find('/'));
    const std::uint64_t final = final_of.count(pair)    ? final_of[pair]
                                : final_of.count(first) ? final_of[first]
                                                        : 0;
    const std::uint64_t top = n * final;
    expected += top > base_of[pair] ? top - base_of[pair] : 0;
    tail += top > last_of[pair] ? top - last_of[pair] : 0;
  }
  const std::uint64_t missing = missing_gaps + tail;
  return {{"upgraded", ws_upgraded},
          {"subscribed", ws_subscribed},
          {"publishers", ws_publishers},
          {"compressed_connections", ws_compressed_connections},
          {"compressed_messages", ws_compressed_messages},
          {"publications_sent", publications_sent},
          {"publish_acks", publish_acks},
          {"publish_skipped", publish_skipped},
          {"live_subscribers_at_end", live},
          {"expected", expected},
          {"delivered", delivered},
          {"recovered_publications", recovered_publications},
          {"duplicates", duplicates},
          {"missing_gaps", missing_gaps},
          {"missing_tail", tail},
          {"missing", missing},
          {"unsubscribed_at_end", unsubscribed_at_end},
          {"every_publication_reached_every_live_subscriber",
           missing == 0 && duplicates == 0 && unsubscribed_at_end == 0},
          {"delivery_us", nlohmann::json::parse(delivery_us.summary_json())},
          {"server_pings", server_pings},
          {"presence_events", presence_events},
          {"reconnects", reconnects},
          {"recovered", recovered},
          {"not_recovered", not_recovered},
          {"server_restart",
           {{"closes", ws_restart_closes},
            {"resubscribed", ws_restart_resubscribed},
            {"recovered", ws_restart_recovered},
            {"publisher_closes", ws_publisher_restarts},
            {"back_ms", nlohmann::json::parse(ws_restart_back_ms.summary_json())},
            {"closes_per_s", ws_restart_closes_per_s},
            {"back_per_s", ws_restart_back_per_s}}}};
}

bool LoadResult::expectations_met(bool expect_idle_close, bool expect_delivery,
                                  nlohmann::json& report) const {
  bool met = true;
  if (expect_idle_close)
    met = live_closed_by_server == 0 && dead_not_closed() == 0 && dead_closed_early == 0 &&
          dead_closed_late == 0;
  if (expect_delivery)
    met = met && report.contains("ws") &&
          report["ws"]["every_publication_reached_every_live_subscriber"].get<bool>() &&
          publish_acks > 0;
  if (expect_idle_close || expect_delivery) report["expectations_met"] = met;
  return met;
}

void print_ws_summary(const nlohmann::json& w) {
  const auto& d = w["delivery_us"];
  std::printf(
      "ws: upgraded %llu, subscribed %llu, publishers %llu; publications sent %llu acked %llu; "
      "delivered %llu of %llu expected (+%llu recovered), missing %llu (gaps %llu, tail %llu), "
      "duplicates %llu\n"
      "delivery_us: p50 %llu p99 %llu max %llu; server pings %llu; reconnects %llu "
      "(recovered %llu, not %llu)\n",
      w["upgraded"].get<unsigned long long>(), w["subscribed"].get<unsigned long long>(),
      w["publishers"].get<unsigned long long>(), w["publications_sent"].get<unsigned long long>(),
      w["publish_acks"].get<unsigned long long>(), w["delivered"].get<unsigned long long>(),
      w["expected"].get<unsigned long long>(),
      w["recovered_publications"].get<unsigned long long>(), w["missing"].get<unsigned long long>(),
      w["missing_gaps"].get<unsigned long long>(), w["missing_tail"].get<unsigned long long>(),
      w["duplicates"].get<unsigned long long>(), d["p50"].get<unsigned long long>(),
      d["p99"].get<unsigned long long>(), d["max"].get<unsigned long long>(),
      w["server_pings"].get<unsigned long long>(), w["reconnects"].get<unsigned long long>(),
      w["recovered"].get<unsigned long long>(), w["not_recovered"].get<unsigned long long>());
  if (!w.contains("server_restart")) return;
  const auto& sr = w["server_restart"];
  if (sr["closes"].get<unsigned long long>() + sr["publisher_closes"].get<unsigned long long>() ==
      0)
    return;
  const auto& b = sr["back_ms"];
  std::printf(
      "server restarts (close 1012, not errors): %llu subscribers closed, %llu back "
      "(recovered %llu), publishers %llu; back_ms: p50 %llu p99 %llu max %llu; closes per "
      "second %s\n",
      sr["closes"].get<unsigned long long>(), sr["resubscribed"].get<unsigned long long>(),
      sr["recovered"].get<unsigned long long>(), sr["publisher_closes"].get<unsigned long long>(),
      b["p50"].get<unsigned long long>(), b["p99"].get<unsigned long long>(),
      b["max"].get<unsigned long long>(), sr["closes_per_s"].dump().c_str());
}

bool write_json_report(const std::string& path, const nlohmann::json& report) {
  std::ofstream out(path);
  out << report.dump(2) << "\n";
  if (out) return true;
  std::fprintf(stderr, "heartwheel-load: error: cannot write %s\n", path.c_str());
  return false;
}

}  // namespace heartwheel::load
