#include "result.h"

#include <algorithm>
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
  f("dead_count", r.dead_count, o.dead_count);
  f("dead_closed", r.dead_closed, o.dead_closed);
  f("dead_closed_early", r.dead_closed_early, o.dead_closed_early);
  f("dead_closed_late", r.dead_closed_late, o.dead_closed_late);
  f("live_closed_by_server", r.live_closed_by_server, o.live_closed_by_server);
  f("open_at_end", r.open_at_end, o.open_at_end);
  f("connects_unfinished", r.connects_unfinished, o.connects_unfinished);
  f("processes", r.processes, o.processes);
}

template <class A, class B, class F>
void count_maps(A& r, B& o, F&& f) {
  f("connect_errors", r.connect_errors, o.connect_errors);
  f("errors", r.errors, o.errors);
  f("http_status", r.http_status, o.http_status);
}

template <class A, class B, class F>
void histograms(A& r, B& o, F&& f) {
  f("rtt_us", r.rtt_us, o.rtt_us);
  f("rtt_steady_us", r.rtt_steady_us, o.rtt_steady_us);
  f("latency_us", r.latency_us, o.latency_us);
  f("heartbeat_rtt_us", r.heartbeat_rtt_us, o.heartbeat_rtt_us);
  f("connect_us", r.connect_us, o.connect_us);
  f("dead_close_ms", r.dead_close_ms, o.dead_close_ms);
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
  return j;
}

}  // namespace heartwheel::load
