#include "coordinator.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>

#include "agent_link.h"
#include "cli_program.h"
#include "duration.h"
#include "result.h"

namespace heartwheel::load {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

volatile sig_atomic_t g_signals = 0;
void on_signal(int) { g_signals = g_signals + 1; }

struct Agent {
  Agent(std::string where, int fd) : address(std::move(where)), link(fd) {}
  std::string address;
  LineLink link;
  std::uint64_t connections = 0;
  unsigned processes = 0;
  nlohmann::json point;   // its latest timeline point
  nlohmann::json report;  // its result's report
  int status = -1;
  bool done = false, lost = false;
  double lost_at_s = 0;
  std::string lost_why;
  Clock::time_point last_heard = Clock::now();
  std::int64_t clock_offset_ns = 0;  // ws: its CLOCK_MONOTONIC minus ours
  std::uint64_t clock_rtt_ns = 0;    // ... read within half of this
};

std::uint64_t share(std::uint64_t total, unsigned index, unsigned count) {
  return total / count + (index < total % count ? 1 : 0);
}

milliseconds ms(std::chrono::nanoseconds d) { return std::chrono::duration_cast<milliseconds>(d); }

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::vector<Agent> reach_agents(const CoordinatorOptions& co) {
  std::vector<Agent> agents;
  if (!co.agents.empty()) {
    for (const auto& address : co.agents)
      agents.emplace_back(address, connect_to(address, ms(co.agent_wait)));
    return agents;
  }
  const int lfd = listen_on(co.listen);
  std::printf("coordinator listening on %s:%u for %u agents\n",
              co.listen.substr(0, co.listen.rfind(':')).c_str(), bound_port(lfd), co.expect_agents);
  std::fflush(stdout);
  const auto deadline = Clock::now() + co.agent_wait;
  while (agents.size() < co.expect_agents && Clock::now() < deadline) {
    const int fd = accept_within(lfd, ms(deadline - Clock::now()));
    if (fd >= 0) agents.emplace_back(peer_name(fd), fd);
  }
  ::close(lfd);
  if (agents.size() < co.expect_agents)
    throw std::runtime_error("only " + std::to_string(agents.size()) + " of " +
                             std::to_string(co.expect_agents) + " agents connected within " +
                             format_duration(co.agent_wait) + " (--agent-wait)");
  return agents;
}

// ws: the agent's clock against ours, from the round trip that took least
// of `rounds` (NTP's rule: the offset is within half of it).
void read_clock(Agent& a, int rounds, std::chrono::milliseconds wait) {
  a.clock_rtt_ns = UINT64_MAX;
  for (int i = 0; i < rounds; ++i) {
    const std::uint64_t sent = monotonic_ns();
    a.link.send({{"type", "clock"}});
    const auto m = a.link.wait_message(wait);
    const std::uint64_t back = monotonic_ns();
    if (!m || m->value("type", "") != "clock")
      throw std::runtime_error("agent " + a.address + " did not answer a clock reading");
    if (back - sent >= a.clock_rtt_ns) continue;
    a.clock_rtt_ns = back - sent;
    const auto theirs = m->value("now_ns", std::uint64_t{0});
    a.clock_offset_ns =
        static_cast<std::int64_t>(theirs) - static_cast<std::int64_t>(sent + (back - sent) / 2);
  }
}

void lose(Agent& a, Clock::time_point start, const std::string& why) {
  a.lost = true;
  a.lost_at_s = std::round(seconds_since(start) * 10) / 10;
  a.lost_why = why;
  a.link.close();
  std::fprintf(stderr, "heartwheel-load: agent %s LOST at %.1f s: %s\n", a.address.c_str(),
               a.lost_at_s, why.c_str());
}

void handle(Agent& a, const nlohmann::json& m) {
  a.last_heard = Clock::now();
  const auto type = m.value("type", "");
  if (type == "progress") {
    a.point = m.at("point");
  } else if (type == "result") {
    a.report = m.at("report");
    a.status = m.value("status", 1);
    a.done = true;
    a.link.close();
  }
}

std::uint64_t point_sum(const std::vector<Agent>& agents, const char* key) {
  std::uint64_t total = 0;
  for (const auto& a : agents)
    if (!a.lost && a.point.is_object() && a.point.contains(key))
      total += a.point[key].get<std::uint64_t>();
  return total;
}

// Waits for every agent's result (or its loss), with the live line.
nlohmann::json follow(std::vector<Agent>& agents, const LoadOptions& load,
                      const CoordinatorOptions& co, Clock::time_point start) {
  nlohmann::json timeline = nlohmann::json::array();
  const auto deadline =
      start + load.duration + load.grace + co.agent_timeout + std::chrono::seconds(30);
  auto next_tick = start + milliseconds(1300);
  std::uint64_t last_established = 0;
  int forwarded = 0;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Agent*> owners;
    for (auto& a : agents)
      if (!a.done && !a.lost) {
        fds.push_back({a.link.fd(), POLLIN, 0});
        owners.push_back(&a);
      }
    if (fds.empty()) break;
    if (::poll(fds.data(), fds.size(), 250) > 0)
      for (std::size_t i = 0; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        Agent& a = *owners[i];
        const bool open = a.link.receive();
        while (auto m = a.link.next()) handle(a, *m);
        if (!open && !a.done) lose(a, start, "its connection closed before its result came");
      }
    for (auto* a : owners)
      if (!a->done && !a->lost && Clock::now() - a->last_heard > co.agent_timeout)
        lose(*a, start, "silent for " + format_duration(co.agent_timeout) + " (--agent-timeout)");
    if (Clock::now() > deadline)
      for (auto* a : owners)
        if (!a->done && !a->lost) lose(*a, start, "no result by duration + grace");
    if (g_signals > forwarded) {  // Ctrl-C: the agents stop their runs and still report
      for (auto& a : agents) a.link.send({{"type", "abort"}});
      forwarded = g_signals;
    }
    if (Clock::now() >= next_tick) {
      const double t = std::round(seconds_since(start) * 10) / 10;
      nlohmann::json p = {{"t_s", t}};
      for (const char* k : {"open", "established", "connect_errors", "sent", "received",
                            "dead_closed", "live_closed"})
        p[k] = point_sum(agents, k);
      timeline.push_back(p);
      if (!load.quiet) {
        unsigned lost = 0;
        for (const auto& a : agents) lost += a.lost;
        std::fprintf(stderr,
                     "[%6.1fs] agents %zu (lost %u) | open %llu (+%llu/s) connect errors %llu | "
                     "closed by server: dead %llu live %llu\n",
                     t, agents.size(), lost, p["open"].get<unsigned long long>(),
                     p["established"].get<unsigned long long>() - last_established,
                     p["connect_errors"].get<unsigned long long>(),
                     p["dead_closed"].get<unsigned long long>(),
                     p["live_closed"].get<unsigned long long>());
      }
      last_established = p["established"].get<std::uint64_t>();
      next_tick += std::chrono::seconds(1);
    }
  }
  return timeline;
}

