// heartwheel-client-bench calls: RPC calls through a net::Pool (an
// rpc::NetHandler on each connection, the pool's heartbeat and ejection) at
// a steady rate, every call timed on the ns clock; optionally one server
// process frozen (SIGSTOP) at --freeze-at and thawed (SIGCONT) at --thaw-at.
// Prints: the calls' outcomes, per server its share, and with a freeze what
// the failover cost: the calls lost (failed or timed out), those beyond the
// ones in flight to the frozen server at the freeze, when it was ejected,
// and the ok calls' p50/p99 before the freeze and during it.
#include <heartwheel/common/error.h>
#include <heartwheel/net/pool.h>
#include <heartwheel/rpc/net_handler.h>
#include <heartwheel/timer/loop_wheel.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench.h"
#include "cli_program.h"

namespace clientbench {

namespace net = heartwheel::net;
namespace rpc = heartwheel::rpc;
using heartwheel::cli::parse_duration_flag;

namespace {

struct Flags {
  std::vector<std::string> servers;
  double rate = 1000;
  std::string duration = "6s", call_timeout = "200ms", heartbeat = "200ms";
  std::string balance = "p2c", eject_time = "1s";
  unsigned eject_after = 5;
  std::size_t connections = 1;
  int freeze_pid = 0;
  std::string freeze_server, freeze_at = "2s", thaw_at = "4s";
};

struct Sample {
  TimePoint sent;
  std::int64_t rtt_ns;
};

class Run {
 public:
  Run(uv_loop_t& loop, const Flags& f, net::PoolOptions o) : loop_(loop), flags_(f) {
    wheel_.emplace(&loop);
    rpc::NetHandlerOptions h;
    h.heartbeat.interval = Duration{0};  // the pool's
    h.clock = &hr_now;
    h.max_calls_in_flight = 100000;
    h.on_call_done = [this](const rpc::CallCompletion& d) { done(d); };
    handler_.emplace(std::move(h));
    o.ping = [this](net::Connection& c) { return handler_->ping(c); };
    o.on_state_change = [this](const net::EndpointInfo& i, net::EndpointState) {
      if (i.address == flags_.freeze_server && i.state == net::EndpointState::ejected &&
          frozen_at_ && !ejected_at_)
        ejected_at_ = hr_now();
    };
    pool_.emplace(*wheel_, *handler_, std::move(o));
    pool_->set_endpoints(f.servers);
  }

  nlohmann::json go() {
    call_timeout_ = parse_duration_flag("--call-timeout", flags_.call_timeout);
    const Duration duration = parse_duration_flag("--duration", flags_.duration);
    const Duration freeze_at = parse_duration_flag("--freeze-at", flags_.freeze_at);
    const Duration thaw_at = parse_duration_flag("--thaw-at", flags_.thaw_at);
    pool_->start();
    // Calls start once every server has a connection open.
    const TimePoint warm_by = hr_now() + std::chrono::seconds(10);
    while (pool_->open_connections() < flags_.servers.size() * flags_.connections &&
           hr_now() < warm_by)
      uv_run(&loop_, UV_RUN_ONCE);
    start_ = hr_now();
    const bool freezing = flags_.freeze_pid > 0;
    uv_timer_t pacer;
    uv_timer_init(&loop_, &pacer);
    pacer.data = this;
    uv_timer_start(
        &pacer, [](uv_timer_t* t) { static_cast<Run*>(t->data)->pace(); }, 1, 1);
    while (hr_now() < start_ + duration) {
      const TimePoint now = hr_now();
      if (freezing && !frozen_at_ && now >= start_ + freeze_at) {
        for (const auto& e : pool_->endpoints())
          if (e.address == flags_.freeze_server) in_flight_at_freeze_ = e.stats.in_flight;
        kill(flags_.freeze_pid, SIGSTOP);
        frozen_at_ = hr_now();
      }
      if (frozen_at_ && !thawed_at_ && now >= start_ + thaw_at) {
        kill(flags_.freeze_pid, SIGCONT);
        thawed_at_ = hr_now();
      }
      uv_run(&loop_, UV_RUN_ONCE);
    }
    uv_timer_stop(&pacer);
    // Let the last calls end (each within its timeout).
    const TimePoint drain_by = hr_now() + call_timeout_ + std::chrono::milliseconds(200);
    while (handler_->calls_in_flight() > 0 && hr_now() < drain_by) uv_run(&loop_, UV_RUN_ONCE);
    nlohmann::json out = summary();
    pool_->stop();
    while (pool_->open_connections() > 0 || handler_->connection_count() > 0)
      uv_run(&loop_, UV_RUN_ONCE);
    uv_close(reinterpret_cast<uv_handle_t*>(&pacer), nullptr);
    pool_.reset();
    handler_.reset();
    wheel_.reset();
    uv_run(&loop_, UV_RUN_DEFAULT);
    return out;
  }

