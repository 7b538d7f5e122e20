#include "agent.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "agent_link.h"
#include "cli_program.h"
#include "options.h"
#include "supervisor.h"

namespace heartwheel::load {

namespace {

using std::chrono::milliseconds;

struct AgentFlags {
  std::string listen, coordinator, source_ips, source_ports, json;
  bool quiet = false;
  Duration wait = std::chrono::minutes(10);
};

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// The coordinator's share plus this host's own flags, parsed and checked as
// the command line of a one-host run would be. Throws with CLI11's or
// validate()'s message.
LoadOptions share_options(const nlohmann::json& configure, const AgentFlags& f,
                          const std::string& result_path) {
  std::vector<std::string> args = configure.at("argv").get<std::vector<std::string>>();
  std::vector<std::string> local;
  if (!f.source_ips.empty()) local.insert(local.end(), {"--source-ips", f.source_ips});
  if (!f.source_ports.empty()) local.insert(local.end(), {"--source-ports", f.source_ports});
  std::vector<std::string> drop;
  if (!f.source_ips.empty()) drop.push_back("--source-ips");
  if (!f.source_ports.empty()) drop.push_back("--source-ports");
  args = without_flags(args, drop, {});
  args.insert(args.end(), local.begin(), local.end());
  args.insert(args.begin(), "heartwheel-load");
  std::vector<const char*> cargv;
  for (const auto& a : args) cargv.push_back(a.c_str());
  LoadOptions o;
  CLI::App app{"share", "heartwheel-load"};
  add_options(app, o);
  try {
    app.parse(static_cast<int>(cargv.size()), cargv.data());
  } catch (const CLI::ParseError& e) {
    throw std::invalid_argument(e.what());
  }
  validate(o);
  o.json_path = result_path;
  o.quiet = f.quiet;
  o.port_offset = std::random_device{}();
  return o;
}

nlohmann::json read_report(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    return nullptr;
  }
}

// Runs the share in a supervisor process of its own and relays its progress.
int run_share(LineLink& link, const LoadOptions& options) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // an agent killed takes its run with it
    ::close(pipe_fds[0]);
    LoadOptions o = options;
    o.progress_fd = pipe_fds[1];
    int status = 1;
    try {
      status = run_supervisor(o);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "heartwheel-load agent: %s\n", e.what());
    }
    std::fflush(nullptr);
    _exit(status);
  }
  ::close(pipe_fds[1]);
  LineLink progress(pipe_fds[0]);
  bool stopping = false;
  auto last_sent = std::chrono::steady_clock::now();
  int status = -1;
  while (status < 0) {
    pollfd fds[2] = {{link.fd(), POLLIN, 0}, {progress.fd(), POLLIN, 0}};
    const int n = ::poll(fds, progress.open() ? 2 : 1, 250);
    if (n > 0 && link.open() && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      const bool alive = link.receive();
      while (auto m = link.next())
        if (m->value("type", "") == "abort") stopping = true;
      if (!alive) stopping = true;  // the coordinator is gone: this run counts for nothing
    }
    if (n > 0 && progress.open() && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      progress.receive();
      while (auto point = progress.next()) {
        link.send({{"type", "progress"}, {"point", *point}});
        last_sent = std::chrono::steady_clock::now();
      }
    }
    if (stopping) {
      ::kill(child, SIGTERM);  // the supervisor stops its workers, which still report
      stopping = false;
    }
    if (std::chrono::steady_clock::now() - last_sent > std::chrono::seconds(1)) {
      link.send({{"type", "alive"}});
      last_sent = std::chrono::steady_clock::now();
    }
    int st = 0;
    if (::waitpid(child, &st, WNOHANG) == child) status = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  }
  return status;
}