nlohmann::json agent_summary(const Agent& a, unsigned index) {
  nlohmann::json j = {
      {"index", index},           {"address", a.address}, {"connections", a.connections},
      {"processes", a.processes}, {"lost", a.lost},       {"status", a.status}};
  if (a.lost) {
    j["lost_at_s"] = a.lost_at_s;
    j["lost_why"] = a.lost_why;
  }
  if (a.report.is_object()) {
    const auto& r = a.report;
    for (const char* k : {"connections_attempted", "connections_established", "open_at_end",
                          "live_closed_by_server", "ramp_ms", "complete", "elapsed_ms",
                          "messages_sent", "messages_received"})
      if (r.contains(k)) j[k] = r[k];
    j["dead"] = r.value("dead", nlohmann::json::object());
    j["connect_errors"] = r.value("connect_errors", nlohmann::json::object());
    if (r.contains("rtt_us"))
      j["rtt_us"] = {{"p50", r["rtt_us"]["p50"]}, {"p99", r["rtt_us"]["p99"]}};
    if (r.contains("expectations_met")) j["expectations_met"] = r["expectations_met"];
    if (r.contains("ws")) {
      const auto& w = r["ws"];
      j["ws"] = {
          {"upgraded", w["upgraded"]},
          {"subscribed", w["subscribed"]},
          {"publishers", w["publishers"]},
          {"delivered", w["delivered"]},
          {"duplicates", w["duplicates"]},
          {"missing_gaps", w["missing_gaps"]},
          {"delivery_us", {{"p50", w["delivery_us"]["p50"]}, {"p99", w["delivery_us"]["p99"]}}},
          {"clock_offset_us", a.clock_offset_ns / 1000},
          {"clock_rtt_us", a.clock_rtt_ns / 1000}};
    }
  }
  return j;
}

