// heartwheel-push-bench: durable delayed pushes across two nodes, with one
// node crashing and restarting in the middle.
//
// Two "nodes" in one process, each a thread with its own loop, wheel, Redis
// link and push::DelayedQueue, share one Redis (--redis). N pushes are
// scheduled (half through each node) with due times spread evenly over T
// seconds, starting --lead after the start. Every delivery is recorded:
// how often each push came (once is the goal) and how late against its due
// time (wall clock). At --crash-at (a fraction of T) node B crashes: its
// loop is abandoned mid-flight (claims in flight are never acknowledged, its
// wheel is lost) and it comes back --down later with an empty wheel, as a
// restarted process would. Pushes node B had claimed but not acknowledged
// are re-queued by a reaper after --lease and delivered again: those are
// the at-least-once cases, counted apart.
// Prints a JSON line and a summary; exit 3 when a push was lost or
// delivered twice outside the crash's claims.
#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/push/delayed_queue.h>
#include <heartwheel/redis/client.h>
#include <uv.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cli_program.h"
#include "redis_link_flags.h"

namespace {

using namespace std::chrono_literals;
using heartwheel::Duration;
namespace push = heartwheel::push;
namespace redis = heartwheel::redis;

struct Config {
  std::string redis_host = "127.0.0.1";
  int redis_port = 6379;
  std::vector<std::string> cluster_seeds;  // --redis-cluster: in place of host:port
  int wait_replicas = 0;                   // --redis-wait-replicas
  redis::ClientOptions link;  // --redis-password-file, --redis-user, --redis-tls*: both nodes'
  std::size_t pushes = 10000;
  Duration over = 20s;
  Duration lead = 3s;
  Duration tick = 10ms;
  Duration lease = 5s;
  Duration down = 2s;
  double crash_at = 0.5;  // 0: no crash
  std::string prefix;
};

// Every delivery by either node.
struct Record {
  std::mutex mu;
  std::unordered_map<std::string, int> count;
  std::vector<double> late_ms;      // delivery - due, per delivery
  std::vector<push::WallTime> due;  // the due time of each delivery
  std::uint64_t early = 0;

  void add(const push::DelayedPush& p) {
    const auto now = push::WallClock::now();
    const double late = std::chrono::duration<double, std::milli>(now - p.due).count();
    std::lock_guard lock(mu);
    ++count[p.id];
    late_ms.push_back(late);
    due.push_back(p.due);
    if (now < p.due) ++early;
  }
};

// One node: a thread with its loop. Schedules its share (due times) at
// most `window` commands outstanding, then serves until told to stop or
// crash.
class Node {
 public:
  Node(const Config& c, Record& record, std::vector<push::WallTime> schedule)
      : config_(c), record_(record), schedule_(std::move(schedule)) {
    thread_ = std::thread([this] { run(); });
  }
  ~Node() { finish(false); }

  // Stops the node: `crash` abandons everything in flight.
  void finish(bool crash) {
    if (!thread_.joinable()) return;
    crash_ = crash;
    stop_ = true;
    thread_.join();
  }
  std::size_t accepted() const { return accepted_.load(); }
  std::size_t refused() const { return refused_.load(); }
  push::DelayedQueueStats stats() const {
    std::lock_guard lock(mu_);
    return stats_;
  }

