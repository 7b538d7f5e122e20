#include "supervisor.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "duration.h"
#include "result.h"
#include "worker.h"

namespace heartwheel::load {

namespace {

volatile sig_atomic_t g_signals = 0;

void on_signal(int) { g_signals = g_signals + 1; }

struct Child {
  pid_t pid = -1;
  int fd = -1;              // read end of its pipe; -1 once at EOF
  std::string buffer;       // bytes of an unfinished line
  nlohmann::json progress;  // its latest progress line
  bool reported = false;    // its result arrived
  bool killed = false;      // we sent it SIGKILL (deadline, or a second Ctrl-C)
  bool reaped = false;
  int status = 0;
};

std::uint64_t now_ms() { return uv_hrtime() / 1'000'000; }

std::uint64_t sum(const std::vector<Child>& children, const char* key) {
  std::uint64_t total = 0;
  for (const auto& c : children)
    if (c.progress.contains(key)) total += c.progress[key].get<std::uint64_t>();
  return total;
}

[[noreturn]] void run_child(const LoadOptions& options, unsigned index, int write_fd) {
  // Die with the parent; never outlive a supervisor that was SIGKILLed.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGPIPE, SIG_IGN);
  int code = 1;
  try {
    Worker worker(options, share_of(options, index), write_fd);
    code = worker.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heartwheel-load worker %u: %s\n", index, e.what());
  }
  ::close(write_fd);
  std::fflush(nullptr);
  _exit(code);
}

void handle_line(Child& child, const std::string& line, LoadResult& merged, unsigned index) {
  try {
    const auto j = nlohmann::json::parse(line);
    const auto type = j.at("type").get<std::string>();
    if (type == "progress") {
      child.progress = j;
    } else if (type == "result") {
      merged.merge(LoadResult::from_json(j.at("result")));
      child.reported = true;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heartwheel-load: bad report from worker %u: %s\n", index, e.what());
  }
}

// Reads what is available from a child; false at EOF.
bool drain(Child& child, LoadResult& merged, unsigned index) {
  char buf[65536];
  const ssize_t n = ::read(child.fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) return false;
  child.buffer.append(buf, static_cast<std::size_t>(n));
  std::size_t start = 0;
  for (std::size_t nl; (nl = child.buffer.find('\n', start)) != std::string::npos; start = nl + 1)
    handle_line(child, child.buffer.substr(start, nl - start), merged, index);
  child.buffer.erase(0, start);
  return true;
}

void signal_all(std::vector<Child>& children, int sig) {
  for (auto& c : children)
    if (!c.reaped && c.pid > 0) {
      ::kill(c.pid, sig);
      if (sig == SIGKILL) c.killed = true;
    }
}

// A worker whose result arrived counts as done even if we killed it while it
// was still closing its connections (it reports before its teardown).
bool failed(const Child& c) {
  if (!c.reported) return true;
  if (c.killed && WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGKILL) return false;
  return !WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0;
}

void reap(std::vector<Child>& children, bool block) {
  for (auto& c : children) {
    if (c.reaped) continue;
    const pid_t r = ::waitpid(c.pid, &c.status, block ? 0 : WNOHANG);
    if (r == c.pid || (r < 0 && errno == ECHILD)) c.reaped = true;
  }
}

void print_summary(const nlohmann::json& r) {
  const auto& rtt = r["rtt_us"];
  const auto& dead = r["dead"];
  if (r["complete"] == false)
    std::printf(
        "INCOMPLETE: only %u of %u worker processes reported; every figure below misses what "
        "the others held\n",
        r["workers_reported"].get<unsigned>(), r["workers_expected"].get<unsigned>());
  std::printf(
      "connections: %llu established of %llu attempted, %llu open at end; ramp %llu ms\n"
      "messages: %llu sent, %llu received\n"
      "rtt_us: p50 %llu p90 %llu p99 %llu p999 %llu max %llu\n"
      "dead: %llu, closed by server %llu (after ms: min %llu p50 %llu p99 %llu max %llu), "
      "early %llu, late %llu\n"
      "live closed by server: %llu\n",
      r["connections_established"].get<unsigned long long>(),
      r["connections_attempted"].get<unsigned long long>(),
      r["open_at_end"].get<unsigned long long>(), r["ramp_ms"].get<unsigned long long>(),
      r["messages_sent"].get<unsigned long long>(),
      r["messages_received"].get<unsigned long long>(), rtt["p50"].get<unsigned long long>(),
      rtt["p90"].get<unsigned long long>(), rtt["p99"].get<unsigned long long>(),
      rtt["p999"].get<unsigned long long>(), rtt["max"].get<unsigned long long>(),
      dead["count"].get<unsigned long long>(), dead["closed"].get<unsigned long long>(),
      dead["close_after_ms"]["min"].get<unsigned long long>(),
      dead["close_after_ms"]["p50"].get<unsigned long long>(),
      dead["close_after_ms"]["p99"].get<unsigned long long>(),
      dead["close_after_ms"]["max"].get<unsigned long long>(),
      dead["closed_early"].get<unsigned long long>(), dead["closed_late"].get<unsigned long long>(),
      r["live_closed_by_server"].get<unsigned long long>());
  if (r.value("tls_handshakes", 0ULL) > 0) {
    const auto& h = r["tls_handshake_us"];
    std::printf("tls: %llu handshakes (%llu resumed); handshake_us: p50 %llu p99 %llu max %llu\n",
                r["tls_handshakes"].get<unsigned long long>(),
                r["tls_resumed"].get<unsigned long long>(), h["p50"].get<unsigned long long>(),
                h["p99"].get<unsigned long long>(), h["max"].get<unsigned long long>());
  }
  if (r.contains("ws")) print_ws_summary(r["ws"]);
  if (!r["connect_errors"].empty())
    std::printf("connect errors: %s\n", r["connect_errors"].dump().c_str());
  if (!r["errors"].empty()) std::printf("errors: %s\n", r["errors"].dump().c_str());
}

}  // namespace

int run_supervisor(const LoadOptions& options) {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  std::fflush(nullptr);  // children must not re-flush our buffered output

  const std::uint64_t start = now_ms();
  std::vector<Child> children(options.processes);
  for (unsigned k = 0; k < options.processes; ++k) {
    int fds[2];
    if (::pipe(fds) != 0) {
      std::perror("heartwheel-load: error: pipe");
      signal_all(children, SIGKILL);
      reap(children, true);
      return 1;
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      for (unsigned i = 0; i < k; ++i) ::close(children[i].fd);
      run_child(options, k, fds[1]);
    }
    ::close(fds[1]);
    if (pid < 0) {
      std::perror("heartwheel-load: error: fork");
      ::close(fds[0]);
      signal_all(children, SIGKILL);
      reap(children, true);
      return 1;
    }
    children[k].pid = pid;
    children[k].fd = fds[0];
  }

  LoadResult merged;
  nlohmann::json timeline = nlohmann::json::array();
  const std::uint64_t deadline =
      start + static_cast<std::uint64_t>((options.duration + options.grace).count() / 1'000'000);
  // Print a little after the workers report (they write at whole seconds).
  std::uint64_t next_tick = start + 1200;
  std::uint64_t last_established = 0, last_sent = 0, last_received = 0;
  int forwarded = 0;
  bool killed = false;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<unsigned> owners;
    for (unsigned k = 0; k < children.size(); ++k)
      if (children[k].fd >= 0) {
        fds.push_back({children[k].fd, POLLIN, 0});
        owners.push_back(k);
      }
    if (fds.empty()) break;
    const std::uint64_t now = now_ms();
    // Past the deadline the killed workers only have to close their pipes:
    // poll in short steps instead of spinning.
    const std::uint64_t wake = killed ? now + 100 : std::min(next_tick, deadline);
    const int timeout = wake > now ? static_cast<int>(wake - now) : 0;
    const int n = ::poll(fds.data(), fds.size(), timeout);
    if (n > 0) {
      for (std::size_t i = 0; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        Child& c = children[owners[i]];
        if (!drain(c, merged, owners[i])) {
          ::close(c.fd);
          c.fd = -1;
        }
      }
    }
    if (g_signals > forwarded) {
      // First Ctrl-C: let the workers close and report. Second: kill them.
      signal_all(children, g_signals >= 2 ? SIGKILL : SIGTERM);
      forwarded = g_signals;
    }
    if (!killed && now_ms() >= deadline) {
      unsigned unreported = 0;
      for (const auto& c : children) unreported += !c.reported;
      std::fprintf(stderr,
                   "heartwheel-load: workers still running at duration + grace: killing them "
                   "(%u of them have not reported)\n",
                   unreported);
      signal_all(children, SIGKILL);
      killed = true;
    }
    if (now_ms() >= next_tick) {
      const double t = static_cast<double>(now_ms() - start) / 1000.0;
      const std::uint64_t open = sum(children, "open"), established = sum(children, "established");
      const std::uint64_t sent = sum(children, "sent"), received = sum(children, "received");
      const std::uint64_t errors = sum(children, "connect_errors");
      const std::uint64_t dead_closed = sum(children, "dead_closed"),
                          live_closed = sum(children, "live_closed");
      timeline.push_back({{"t_s", std::round(t * 10) / 10},
                          {"open", open},
                          {"established", established},
                          {"connect_errors", errors},
                          {"sent", sent},
                          {"received", received},
                          {"dead_closed", dead_closed},
                          {"live_closed", live_closed}});
      if (options.progress_fd >= 0) {  // an agent forwards it to its coordinator
        const std::string point = timeline.back().dump() + "\n";
        [[maybe_unused]] const auto wrote =
            ::write(options.progress_fd, point.data(), point.size());
      }
      if (!options.quiet)
        std::fprintf(
            stderr,
            "[%6.1fs] open %llu (+%llu/s) connect errors %llu | msgs/s sent %llu recv %llu | "
            "closed by server: dead %llu live %llu\n",
            t, static_cast<unsigned long long>(open),
            static_cast<unsigned long long>(established - last_established),
            static_cast<unsigned long long>(errors),
            static_cast<unsigned long long>(sent - last_sent),
            static_cast<unsigned long long>(received - last_received),
            static_cast<unsigned long long>(dead_closed),
            static_cast<unsigned long long>(live_closed));
      last_established = established;
      last_sent = sent;
      last_received = received;
      next_tick += 1000;
    }
    reap(children, false);
  }
  reap(children, true);