 private:
  void pace() {
    const double secs = std::chrono::duration<double>(hr_now() - start_).count();
    const auto due = static_cast<std::uint64_t>(secs * flags_.rate);
    while (issued_ < due) {
      ++issued_;
      std::error_code ec;
      net::PooledConnection* lease = pool_->acquire(ec);
      if (!lease) {
        ++unsent_;
        continue;
      }
      ++sent_to_[lease->address()];
      handler_->call(*lease->connection(), "0123456789abcdef", call_timeout_, lease, ec);
      if (ec) {
        pool_->release(*lease, net::CallOutcome::cancelled);
        ++unsent_;
      }
    }
  }

  void done(const rpc::CallCompletion& d) {
    auto* lease = static_cast<net::PooledConnection*>(d.context);
    net::CallOutcome outcome = net::CallOutcome::failed;
    if (d.status == rpc::CallStatus::ok) {
      outcome = net::CallOutcome::ok;
      ++ok_;
      samples_.push_back({hr_now() - d.elapsed, d.elapsed.count()});
    } else if (d.status == rpc::CallStatus::timed_out) {
      outcome = net::CallOutcome::timed_out;
      ++timed_out_;
    } else {
      ++failed_;
    }
    pool_->release(*lease, outcome);
  }

  nlohmann::json summary() {
    nlohmann::json servers = nlohmann::json::array();
    std::uint64_t lost_on_frozen = 0;
    for (const auto& e : pool_->endpoints()) {
      servers.push_back({{"address", e.address},
                         {"calls", sent_to_[e.address]},
                         {"share", static_cast<double>(sent_to_[e.address]) /
                                       static_cast<double>(std::max<std::uint64_t>(1, issued_))},
                         {"calls_ok", e.stats.calls_ok},
                         {"calls_failed", e.stats.calls_failed},
                         {"calls_timed_out", e.stats.calls_timed_out},
                         {"ejections", e.stats.ejections},
                         {"state", net::to_string(e.state)}});
      if (e.address == flags_.freeze_server)
        lost_on_frozen = e.stats.calls_failed + e.stats.calls_timed_out;
    }
    // ok calls' round trips (us): all, before the freeze (after a 0.5 s
    // warm-up), and sent while frozen.
    std::vector<std::int64_t> all, before, during;
    for (const Sample& s : samples_) {
      all.push_back(s.rtt_ns / 1000);
      if (!frozen_at_) continue;
      if (s.sent >= start_ + std::chrono::milliseconds(500) && s.sent < *frozen_at_)
        before.push_back(s.rtt_ns / 1000);
      if (s.sent >= *frozen_at_ && thawed_at_ && s.sent < *thawed_at_)
        during.push_back(s.rtt_ns / 1000);
    }
    nlohmann::json out = {{"balance", flags_.balance},
                          {"eject_after", flags_.eject_after},
                          {"rate", flags_.rate},
                          {"calls", issued_},
                          {"ok", ok_},
                          {"failed", failed_},
                          {"timed_out", timed_out_},
                          {"unsent", unsent_},
                          {"p50_us", quantile(all, 0.5)},
                          {"p99_us", quantile(all, 0.99)},
                          {"servers", servers}};
    if (frozen_at_) {
      const auto ms = [this](std::optional<TimePoint> t) -> nlohmann::json {
        if (!t) return nullptr;
        return std::chrono::duration<double, std::milli>(*t - *frozen_at_).count();
      };
      out["freeze"] = {
          {"server", flags_.freeze_server},
          {"in_flight_at_freeze", in_flight_at_freeze_},
          {"lost", lost_on_frozen},
          {"lost_beyond_in_flight",
           lost_on_frozen > in_flight_at_freeze_ ? lost_on_frozen - in_flight_at_freeze_ : 0},
          {"eject_ms", ms(ejected_at_)},
          {"p50_before_us", quantile(before, 0.5)},
          {"p99_before_us", quantile(before, 0.99)},
          {"p50_during_us", quantile(during, 0.5)},
          {"p99_during_us", quantile(during, 0.99)}};
    }
    return out;
  }

