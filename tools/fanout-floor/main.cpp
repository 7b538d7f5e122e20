// heartwheel-fanout-floor: the kernel's price of a WebSocket fan-out.
//
// One frame written to N loopback TCP sockets, one send per socket: what any
// server pays per delivered message before any code of its own runs. Modes:
// `write` (one write() per socket: the floor), `uring` (the same sends
// submitted to io_uring, --batch per io_uring_enter) and `uring_fixed`
// (the same with the sockets registered with the ring). N receivers in
// other processes (receivers.h) drain every socket, so what is measured is
// the sending thread: its user and system CPU over the send loops only
// (measure.h), per delivered message. Every byte is checked to arrive.
//
// Output: one JSON line per mode, then one summary line (README.md).
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli_program.h"
#include "loopback.h"
#include "measure.h"
#include "mode_thread.h"
#include "receivers.h"
#include "senders.h"

namespace ff = fanout_floor;
using nlohmann::json;

namespace {

struct Flags {
  std::size_t subscribers = 9000;
  std::size_t messages = 10;
  std::size_t frame_bytes = 100;
  std::string interval = "100ms";
  std::vector<std::string> modes;
  unsigned batch = 256;
  std::size_t rounds = 3;
  std::size_t per_process = 10000;
};

// One mode: its thread, its sender, what it sent and what it cost.
struct Mode {
  std::string name;
  ff::ModeThread thread;
  std::unique_ptr<ff::UringSender> ring;  // uring modes
  ff::SendCounts counts;
  std::int64_t send_ns = 0;       // thread CPU inside the send loops (exact)
  std::vector<double> round_us;   // the same per message, each round
  ff::CpuSample start;            // the thread's CPU once set up and warmed
  ff::CpuSample life;             // the thread's CPU from `start` to its end

