// net::Pool on loopback against heartwheel-rpc-server processes: a frozen
// server (SIGSTOP) among three is ejected within its heartbeat timeout, its
// calls go to the others, and it is taken back after SIGCONT; p2c gives a
// slow server (40 ms replies) at most half the share round robin gives it
// (heartwheel-rpc-client --balance, its "servers" summary); the list
// changes at run time (an added server warms up and takes calls, a removed
// one finishes its calls and is gone).
#include <heartwheel/net/pool.h>
#include <heartwheel/rpc/net_handler.h>
#include <heartwheel/timer/loop_wheel.h>
#include <uv.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "loop_runner.h"
#include "process_support.h"

#ifndef HEARTWHEEL_RPC_SERVER_BIN
#error "HEARTWHEEL_RPC_SERVER_BIN must name the built heartwheel-rpc-server"
#endif
#ifndef HEARTWHEEL_RPC_CLIENT_BIN
#error "HEARTWHEEL_RPC_CLIENT_BIN must name the built heartwheel-rpc-client"
#endif

using namespace hwproc;
using namespace std::chrono_literals;
using nlohmann::json;
namespace net = heartwheel::net;
namespace rpc = heartwheel::rpc;

namespace {

struct Server {
  explicit Server(std::vector<std::string> extra = {})
      : child([&] {
          std::vector<std::string> a = {HEARTWHEEL_RPC_SERVER_BIN,
                                        "--listen",
                                        "127.0.0.1:0",
                                        "--heartbeat",
                                        "0",
                                        "--tick",
                                        "1ms"};
          a.insert(a.end(), extra.begin(), extra.end());
          return a;
        }()),
        port(child.wait_listening()),
        address("127.0.0.1:" + std::to_string(port)) {
    REQUIRE(port > 0);
  }
  Child child;
  int port;
  std::string address;
};

// An RPC client on a loop of its own: rpc::NetHandler connections in a
// net::Pool, `per_tick` calls every millisecond while pacing is on.
class Caller {
 public:
  struct Change {
    std::string address;
    net::EndpointState from, to;
    SteadyTime at;
  };

  Caller(net::PoolOptions o, const std::vector<std::string>& servers) {
    REQUIRE(uv_loop_init(&loop_) == 0);
    wheel_.emplace(&loop_);
    rpc::NetHandlerOptions h;
    h.heartbeat.interval = heartwheel::Duration{0};  // the pool's
    h.on_call_done = [this](const rpc::CallCompletion& d) { done(d); };
    handler_.emplace(std::move(h));
    o.ping = [this](net::Connection& c) { return handler_->ping(c); };
    o.on_state_change = [this](const net::EndpointInfo& i, net::EndpointState from) {
      changes.push_back({i.address, from, i.state, now()});
    };
    pool_.emplace(*wheel_, *handler_, std::move(o));
    pool_->set_endpoints(servers);
    pool_->start();
    uv_timer_init(&loop_, &pacer_);
    pacer_.data = this;
    uv_timer_start(
        &pacer_, [](uv_timer_t* t) { static_cast<Caller*>(t->data)->pace(); }, 1, 1);
  }

  ~Caller() {
    uv_timer_stop(&pacer_);
    pool_->stop();
    run_until([&] { return pool_->open_connections() == 0 && handler_->connection_count() == 0; },
              Ms(3000));
    pool_.reset();
    handler_.reset();
    wheel_.reset();
    uv_close(reinterpret_cast<uv_handle_t*>(&pacer_), nullptr);
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
  }

  template <class Pred>
  bool run_until(Pred done, Ms limit) {
    return hwtest::run_loop_until(loop_, done, limit);
  }
  void run_for(Ms d) {
    run_until([] { return false; }, d);
  }

  net::Pool& pool() { return *pool_; }
  net::EndpointInfo info(const std::string& address) const {
    for (const auto& e : pool_->endpoints())
      if (e.address == address) return e;
    FAIL("no endpoint " << address);
    return {};
  }

  int per_tick = 1;
  bool pacing = true;
  heartwheel::Duration call_timeout = 150ms;
  std::map<std::string, long> sent;  // calls acquired, by endpoint
  long unavailable = 0;              // acquire() found nobody
  std::vector<Change> changes;