  uv_loop_t& loop_;
  const Flags& flags_;
  std::optional<heartwheel::LoopWheel> wheel_;
  std::optional<rpc::NetHandler> handler_;
  std::optional<net::Pool> pool_;
  Duration call_timeout_{};
  TimePoint start_{};
  std::optional<TimePoint> frozen_at_, thawed_at_, ejected_at_;
  std::uint64_t in_flight_at_freeze_ = 0;
  std::uint64_t issued_ = 0, unsent_ = 0, ok_ = 0, failed_ = 0, timed_out_ = 0;
  std::map<std::string, std::uint64_t> sent_to_;
  std::vector<Sample> samples_;
};

}  // namespace

int run_calls(int argc, char** argv) {
  Flags f;
  CLI::App app{
      "heartwheel-client-bench calls: RPC calls through a net::Pool at a rate; optionally a "
      "server frozen and thawed; prints one JSON object. Exit status: 0 ok, 1 runtime "
      "failure, 2 usage error.",
      "heartwheel-client-bench"};
  app.add_option("--server", f.servers, "HOST:PORT of an RPC server (repeat)")->required();
  app.add_option("--rate", f.rate, "calls per second")->capture_default_str();
  app.add_option("--duration", f.duration)->capture_default_str();
  app.add_option("--call-timeout", f.call_timeout)->capture_default_str();
  app.add_option("--heartbeat", f.heartbeat, "the pool's heartbeat interval (timeout 3x)")
      ->capture_default_str();
  app.add_option("--balance", f.balance, "round-robin or p2c")->capture_default_str();
  app.add_option("--eject-after", f.eject_after, "consecutive failures that eject; 0 = never")
      ->capture_default_str();
  app.add_option("--eject-time", f.eject_time)->capture_default_str();
  app.add_option("--connections-per-server", f.connections)->capture_default_str();
  app.add_option("--freeze-pid", f.freeze_pid, "SIGSTOP this process at --freeze-at")
      ->capture_default_str();
  app.add_option("--freeze-server", f.freeze_server, "its HOST:PORT, as in --server");
  app.add_option("--freeze-at", f.freeze_at)->capture_default_str();
  app.add_option("--thaw-at", f.thaw_at, "SIGCONT it then")->capture_default_str();
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;

  net::PoolOptions o;
  try {
    if (!net::parse_balance(f.balance, o.balance))
      throw std::invalid_argument("--balance is round-robin or p2c");
    o.connections_per_endpoint = f.connections;
    o.heartbeat.interval = parse_duration_flag("--heartbeat", f.heartbeat);
    o.outlier.consecutive_failures = f.eject_after;
    o.outlier.eject_on_heartbeat_timeout = f.eject_after > 0;
    o.outlier.base_ejection_time = parse_duration_flag("--eject-time", f.eject_time);
    o.outlier.max_ejection_time =
        std::max(o.outlier.max_ejection_time, o.outlier.base_ejection_time);
    o.outlier.probe_timeout = std::chrono::milliseconds(200);
    o.connector.backoff_initial = std::chrono::milliseconds(20);
    o.connector.backoff_max = std::chrono::milliseconds(200);
    if (f.freeze_pid > 0 && f.freeze_server.empty())
      throw std::invalid_argument("--freeze-pid needs --freeze-server");
  } catch (const std::exception& e) {
    return heartwheel::cli::usage_error(app, e.what());
  }
  uv_loop_t loop;
  heartwheel::check_uv(uv_loop_init(&loop), "uv_loop_init");
  nlohmann::json out;
  {
    Run run(loop, f, std::move(o));
    out = run.go();
  }
  uv_loop_close(&loop);
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace clientbench