  int status = 0;
  unsigned workers_failed = 0, killed_after_report = 0;
  for (const auto& c : children) {
    workers_failed += failed(c);
    killed_after_report += c.reported && c.killed && !failed(c);
  }
  if (workers_failed > 0) {
    std::fprintf(stderr,
                 "heartwheel-load: error: %u of %u worker processes failed or did not report "
                 "(the result is incomplete)\n",
                 workers_failed, options.processes);
    status = 1;
  }
  if (merged.connections_established == 0 && merged.connections_attempted > 0) {
    // A run that held nothing measured nothing: say so in the status too.
    std::fprintf(stderr,
                 "heartwheel-load: error: none of %llu connection attempts succeeded "
                 "(connect errors: %s)\n",
                 static_cast<unsigned long long>(merged.connections_attempted),
                 nlohmann::json(merged.connect_errors).dump().c_str());
    status = 1;
  }

  nlohmann::json report = merged.report_json(options.processes);
  report["workers_failed"] = workers_failed;
  report["workers_killed_after_report"] = killed_after_report;
  report["elapsed_ms"] = now_ms() - start;
  report["interrupted"] = g_signals > 0;
  report["options"] = {{"mode", mode_name(options.mode)},
                       {"connections", options.connections},
                       {"processes", options.processes},
                       {"source_ips", options.source_ips.size()},
                       {"targets", options.targets.size()},
                       {"connect_rate", options.connect_rate},
                       {"duration_ms", options.duration.count() / 1'000'000},
                       {"message_size", options.message_size},
                       {"message_interval_ms", options.message_interval.count() / 1'000'000},
                       {"heartbeat_ms", options.heartbeat.count() / 1'000'000},
                       {"dead_fraction", options.dead_fraction},
                       {"expect_idle_close_ms", options.expect_idle_close.count() / 1'000'000},
                       {"idle_close_slack_ms", options.idle_close_slack.count() / 1'000'000}};
  if (options.mode == Mode::ws)
    report["options"].update({{"ws_path", options.ws_path},
                              {"ws_protocol", options.ws_centrifugo ? "centrifugo" : "chat"},
                              {"channels", options.channels},
                              {"channel_prefix", options.channel_prefix},
                              {"publish_rate", options.publish_rate},
                              {"publish_targets", options.publish_all_targets ? "all" : "first"},
                              {"publish_start_ms", publish_start_of(options).count() / 1'000'000},
                              {"publish_stop_ms", publish_stop_of(options).count() / 1'000'000},
                              {"reconnect_fraction", options.reconnect_fraction},
                              {"reconnect_at_ms", reconnect_at_of(options).count() / 1'000'000},
                              {"reconnect_delay_ms", options.reconnect_delay.count() / 1'000'000}});
  // An agent's share without the publisher cannot judge delivery alone
  // (its subscribers' offsets need the publisher's): the coordinator does,
  // on the merged result.
  const bool expectations_met =
      merged.expectations_met(options.expect_idle_close.count() > 0,
                              options.expect_delivery && options.ws_publisher, report);
  report["timeline"] = std::move(timeline);
  report["raw"] = merged.to_json();
  if (!options.json_path.empty() && !write_json_report(options.json_path, report)) status = 1;
  print_summary(report);
  if (status == 0 && !expectations_met) {
    std::printf(
        "expectations NOT met (see dead.closed_early/closed_late/not_closed, "
        "live_closed_by_server, ws.missing/duplicates)\n");
    status = 3;
  }
  return status;
}

}  // namespace heartwheel::load