 private:
  void pace() {
    if (!pacing) return;
    for (int i = 0; i < per_tick; ++i) {
      std::error_code ec;
      net::PooledConnection* lease = pool_->acquire(ec);
      if (!lease) {
        ++unavailable;
        continue;
      }
      ++sent[lease->address()];
      handler_->call(*lease->connection(), "payload", call_timeout, lease, ec);
      if (ec) pool_->release(*lease, net::CallOutcome::cancelled);
    }
  }
  void done(const rpc::CallCompletion& d) {
    const auto outcome = d.status == rpc::CallStatus::ok          ? net::CallOutcome::ok
                         : d.status == rpc::CallStatus::timed_out ? net::CallOutcome::timed_out
                                                                  : net::CallOutcome::failed;
    pool_->release(*static_cast<net::PooledConnection*>(d.context), outcome);
  }

  uv_loop_t loop_{};
  uv_timer_t pacer_{};
  std::optional<heartwheel::LoopWheel> wheel_;
  std::optional<rpc::NetHandler> handler_;
  std::optional<net::Pool> pool_;
};

bool all_healthy(Caller& c, std::size_t n) {
  const auto list = c.pool().endpoints();
  if (list.size() != n) return false;
  for (const auto& e : list)
    if (e.state != net::EndpointState::healthy) return false;
  return true;
}

json run_rpc_client(const std::vector<std::string>& args, const std::string& json_path) {
  std::vector<std::string> argv = {HEARTWHEEL_RPC_CLIENT_BIN, "--json", json_path};
  argv.insert(argv.end(), args.begin(), args.end());
  Child client(argv);
  const auto status = client.wait_exit(Ms(20000));
  REQUIRE(status);
  REQUIRE(*status == 0);
  return json::parse(read_file(json_path));
}

}  // namespace

TEST_CASE(
    "A frozen server among three is ejected within its heartbeat timeout, calls go to the "
    "others, and it is taken back after it thaws",
    "[pool][integration]") {
  Watchdog watchdog(Ms(60000));
  Server a, b, frozen;
  net::PoolOptions o;
  o.heartbeat.interval = 250ms;  // timeout 750 ms
  // Round robin keeps calling the frozen one until it is ejected (p2c would
  // stop at once, its calls piling up: the heartbeat then finds it, as in
  // the next case).
  o.balance = net::Balance::round_robin;
  o.outlier.consecutive_failures = 5;
  o.outlier.base_ejection_time = 300ms;
  o.outlier.probe_timeout = 200ms;
  o.connector.backoff_initial = 20ms;
  o.connector.backoff_max = 200ms;
  Caller c(o, {a.address, b.address, frozen.address});
  REQUIRE(c.run_until([&] { return all_healthy(c, 3); }, Ms(5000)));
  c.run_for(Ms(300));
  const long before = c.sent[frozen.address];
  CHECK(before > 20);  // it had its share

  frozen.child.signal(SIGSTOP);
  const SteadyTime frozen_at = now();
  REQUIRE(c.run_until([&] { return c.info(frozen.address).state != net::EndpointState::healthy; },
                      Ms(5000)));
  const auto eject_ms = std::chrono::duration_cast<Ms>(now() - frozen_at).count();
  INFO("ejected " << eject_ms << " ms after the freeze");
  CHECK(eject_ms <= 750);  // the heartbeat's timeout
  CHECK(c.info(frozen.address).stats.ejections >= 1);

  // While it is frozen no call goes to it; the others take them all.
  const long at_ejection = c.sent[frozen.address];
  const long others_before = c.sent[a.address] + c.sent[b.address];
  c.run_for(Ms(1000));
  CHECK(c.sent[frozen.address] == at_ejection);
  CHECK(c.sent[a.address] + c.sent[b.address] - others_before > 300);
  CHECK(c.info(frozen.address).state != net::EndpointState::healthy);
  CHECK(c.info(a.address).state == net::EndpointState::healthy);
  CHECK(c.info(b.address).state == net::EndpointState::healthy);

  frozen.child.signal(SIGCONT);
  REQUIRE(c.run_until([&] { return c.info(frozen.address).state == net::EndpointState::healthy; },
                      Ms(10000)));
  CHECK(c.info(frozen.address).stats.readmissions >= 1);
  const long ok_back = static_cast<long>(c.info(frozen.address).stats.calls_ok);
  REQUIRE(c.run_until(
      [&] { return static_cast<long>(c.info(frozen.address).stats.calls_ok) > ok_back + 20; },
      Ms(5000)));
  // The transitions went healthy -> ejected (-> probing -> ejected ...) ->
  // probing -> healthy, and no other server was ever ejected.
  for (const auto& ch : c.changes)
    if (ch.address != frozen.address) CHECK(ch.to == net::EndpointState::healthy);
}