 private:
  void run() {
    uv_loop_t loop;
    uv_loop_init(&loop);
    {
      heartwheel::LoopWheel wheel(&loop, {.tick = config_.tick});
      redis::ClientOptions ro = config_.link;
      ro.connector.host = config_.redis_host;
      ro.connector.port = config_.redis_port;
      ro.cluster.seeds = config_.cluster_seeds;
      ro.wait_replicas = config_.wait_replicas;
      ro.max_buffered = 100000;
      ro.max_buffered_bytes = std::size_t{256} << 20;
      redis::Client client(wheel, ro);
      push::DelayedQueueOptions qo;
      qo.key_prefix = config_.prefix;
      qo.lease = config_.lease;
      qo.window = 60s;
      push::DelayedQueue queue(wheel, client, qo,
                               [this](const push::DelayedPush& p) { record_.add(p); });
      client.start();
      queue.start();
      uv_timer_t timer;
      uv_timer_init(&loop, &timer);
      timer.data = this;
      step_ = [&] {
        schedule_some(queue);
        {
          std::lock_guard lock(mu_);
          stats_ = queue.stats();
        }
        if (stop_) uv_stop(&loop);
      };
      uv_timer_start(
          &timer, [](uv_timer_t* t) { static_cast<Node*>(t->data)->step_(); }, 1, 5);
      uv_run(&loop, UV_RUN_DEFAULT);
      uv_close(reinterpret_cast<uv_handle_t*>(&timer), nullptr);
      if (!crash_) {
        // A clean stop lets the acknowledgements in flight finish.
        const auto until = uv_now(&loop) + 500;
        while (client.in_flight() > 0 && uv_now(&loop) < until) uv_run(&loop, UV_RUN_ONCE);
      }
      {
        std::lock_guard lock(mu_);
        stats_ = queue.stats();
      }
    }  // queue, client (closed without callbacks), wheel: a crash loses their state
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
  }

  void schedule_some(push::DelayedQueue& queue) {
    constexpr std::size_t kOutstanding = 2000;
    while (next_ < schedule_.size() && outstanding_ < kOutstanding) {
      const std::error_code ec = queue.schedule(
          "bench", "{}", schedule_[next_], [this](std::error_code e, const push::DelayedPush&) {
            --outstanding_;
            if (e)
              ++refused_;
            else
              ++accepted_;
          });
      ++next_;
      if (ec)
        ++refused_;
      else
        ++outstanding_;
    }
  }