// --expect-idle-close and --expect-delivery on the merged result (what the
// supervisor decides for one host).
void print_summary(const nlohmann::json& r, const std::vector<Agent>& agents) {
  unsigned lost = 0;
  for (const auto& a : agents) lost += a.lost;
  std::printf("agents: %zu, %zu reported, %u lost\n", agents.size(), agents.size() - lost, lost);
  for (std::size_t i = 0; i < agents.size(); ++i) {
    const auto& a = agents[i];
    if (a.lost) {
      std::printf("  agent %zu %s: LOST at %.1f s (%s)\n", i, a.address.c_str(), a.lost_at_s,
                  a.lost_why.c_str());
      continue;
    }
    const auto& x = a.report;
    if (!x.is_object()) {
      std::printf("  agent %zu %s: no report (status %d)\n", i, a.address.c_str(), a.status);
      continue;
    }
    std::printf(
        "  agent %zu %s: %llu of %llu established, open at end %llu, dead %llu closed "
        "%llu (early %llu, late %llu), live closed %llu, status %d\n",
        i, a.address.c_str(), x["connections_established"].get<unsigned long long>(),
        x["connections_attempted"].get<unsigned long long>(),
        x["open_at_end"].get<unsigned long long>(), x["dead"]["count"].get<unsigned long long>(),
        x["dead"]["closed"].get<unsigned long long>(),
        x["dead"]["closed_early"].get<unsigned long long>(),
        x["dead"]["closed_late"].get<unsigned long long>(),
        x["live_closed_by_server"].get<unsigned long long>(), a.status);
  }
  for (std::size_t i = 0; i < agents.size(); ++i) {
    const auto& a = agents[i];
    if (!a.report.is_object() || !a.report.contains("ws")) continue;
    const auto& w = a.report["ws"];
    std::printf(
        "  agent %zu ws: %llu subscribed, %llu delivered, gaps %llu, duplicates %llu; "
        "delivery_us p50 %llu p99 %llu; clock %+.3f ms (read within %.3f ms)%s\n",
        i, w["subscribed"].get<unsigned long long>(), w["delivered"].get<unsigned long long>(),
        w["missing_gaps"].get<unsigned long long>(), w["duplicates"].get<unsigned long long>(),
        w["delivery_us"]["p50"].get<unsigned long long>(),
        w["delivery_us"]["p99"].get<unsigned long long>(),
        static_cast<double>(a.clock_offset_ns) / 1e6, static_cast<double>(a.clock_rtt_ns) / 2e6,
        i == 0 ? ", the publisher" : "");
  }
  const auto& dead = r["dead"];
  std::printf(
      "merged: %llu established of %llu attempted, %llu open at end; rtt_us p50 %llu p99 %llu\n"
      "dead: %llu, closed by server %llu (after ms: min %llu p50 %llu p99 %llu max %llu), early "
      "%llu, late %llu; live closed by server: %llu\n",
      r["connections_established"].get<unsigned long long>(),
      r["connections_attempted"].get<unsigned long long>(),
      r["open_at_end"].get<unsigned long long>(), r["rtt_us"]["p50"].get<unsigned long long>(),
      r["rtt_us"]["p99"].get<unsigned long long>(), dead["count"].get<unsigned long long>(),
      dead["closed"].get<unsigned long long>(),
      dead["close_after_ms"]["min"].get<unsigned long long>(),
      dead["close_after_ms"]["p50"].get<unsigned long long>(),
      dead["close_after_ms"]["p99"].get<unsigned long long>(),
      dead["close_after_ms"]["max"].get<unsigned long long>(),
      dead["closed_early"].get<unsigned long long>(), dead["closed_late"].get<unsigned long long>(),
      r["live_closed_by_server"].get<unsigned long long>());
  if (r.contains("ws")) print_ws_summary(r["ws"]);
  if (!r["connect_errors"].empty())
    std::printf("connect errors: %s\n", r["connect_errors"].dump().c_str());
}

}  // namespace