TEST_CASE("A server found dead by the heartbeat alone is ejected, without any call to it",
          "[pool][integration]") {
  Watchdog watchdog(Ms(30000));
  Server a, frozen;
  net::PoolOptions o;
  o.heartbeat.interval = 200ms;  // timeout 600 ms
  o.outlier.base_ejection_time = 5s;
  Caller c(o, {a.address, frozen.address});
  c.pacing = false;
  REQUIRE(c.run_until([&] { return all_healthy(c, 2); }, Ms(5000)));
  frozen.child.signal(SIGSTOP);
  const SteadyTime frozen_at = now();
  REQUIRE(c.run_until([&] { return c.info(frozen.address).state == net::EndpointState::ejected; },
                      Ms(5000)));
  const auto ms = std::chrono::duration_cast<Ms>(now() - frozen_at).count();
  INFO("ejected " << ms << " ms after the freeze");
  // Closed when silent for the timeout after its last byte, which came
  // before the freeze; a loaded machine's loop latency gets one interval.
  CHECK(ms <= 600 + 200);
  CHECK(c.info(frozen.address).stats.heartbeat_timeouts == 1);
  CHECK(c.info(a.address).state == net::EndpointState::healthy);
  frozen.child.signal(SIGCONT);
}

TEST_CASE(
    "A pool's list changes at run time: an added server warms up and takes calls, a removed "
    "one finishes its calls and is gone",
    "[pool][integration]") {
  Watchdog watchdog(Ms(30000));
  Server first, second({"--reply-delay", "100ms"}), third;
  net::PoolOptions o;
  o.heartbeat.interval = 200ms;
  o.connections_per_endpoint = 2;
  o.balance = net::Balance::round_robin;
  Caller c(o, {first.address, second.address});
  c.call_timeout = 1s;
  REQUIRE(c.run_until([&] { return all_healthy(c, 2); }, Ms(5000)));
  CHECK(c.pool().open_connections() == 4);

  std::vector<std::string> three = {first.address, second.address, third.address};
  c.pool().set_endpoints(three);
  CHECK(c.info(third.address).state == net::EndpointState::warming);
  REQUIRE(c.run_until([&] { return c.sent[third.address] > 50; }, Ms(5000)));
  CHECK(c.info(third.address).state == net::EndpointState::healthy);
  CHECK(c.pool().open_connections() == 6);

  // The slow one leaves with calls in flight: they are answered, not failed.
  REQUIRE(c.info(second.address).stats.in_flight > 0);
  std::vector<std::string> two = {first.address, third.address};
  c.pool().set_endpoints(two);
  CHECK(c.info(second.address).state == net::EndpointState::draining);
  const long sent_to_second = c.sent[second.address];
  REQUIRE(c.run_until([&] { return c.pool().endpoints().size() == 2; }, Ms(5000)));
  CHECK(c.sent[second.address] == sent_to_second);
  CHECK(c.pool().open_connections() == 4);
  // Every call it had was answered: none failed or timed out. (Its counters
  // left with it; the client's totals tell.)
  c.run_for(Ms(200));
  const auto t = c.pool().totals();
  CHECK(t.calls_failed == 0);
  CHECK(t.calls_timed_out == 0);

  // A bad list changes nothing.
  std::vector<std::string> bad = {first.address, "nowhere:80"};
  CHECK_THROWS_AS(c.pool().set_endpoints(bad), std::invalid_argument);
  std::vector<std::string> twice = {first.address, first.address};
  CHECK_THROWS_AS(c.pool().set_endpoints(twice), std::invalid_argument);
  CHECK(c.pool().endpoints().size() == 2);
}

TEST_CASE("Power of two choices sends a slow server at most half the share round robin sends it",
          "[pool][integration]") {
  Watchdog watchdog(Ms(60000));
  Server fast1, fast2, slow({"--reply-delay", "40ms"});
  TempDir dir;
  const auto share = [&](const std::string& balance) {
    const json s = run_rpc_client(
        {"--server", fast1.address, "--server", fast2.address, "--server", slow.address,
         "--balance", balance, "--rate", "600", "--duration", "1500ms", "--heartbeat", "1s"},
        dir.file(balance + ".json"));
    REQUIRE(s["servers"].size() == 3);
    double total = 0, to_slow = 0;
    for (const auto& e : s["servers"]) {
      total += e["calls_ok"].get<double>();
      if (e["address"] == slow.address) to_slow = e["calls_ok"].get<double>();
      CHECK(e["state"] == "healthy");
      CHECK(e["ejections"] == 0);
    }
    CHECK(s["calls_ok"].get<double>() == total);
    REQUIRE(total > 300);
    return to_slow / total;
  };
  const double rr = share("round-robin");
  const double p2c = share("p2c");
  INFO("slow server's share: round-robin " << rr << ", p2c " << p2c);
  CHECK(rr > 0.25);
  CHECK(p2c <= rr / 2);
}