int agent_life(const AgentFlags& f) {
  int fd = -1;
  const auto wait = std::chrono::duration_cast<milliseconds>(f.wait);
  if (!f.listen.empty()) {
    const int lfd = listen_on(f.listen);
    std::printf(
        "agent listening on %s\n",
        (f.listen.substr(0, f.listen.rfind(':')) + ":" + std::to_string(bound_port(lfd))).c_str());
    std::fflush(stdout);
    fd = accept_within(lfd, wait);
    ::close(lfd);
    if (fd < 0) throw std::runtime_error("no coordinator came within --agent-wait");
  } else {
    fd = connect_to(f.coordinator, wait);
  }
  LineLink link(fd);
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  link.send({{"type", "hello"}, {"host", host}, {"pid", ::getpid()}});
  auto configure = link.wait_message(wait);
  // ws runs: the coordinator reads this host's clock a few times first.
  while (configure && configure->value("type", "") == "clock") {
    link.send({{"type", "clock"}, {"now_ns", monotonic_ns()}});
    configure = link.wait_message(wait);
  }
  if (!configure || configure->value("type", "") != "configure")
    throw std::runtime_error("the coordinator at " + peer_name(fd) + " sent no share of a run");
  char tmpl[] = "/tmp/heartwheel-load-agent-XXXXXX";
  const int tmp = ::mkstemp(tmpl);
  if (tmp >= 0) ::close(tmp);
  const std::string result_path = f.json.empty() ? tmpl : f.json;
  LoadOptions options;
  try {
    options = share_options(*configure, f, result_path);
  } catch (const std::exception& e) {
    link.send({{"type", "refused"}, {"error", e.what()}});
    std::fprintf(stderr, "heartwheel-load: error: the share refused: %s\n", e.what());
    ::unlink(tmpl);
    return cli::kExitUsage;
  }
  link.send(
      {{"type", "ready"}, {"connections", options.connections}, {"processes", options.processes}});
  auto start = link.wait_message(wait);
  if (!start || start->value("type", "") != "start") {
    ::unlink(tmpl);
    throw std::runtime_error(start ? "the coordinator called the run off before the start "
                                     "(another agent refused its share?)"
                                   : "the coordinator went away before the start");
  }
  const int status = run_share(link, options);
  nlohmann::json report = read_report(result_path);
  link.send({{"type", "result"}, {"status", status}, {"report", report}});
  if (f.json.empty()) ::unlink(tmpl);
  if (!link.open()) {
    std::fprintf(stderr, "heartwheel-load agent: the coordinator went away during the run\n");
    return cli::kExitFailure;
  }
  return status;
}

}  // namespace

bool is_agent_command(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--agent-listen" || a == "--coordinator" || starts_with(a, "--agent-listen=") ||
        starts_with(a, "--coordinator="))
      return true;
  }
  return false;
}

int run_agent(int argc, char** argv) {
  AgentFlags f;
  CLI::App app{
      "heartwheel-load agent: one host's share of a run across hosts (README \"Across hosts\"). "
      "It waits for a coordinator (--agent-listen) or connects to one (--coordinator), gets its "
      "share of the connections, runs it at the coordinator's start and sends back its result. "
      "Exit status: the run's (0, 1, 3); 1 the coordinator unreachable or gone; 2 usage error or "
      "a share this agent refused.",
      "heartwheel-load"};
  auto* listen = app.add_option("--agent-listen", f.listen,
                                "Wait for the coordinator here, HOST:PORT (port 0 picks one, "
                                "printed as 'agent listening on HOST:PORT')");
  auto* coord = app.add_option("--coordinator", f.coordinator,
                               "Connect to the coordinator at HOST:PORT (its --agents-listen), "
                               "retrying until --agent-wait");
  listen->excludes(coord);
  app.add_option("--source-ips", f.source_ips,
                 "This host's source addresses (win over the coordinator's)")
      ->type_name("RANGES");
  app.add_option("--source-ports", f.source_ports, "This host's source ports (LO-HI or kernel)")
      ->type_name("LO-HI");
  app.add_option("--json", f.json, "Also keep this agent's own report here");
  app.add_flag("-q,--quiet", f.quiet, "No progress lines on stderr");
  app.add_option_function<std::string>(
         "--agent-wait",
         [&f](const std::string& t) { f.wait = cli::parse_duration_flag("--agent-wait", t); },
         "How long to wait for the coordinator (default 10m)")
      ->type_name("DURATION");
  if (auto status = cli::parse(app, argc, argv)) return *status;
  if (f.listen.empty() && f.coordinator.empty())
    return cli::usage_error(app, "an agent needs --agent-listen or --coordinator");
  return cli::run(app, [&] { return agent_life(f); });
}

}  // namespace heartwheel::load