void add_coordinator_options(CLI::App& app, CoordinatorOptions& co) {
  auto* agents = app.add_option_function<std::string>(
                        "--agents",
                        [&co](const std::string& s) {
                          for (std::size_t start = 0; start <= s.size();) {
                            const auto comma = s.find(',', start);
                            const auto end = comma == std::string::npos ? s.size() : comma;
                            if (end > start) co.agents.push_back(s.substr(start, end - start));
                            if (comma == std::string::npos) break;
                            start = comma + 1;
                          }
                        },
                        "Run across hosts: the agents (heartwheel-load --agent-listen) at "
                        "HOST:PORT,...; each gets its share of --connections, any --mode (ws: "
                        "agent 0 runs the one publisher, delivery is judged on the merged "
                        "result; README \"Across hosts\")")
                     ->type_name("LIST");
  auto* listen = app.add_option("--agents-listen", co.listen,
                                "Run across hosts: wait here, HOST:PORT, for --expect-agents "
                                "agents started with --coordinator")
                     ->type_name("HOST:PORT");
  agents->excludes(listen);
  app.add_option("--expect-agents", co.expect_agents, "With --agents-listen: how many agents")
      ->check(CLI::Range(1u, 1000u));
  app.add_option_function<std::string>(
         "--agent-wait",
         [&co](const std::string& t) {
           co.agent_wait = cli::parse_duration_flag("--agent-wait", t);
         },
         "How long to wait for the agents to be reachable or to connect (default 60s)")
      ->type_name("DURATION");
  app.add_option_function<std::string>(
         "--agent-timeout",
         [&co](const std::string& t) {
           co.agent_timeout = cli::parse_duration_flag("--agent-timeout", t);
         },
         "An agent silent this long during the run is lost (default 10s; agents speak every "
         "second)")
      ->type_name("DURATION");
}

void validate_coordinator(const LoadOptions& load, const CoordinatorOptions& co) {
  if (!co.listen.empty() && co.expect_agents == 0)
    throw std::invalid_argument("--agents-listen needs --expect-agents K");
  if (co.listen.empty() && co.expect_agents > 0)
    throw std::invalid_argument("--expect-agents goes with --agents-listen");
  const unsigned count = co.agents.empty() ? co.expect_agents : co.agents.size();
  if (load.connections < count)
    throw std::invalid_argument("--connections " + std::to_string(load.connections) +
                                " is fewer than the " + std::to_string(count) + " agents");
  LoadOptions first = load;  // the largest share, checked as its agent will
  first.connections = share(load.connections, 0, count);
  first.connect_rate = load.connect_rate / count;
  try {
    validate(first);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("each agent's share (") +
                                std::to_string(first.connections) + " connections): " + e.what());
  }
}

std::vector<std::string> agent_share_argv(const std::vector<std::string>& argv,
                                          const LoadOptions& load, unsigned index, unsigned count,
                                          std::int64_t clock_offset_ns) {
  std::vector<std::string> rest(argv.begin() + (argv.empty() ? 0 : 1), argv.end());
  auto out = without_flags(
      rest,
      {"--agents", "--agents-listen", "--expect-agents", "--agent-wait", "--agent-timeout",
       "--json", "-c", "--connections", "--connect-rate", "--clock-offset-ns"},
      {"-q", "--quiet", "--no-ws-publisher"});
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.6g", load.connect_rate / count);
  out.insert(out.end(), {"--connections", std::to_string(share(load.connections, index, count)),
                         "--connect-rate", rate});
  if (load.mode == Mode::ws) {
    // One publisher for the run (agent 0's), one clock for its stamps.
    if (index > 0) out.push_back("--no-ws-publisher");
    out.insert(out.end(), {"--clock-offset-ns", std::to_string(clock_offset_ns)});
  }
  return out;
}