  void send(std::string_view frame, const std::vector<int>& fds, ff::SendCounts& c) {
    if (ring)
      ring->send(frame, c);
    else
      ff::send_with_write(fds, frame, c);
  }
};

json loadavg() {
  std::ifstream f("/proc/loadavg");
  double a = 0, b = 0, c = 0;
  f >> a >> b >> c;
  return json::array({a, b, c});
}

double per(std::int64_t ns, std::uint64_t messages) {
  return messages ? static_cast<double>(ns) / 1000.0 / static_cast<double>(messages) : 0.0;
}

double round3(double v) { return static_cast<double>(std::llround(v * 1000)) / 1000; }

int run(const Flags& f) {
  const auto interval = heartwheel::cli::parse_duration_flag("--interval", f.interval);
  const std::size_t limit = ff::raise_open_files_limit();
  if (f.subscribers + 32 > limit)
    throw std::runtime_error("--subscribers " + std::to_string(f.subscribers) +
                             " needs more open files than the limit " + std::to_string(limit));
  signal(SIGPIPE, SIG_IGN);
  sockaddr_in address{};
  const int listener = ff::listen_loopback(address);
  ff::ReceiverFleet fleet(address, f.subscribers, f.per_process);
  std::vector<int> fds = ff::accept_all(listener, f.subscribers, fleet, std::chrono::seconds(120));
  close(listener);

  const std::string frame(f.frame_bytes, 'x');
  // Each mode on its own thread (mode_thread.h), its ring made there too
  // (IORING_SETUP_SINGLE_ISSUER: the creating thread submits).
  std::map<std::string, Mode> modes;
  for (const std::string& name : f.modes) modes[name].name = name;

  std::uint64_t sent_frames = 0;  // per socket, over every mode: the bytes to expect
  auto wait_delivered = [&] {
    const std::uint64_t want = sent_frames * f.subscribers * f.frame_bytes;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (fleet.bytes_read() < want) {
      if (std::chrono::steady_clock::now() >= until)
        throw std::runtime_error("the receivers read " + std::to_string(fleet.bytes_read()) +
                                 " of " + std::to_string(want) + " bytes in 60 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (fleet.bytes_read() != want) throw std::runtime_error("the receivers read too many bytes");
  };
  // Set up, then one unmeasured publication per mode: the connections' first
  // data and the rings' first use are not the steady state.
  for (auto& [name, m] : modes) {
    m.thread.run([&, &m = m] {
      if (name != "write") m.ring = std::make_unique<ff::UringSender>(fds, f.batch, name == "uring_fixed");
      ff::SendCounts ignored;
      m.send(frame, fds, ignored);
      m.start = ff::CpuSample::now();
    });
    ++sent_frames;
  }
  wait_delivered();

  const ff::CpuSample process_start = ff::CpuSample::now();
  for (std::size_t round = 0; round < f.rounds; ++round) {
    // Rotate the order each round, so no mode always runs first.
    std::vector<std::string> order = f.modes;
    std::rotate(order.begin(), order.begin() + static_cast<long>(round % order.size()), order.end());
    for (const std::string& name : order) {
      Mode& m = modes[name];
      std::int64_t round_ns = 0;
      m.thread.run([&] {
        for (std::size_t k = 0; k < f.messages; ++k) {
          if (k > 0) std::this_thread::sleep_for(interval);
          const std::int64_t before = ff::thread_cpu_ns();
          m.send(frame, fds, m.counts);
          round_ns += ff::thread_cpu_ns() - before;
        }
      });
      sent_frames += f.messages;
      m.send_ns += round_ns;
      m.round_us.push_back(round3(per(round_ns, f.messages * f.subscribers)));
      wait_delivered();
      std::this_thread::sleep_for(interval);
    }
  }
  const ff::CpuSample process_used = ff::CpuSample::now() - process_start;

  std::int64_t threads_ns = 0;
  for (auto& [name, m] : modes) {
    m.life = m.thread.finish() - m.start;
    threads_ns += m.life.thread_ns;
  }
  const double write_us =
      modes.count("write") ? per(modes["write"].send_ns, modes["write"].counts.sends) : 0.0;
  for (auto& [name, m] : modes) {
    const std::uint64_t delivered = m.counts.sends;
    json line = {{"bench", "fanout-floor"},
                 {"mode", name},
                 {"subscribers", f.subscribers},
                 {"messages", f.messages * f.rounds},
                 {"delivered", delivered},
                 {"frame_bytes", f.frame_bytes},
                 {"cpu_us_per_message", round3(per(m.send_ns, delivered))},
                 {"user_us_per_message", round3(per(m.life.user_ns, delivered))},
                 {"system_us_per_message", round3(per(m.life.system_ns, delivered))},
                 {"rounds_cpu_us_per_message", m.round_us},
                 {"syscalls_per_message",
                  round3(static_cast<double>(m.counts.syscalls) / static_cast<double>(delivered))},
                 {"short_sends", m.counts.short_sends}};
    if (m.ring) {
      line["batch"] = f.batch;
      line["ring_flags"] = m.ring->setup_flags();
    }
    if (write_us > 0) line["ratio_to_write"] = round3(per(m.send_ns, delivered) / write_us);
    std::printf("%s\n", line.dump().c_str());
  }
  modes.clear();  // rings first: a registered file keeps its socket open
  for (const int fd : fds) close(fd);  // the receivers see EOF and exit
  const bool exited = fleet.wait_exit(30'000);
  json summary = {{"bench", "fanout-floor"},
                  {"summary", true},
                  {"subscribers", f.subscribers},
                  {"receiver_processes", (f.subscribers + f.per_process - 1) / f.per_process},
                  {"bytes_delivered", fleet.bytes_read()},
                  {"all_delivered", true},
                  {"receivers_exited", exited},
                  {"interval_ms", std::chrono::duration<double, std::milli>(interval).count()},
                  {"uring_built", ff::uring_built()},
                  {"process_cpu_s", static_cast<double>(process_used.process_ns) / 1e9},
                  {"mode_threads_cpu_s", static_cast<double>(threads_ns) / 1e9},
                  {"loadavg", loadavg()}};
  std::printf("%s\n", summary.dump().c_str());
  std::fflush(stdout);
  return exited ? heartwheel::cli::kExitOk : heartwheel::cli::kExitFailure;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"heartwheel-fanout-floor: the kernel's CPU per delivered message when one frame is "
               "sent to N loopback sockets, with one write() each and with io_uring batches.\n"
               "Prints one JSON line per mode and a summary line.\n"
               "Exit status: 0 ok, 1 runtime failure (a receiver, a lost byte), 2 usage error.",
               "heartwheel-fanout-floor"};
  app.add_option("--subscribers", f.subscribers, "sockets the frame goes to (the sender holds them all)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{19000}));
  app.add_option("--messages", f.messages, "publications per mode per round")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{100000}));
  app.add_option("--frame-bytes", f.frame_bytes, "bytes per frame (heartwheel-chat's publication "
                 "frame under heartwheel-load is about 100)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{65536}));
  app.add_option("--interval", f.interval, "pause between publications (receivers drain)")
      ->capture_default_str();
  app.add_option("--modes", f.modes, "write, uring, uring_fixed (comma-separated; default write "
                 "and, with liburing, uring and uring_fixed)")
      ->delimiter(',')
      ->check(CLI::IsMember({"write", "uring", "uring_fixed"}));
  app.add_option("--batch", f.batch, "sends per io_uring_enter (the ring's size)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 32768u));
  app.add_option("--rounds", f.rounds, "rounds; each runs every mode, the order rotated")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000}));
  app.add_option("--per-process", f.per_process, "receiver sockets per receiver process")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{19000}));
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;
  if (f.modes.empty()) {
    f.modes = {"write"};
    if (ff::uring_built()) f.modes.insert(f.modes.end(), {"uring", "uring_fixed"});
  }
  std::sort(f.modes.begin(), f.modes.end());
  f.modes.erase(std::unique(f.modes.begin(), f.modes.end()), f.modes.end());
  if (!ff::uring_built() && f.modes != std::vector<std::string>{"write"})
    return heartwheel::cli::usage_error(app, "--modes uring needs a build with liburing-dev");
  try {
    heartwheel::cli::parse_duration_flag("--interval", f.interval);
  } catch (const std::exception& e) {
    return heartwheel::cli::usage_error(app, e.what());
  }
  return heartwheel::cli::run(app, [&] { return run(f); });
}