  const Config& config_;
  Record& record_;
  std::vector<push::WallTime> schedule_;
  std::size_t next_ = 0;
  std::size_t outstanding_ = 0;
  std::atomic<std::size_t> accepted_{0}, refused_{0};
  std::atomic<bool> stop_{false}, crash_{false};
  mutable std::mutex mu_;
  push::DelayedQueueStats stats_;
  std::function<void()> step_;
  std::thread thread_;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  std::string redis = "127.0.0.1:6379", over = "20s", lead = "3s", tick = "10ms", lease = "5s",
              down = "2s";
  CLI::App app{
      "heartwheel-push-bench: N durable delayed pushes due over T seconds across two nodes "
      "(threads, each with its own loop, wheel and Redis link); node B crashes in the middle "
      "and restarts. Reports deliveries per push and lateness against due time.\n"
      "Exit status: 0 ok, 1 runtime failure, 2 usage error, 3 a push lost or delivered twice "
      "outside the crash's claims.",
      "heartwheel-push-bench"};
  app.add_option("--redis", redis, "HOST:PORT of a Redis to use (its keys get a fresh prefix)")
      ->capture_default_str();
  std::string cluster;
  app.add_option("--redis-cluster", cluster,
                 "HOST:PORT[,HOST:PORT...]: seed nodes of a Redis Cluster, in place of --redis");
  app.add_option("--redis-wait-replicas", c.wait_replicas,
                 "schedules and claims wait for this many replicas (WAIT, 1 s timeout)")
      ->capture_default_str()
      ->check(CLI::Range(0, 16));
  heartwheel::cli::RedisLinkFlags link_flags;
  heartwheel::cli::add_redis_link_flags(app, link_flags);
  app.add_option("--pushes", c.pushes, "how many pushes")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{10000000}));
  app.add_option("--over", over, "due times spread over this long")->capture_default_str();
  app.add_option("--lead", lead, "the first due time is this long after the start")
      ->capture_default_str();
  app.add_option("--tick", tick, "each node's wheel tick")->capture_default_str();
  app.add_option("--lease", lease, "claim lease (a crashed node's claims wait this long)")
      ->capture_default_str();
  app.add_option("--crash-at", c.crash_at, "node B crashes at this fraction of --over (0: never)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--down", down, "how long node B stays down")->capture_default_str();
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;
  try {
    using heartwheel::cli::parse_duration_flag;
    c.over = parse_duration_flag("--over", over);
    c.lead = parse_duration_flag("--lead", lead);
    c.tick = parse_duration_flag("--tick", tick);
    c.lease = parse_duration_flag("--lease", lease);
    c.down = parse_duration_flag("--down", down);
    const auto colon = redis.rfind(':');
    if (colon == std::string::npos) throw std::invalid_argument("--redis must be HOST:PORT");
    c.redis_host = redis.substr(0, colon);
    c.redis_port = std::stoi(redis.substr(colon + 1));
    for (std::size_t from = 0; from < cluster.size();) {
      const std::size_t comma = std::min(cluster.find(',', from), cluster.size());
      c.cluster_seeds.push_back(cluster.substr(from, comma - from));
      from = comma + 1;
    }
    c.link.connector.host = c.redis_host;  // TLS names it
    heartwheel::cli::apply_redis_link_flags(link_flags, c.link, "heartwheel-push-bench");
    if (c.over.count() <= 0 || c.tick < 1ms || c.lease.count() <= 0)
      throw std::invalid_argument("--over, --lease must be positive and --tick at least 1ms");
  } catch (const std::exception& e) {
    return heartwheel::cli::usage_error(app, e.what());
  }

  return heartwheel::cli::run(app, [&] {
    std::mt19937_64 gen(std::random_device{}());
    c.prefix = "heartwheel:bench:" + std::to_string(gen() % 1000000000) + ":";
    const std::string load_before = loadavg();
    const auto start = push::WallClock::now();
    std::vector<push::WallTime> a_due, b_due;
    for (std::size_t i = 0; i < c.pushes; ++i) {
      const auto due = start + c.lead +
                       std::chrono::duration_cast<Duration>(
                           c.over * (static_cast<double>(i) / static_cast<double>(c.pushes)));
      (i % 2 ? b_due : a_due)
          .push_back(push::WallClock::time_point(
              std::chrono::duration_cast<push::WallClock::duration>(due.time_since_epoch())));
    }
    Record record;
    auto a = std::make_unique<Node>(c, record, std::move(a_due));
    auto b = std::make_unique<Node>(c, record, std::move(b_due));
    push::DelayedQueueStats b_before_crash{};
    std::size_t b_accepted_before = 0;
    bool crashed = false;
    push::WallTime restart_time{};
    const auto crash_time =
        start + c.lead + std::chrono::duration_cast<Duration>(c.over * c.crash_at);
    const auto end = start + c.lead + c.over;
    while (push::WallClock::now() < end + c.lease + 3s) {
      std::this_thread::sleep_for(50ms);
      if (c.crash_at > 0 && !crashed && push::WallClock::now() >= crash_time) {
        crashed = true;
        b_accepted_before = b->accepted();
        b->finish(/*crash=*/true);
        b_before_crash = b->stats();
        std::fprintf(stderr, "heartwheel-push-bench: node B crashed at %.1f s (claimed %llu)\n",
                     std::chrono::duration<double>(push::WallClock::now() - start).count(),
                     static_cast<unsigned long long>(b_before_crash.claimed));
        std::this_thread::sleep_for(c.down);
        restart_time = push::WallClock::now();
        b = std::make_unique<Node>(c, record, std::vector<push::WallTime>{});
      }
      std::lock_guard lock(record.mu);
      if (record.count.size() >= c.pushes && push::WallClock::now() > end) break;
    }
    std::this_thread::sleep_for(1s);  // late duplicates would show now
    const auto sa = a->stats();
    a->finish(false);
    const auto sb = b->stats();
    b->finish(false);
    const std::size_t accepted = a->accepted() + b_accepted_before + b->accepted();

    std::lock_guard lock(record.mu);
    std::size_t twice = 0;
    for (const auto& [id, n] : record.count) twice += n > 1 ? 1 : 0;
    const std::size_t lost = accepted - std::min(accepted, record.count.size());
    // On-time lateness: the deliveries of pushes delivered once.
    nlohmann::json j;
    j["pushes"] = c.pushes;
    j["accepted"] = accepted;
    j["delivered_unique"] = record.count.size();
    j["deliveries"] = record.late_ms.size();
    j["lost"] = lost;
    j["delivered_twice"] = twice;
    j["early"] = record.early;
    j["late_ms"] = {{"p50", percentile(record.late_ms, 0.50)},
                    {"p99", percentile(record.late_ms, 0.99)},
                    {"p999", percentile(record.late_ms, 0.999)},
                    {"max", percentile(record.late_ms, 1.0)}};
    // Lateness apart from the crash: pushes due while node B was down (and
    // during the second after it came back) may have been held by B alone;
    // they come when B is back, or when node A takes them over.
    std::vector<double> steady, outage;
    for (std::size_t i = 0; i < record.late_ms.size(); ++i) {
      const bool in_outage =
          crashed && record.due[i] >= crash_time && record.due[i] < restart_time + 1s;
      (in_outage ? outage : steady).push_back(record.late_ms[i]);
    }
    j["late_ms_outside_outage"] = {{"count", steady.size()},
                                   {"p50", percentile(steady, 0.50)},
                                   {"p99", percentile(steady, 0.99)},
                                   {"max", percentile(steady, 1.0)}};
    j["late_ms_due_during_outage"] = {{"count", outage.size()},
                                      {"p50", percentile(outage, 0.50)},
                                      {"p99", percentile(outage, 0.99)},
                                      {"max", percentile(outage, 1.0)}};
    // Where the worst ones were due (seconds after the start), to tell a
    // start-up backlog from a stall.
    std::vector<std::size_t> order(record.late_ms.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    const std::size_t worst = std::min<std::size_t>(5, order.size());
    std::partial_sort(
        order.begin(), order.begin() + static_cast<std::ptrdiff_t>(worst), order.end(),
        [&](std::size_t x, std::size_t y) { return record.late_ms[x] > record.late_ms[y]; });
    j["worst"] = nlohmann::json::array();
    for (std::size_t k = 0; k < worst; ++k)
      j["worst"].push_back(
          {{"due_s", std::chrono::duration<double>(record.due[order[k]] - start).count()},
           {"late_ms", record.late_ms[order[k]]}});
    j["over_s"] = std::chrono::duration<double>(c.over).count();
    j["tick_ms"] = std::chrono::duration<double, std::milli>(c.tick).count();
    j["lease_s"] = std::chrono::duration<double>(c.lease).count();
    j["cluster"] = !c.cluster_seeds.empty();
    j["wait_replicas"] = c.wait_replicas;
    j["crash"] = {{"at_fraction", c.crash_at},
                  {"b_claimed_before", b_before_crash.claimed},
                  {"b_acked_before", b_before_crash.acked}};
    j["requeued"] = sa.requeued + sb.requeued;
    j["claimed"] = sa.claimed + b_before_crash.claimed + sb.claimed;
    j["claimed_elsewhere"] =
        sa.claimed_elsewhere + b_before_crash.claimed_elsewhere + sb.claimed_elsewhere;
    j["redis_errors"] = sa.redis_errors + b_before_crash.redis_errors + sb.redis_errors;
    j["loadavg_before"] = load_before;
    j["loadavg_after"] = loadavg();
    std::printf("%s\n", j.dump().c_str());
    std::fprintf(stderr,
                 "heartwheel-push-bench: %zu pushes over %.0f s, %zu delivered (%zu twice, %zu "
                 "lost); late p50 %.1f ms, p99 %.1f ms, max %.1f ms; %llu re-queued after the "
                 "crash\n",
                 c.pushes, j["over_s"].get<double>(), record.count.size(), twice, lost,
                 j["late_ms"]["p50"].get<double>(), j["late_ms"]["p99"].get<double>(),
                 j["late_ms"]["max"].get<double>(),
                 static_cast<unsigned long long>(sa.requeued + sb.requeued));
    // Twice is allowed only for what the crashed node claimed and never acknowledged.
    const std::uint64_t allowed_twice = b_before_crash.claimed > b_before_crash.acked
                                            ? b_before_crash.claimed - b_before_crash.acked
                                            : 0;
    return lost > 0 || twice > allowed_twice || record.early > 0 ? 3 : 0;
  });
}