int run_coordinator(const LoadOptions& load, const CoordinatorOptions& co,
                    const std::vector<std::string>& argv) {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::vector<Agent> agents = reach_agents(co);
  const auto count = static_cast<unsigned>(agents.size());
  for (auto& a : agents) {
    auto hello = a.link.wait_message(ms(co.agent_wait));
    if (!hello || hello->value("type", "") != "hello")
      throw std::runtime_error("agent " + a.address + " did not say hello");
  }
  if (load.mode == Mode::ws)
    for (auto& a : agents) read_clock(a, 5, ms(co.agent_wait));
  for (unsigned i = 0; i < count; ++i)
    agents[i].link.send(
        {{"type", "configure"},
         {"index", i},
         {"agents", count},
         {"argv", agent_share_argv(argv, load, i, count, agents[i].clock_offset_ns)}});
  std::vector<std::string> refusals;
  for (auto& a : agents) {
    auto m = a.link.wait_message(std::chrono::seconds(30));
    if (m && m->value("type", "") == "ready") {
      a.connections = m->value("connections", std::uint64_t{0});
      a.processes = m->value("processes", 0u);
    } else {
      refusals.push_back(
          a.address + ": " +
          (m ? m->value("error", std::string("said ") + m->dump()) : std::string("no answer")));
    }
  }
  if (!refusals.empty()) {
    for (auto& a : agents) a.link.send({{"type", "abort"}});
    for (const auto& r : refusals)
      std::fprintf(stderr, "heartwheel-load: error: agent %s\n", r.c_str());
    return 2;
  }
  // Every agent is ready: the starts go out back to back, so the agents
  // begin within a round trip of each other.
  const auto start = Clock::now();
  for (auto& a : agents) {
    a.link.send({{"type", "start"}});
    a.last_heard = start;
  }
  nlohmann::json timeline = follow(agents, load, co, start);

  LoadResult merged;
  unsigned workers_expected = 0, lost = 0;
  int status = 0;
  for (auto& a : agents) {
    workers_expected += a.processes;
    lost += a.lost;
    if (a.report.is_object() && a.report.contains("raw"))
      merged.merge(LoadResult::from_json(a.report["raw"]));
    if (!a.lost && (a.status == 1 || !a.report.is_object())) status = 1;
  }
  nlohmann::json report = merged.report_json(workers_expected);
  report["agents"] = nlohmann::json::array();
  for (unsigned i = 0; i < count; ++i) report["agents"].push_back(agent_summary(agents[i], i));
  report["agents_lost"] = lost;
  report["complete"] = report["complete"].get<bool>() && lost == 0;
  report["elapsed_ms"] = static_cast<std::uint64_t>(seconds_since(start) * 1000);
  report["interrupted"] = g_signals > 0;
  const bool met =
      merged.expectations_met(load.expect_idle_close.count() > 0, load.expect_delivery, report);
  report["timeline"] = std::move(timeline);
  report["raw"] = merged.to_json();
  if (!load.json_path.empty() && !write_json_report(load.json_path, report)) status = 1;
  print_summary(report, agents);
  if (lost > 0) {
    std::printf("INCOMPLETE: %u of %u agents lost; the merged figures miss what they held\n", lost,
                count);
    return 1;
  }
  if (status == 0 && !met) {
    std::printf("expectations NOT met (merged over every agent)\n");
    return 3;
  }
  if (status == 0 && (load.expect_idle_close.count() > 0 || load.expect_delivery))
    std::printf("expectations met (merged over every agent)\n");
  return status;
}

}  // namespace heartwheel::load
