// heartwheel-rpc-client: makes RPC calls (docs/rpc-protocol.md) to one or
// more servers through a net::Pool, with per-call deadlines in the timing
// wheel, heartbeats, outlier ejection and reconnects with backoff; prints a
// JSON summary at exit. See README.md in this folder.
#include <heartwheel/common/error.h>
#include <heartwheel/net/address.h>
#include <uv.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cli_program.h"
#include "rpc_client.h"
#include "tls_flags.h"

namespace net = heartwheel::net;
using heartwheel::cli::parse_duration_flag;

namespace {

struct Config {
  std::vector<std::string> servers;
  std::size_t connections_per_server = 1;
  std::string balance = "p2c";
  unsigned eject_after = 5, max_ejected_percent = 50;
  std::string eject_time = "5s", eject_max_time = "60s", probe_timeout = "1s";
  std::string duration = "10s", call_timeout = "1s", heartbeat = "30s", heartbeat_timeout = "0";
  std::string tick = "1ms", backoff_initial = "100ms", backoff_max = "5s", connect_timeout = "2s";
  double rate = 100;
  std::uint64_t calls = 0;
  std::size_t max_in_flight = 1000, payload = 16;
  std::string json;
  heartwheel::cli::TlsClientFlags tls;
};

rpcclient::ClientOptions make_options(const Config& c) {
  rpcclient::ClientOptions o;
  for (const std::string& s : c.servers) {
    const auto hp = net::parse_host_port(s);
    if (hp.port == 0)
      throw std::invalid_argument("--server needs a port: HOST:PORT (got '" + s + "')");
  }
  o.servers = c.servers;
  net::PoolOptions& p = o.pool;
  p.connector.backoff_initial = parse_duration_flag("--backoff-initial", c.backoff_initial);
  p.connector.backoff_max = parse_duration_flag("--backoff-max", c.backoff_max);
  p.connector.connect_timeout = parse_duration_flag("--connect-timeout", c.connect_timeout);
  if (c.connections_per_server == 0)
    throw std::invalid_argument("--connections-per-server must be at least 1");
  p.connections_per_endpoint = c.connections_per_server;
  if (!net::parse_balance(c.balance, p.balance))
    throw std::invalid_argument("--balance is round-robin or p2c (got '" + c.balance + "')");
  p.heartbeat.interval = parse_duration_flag("--heartbeat", c.heartbeat);
  p.heartbeat.timeout = parse_duration_flag("--heartbeat-timeout", c.heartbeat_timeout);
  if (p.heartbeat.interval.count() > 0) p.heartbeat.validate();
  p.outlier.consecutive_failures = c.eject_after;
  p.outlier.base_ejection_time = parse_duration_flag("--eject-time", c.eject_time);
  p.outlier.max_ejection_time = parse_duration_flag("--eject-max-time", c.eject_max_time);
  p.outlier.max_ejection_percent = c.max_ejected_percent;
  p.outlier.probe_timeout = parse_duration_flag("--probe-timeout", c.probe_timeout);
  p.validate();
  o.rate = c.rate;
  o.calls = c.calls;
  o.max_in_flight = c.max_in_flight;
  o.call_timeout = parse_duration_flag("--call-timeout", c.call_timeout);
  o.duration = parse_duration_flag("--duration", c.duration);
  o.payload_size = c.payload;
  o.tls = heartwheel::cli::make_tls_client(c.tls);
  o.validate();
  return o;
}

// {count, mean, p50, p90, p99, max} in microseconds.
nlohmann::json percentiles_us(const rpcclient::Samples& samples) {
  nlohmann::json j = {{"count", samples.count()}};
  if (samples.count() == 0) return j;
  std::vector<std::int64_t> ns = samples.values();
  std::sort(ns.begin(), ns.end());
  auto at = [&](double q) {
    const auto i = static_cast<std::size_t>(q * static_cast<double>(ns.size() - 1) + 0.5);
    return static_cast<double>(ns[i]) / 1000.0;
  };
  j["mean"] = samples.mean() / 1000.0;
  j["p50"] = at(0.50);
  j["p90"] = at(0.90);
  j["p99"] = at(0.99);
  j["max"] = static_cast<double>(samples.max()) / 1000.0;
  return j;
}

nlohmann::json summary(const rpcclient::RpcClient& client) {
  const auto s = client.call_stats();
  const auto& k = client.counters();
  const auto& f = client.rpc_stats();
  const auto& n = client.net_stats();
  nlohmann::json closed;
  for (std::size_t r = 0; r < n.closed_by_reason.size(); ++r)
    if (net::is_named(static_cast<net::CloseReason>(r)))
      closed[net::to_string(static_cast<net::CloseReason>(r))] = n.closed_by_reason[r];
  nlohmann::json servers = nlohmann::json::array();
  for (const net::EndpointInfo& e : client.servers())
    servers.push_back({{"address", e.address},
                       {"state", net::to_string(e.state)},
                       {"calls_ok", e.stats.calls_ok},
                       {"calls_failed", e.stats.calls_failed},
                       {"calls_timed_out", e.stats.calls_timed_out},
                       {"ejections", e.stats.ejections},
                       {"ejections_skipped", e.stats.ejections_skipped},
                       {"readmissions", e.stats.readmissions},
                       {"heartbeat_timeouts", e.stats.heartbeat_timeouts},
                       {"connects", e.stats.connects},
                       {"connect_failures", e.stats.connect_failures}});
  const auto connects = client.connects();
  return {
      {"calls_started", s.started},
      {"calls_ok", s.ok},
      {"calls_error", s.errors},
      {"calls_timed_out", s.timed_out},
      {"calls_failed", s.failed},
      {"calls_unsent", k.calls_unsent + s.refused},
      {"late_replies", s.late_replies},
      {"duplicate_replies", s.duplicate_replies},
      {"unknown_replies", s.unknown_replies},
      {"payload_mismatches", k.payload_mismatches},
      {"peak_in_flight", s.peak_in_flight},
      {"connects", connects},
      {"reconnects", client.reconnects()},
      {"connect_failures", n.connect_failures},
      {"heartbeats_sent", f.pings_sent},
      {"pongs_received", f.pongs_received},
      {"pings_received", f.pings_received},
      {"unexpected_frames", f.unexpected_frames},
      {"protocol_errors", f.protocol_errors},
      {"frames_sent", f.frames_sent},
      {"writes", f.writes},
      {"closed_by_reason", closed},
      {"elapsed_s", std::chrono::duration<double>(client.elapsed()).count()},
      {"rtt_us", percentiles_us(k.rtt_ns)},
      {"heartbeat_rtt_us", percentiles_us(k.heartbeat_rtt_ns)},
      {"servers", servers},
  };
}

struct SignalCtl {
  rpcclient::RpcClient* client;
  int count = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Config c;
  CLI::App app{
      "heartwheel-rpc-client: calls an RPC server at a steady rate with per-call deadlines, "
      "heartbeats, and reconnect with backoff; prints a JSON summary at exit.\n"
      "Durations: 250ms, 2s, 1.5s, 5m; 0 = off. Exit status: 0 ok, 1 runtime failure (with "
      "--tls: a handshake the server refused or a certificate this client refused), 2 usage "
      "error.",
      "heartwheel-rpc-client"};
  app.add_option("--server", c.servers,
                 "HOST:PORT of a server; repeat it for several (calls are balanced over them, a "
                 "sick one is ejected for a while)")
      ->required();
  app.add_option("--connections-per-server", c.connections_per_server,
                 "connections kept to each server")
      ->capture_default_str();
  app.add_option("--balance", c.balance,
                 "round-robin (each server in turn) or p2c (of two servers drawn at random, the "
                 "one with fewer calls in flight)")
      ->capture_default_str();
  app.add_option("--eject-after", c.eject_after,
                 "failed or timed-out calls in a row that eject a server (0 = never); a "
                 "heartbeat timeout ejects at once")
      ->capture_default_str();
  app.add_option("--eject-time", c.eject_time,
                 "first ejection's length; each further one lasts one more of it (decaying while "
                 "the server stays healthy)")
      ->capture_default_str();
  app.add_option("--eject-max-time", c.eject_max_time, "longest ejection")->capture_default_str();
  app.add_option("--max-ejected-percent", c.max_ejected_percent,
                 "most servers ejected at once, as a percentage (at least one may always be)")
      ->capture_default_str();
  app.add_option("--probe-timeout", c.probe_timeout,
                 "after an ejection a PING goes to the server; no answer within this = ejected "
                 "again")
      ->capture_default_str();
  app.add_option("--rate", c.rate,
                 "calls per second; 0 = no paced calls: with --calls N the N calls go back to back "
                 "(up to --max-in-flight at once), without it the client only heartbeats")
      ->capture_default_str();
  app.add_option("--calls", c.calls, "stop after this many calls (0 = no limit); the run ends at --duration "
                                     "or when the calls are done, whichever is first")->capture_default_str();
  app.add_option("--call-timeout", c.call_timeout, "a call unanswered for this long counts as timed out; "
                                                   "a reply after that is a late reply, not delivered")
      ->capture_default_str();
  app.add_option("--max-in-flight", c.max_in_flight, "calls outstanding at once; calls due beyond it "
                                                     "count as unsent")->capture_default_str();
  app.add_option("--payload", c.payload, "request payload size in bytes")->capture_default_str();
  app.add_option("--duration", c.duration, "how long to issue calls (then wait for those in flight); "
                                           "0 = until --calls are done")->capture_default_str();
  app.add_option("--heartbeat", c.heartbeat,
                 "send a PING after this long with nothing read or nothing "
                 "written; a server silent for 3 intervals while a PING is "
                 "out is dead (pong_timeout, reconnect); 0 = off")
      ->capture_default_str();
  app.add_option("--heartbeat-timeout", c.heartbeat_timeout,
                 "nothing read for this long while a PING "
                 "is out = dead server (0 = 3 x "
                 "--heartbeat; at least 2 x)")
      ->capture_default_str();
  app.add_option("--backoff-initial", c.backoff_initial, "first reconnect delay (doubles per failure, "
                                                         "with jitter)")->capture_default_str();
  app.add_option("--backoff-max", c.backoff_max, "longest reconnect delay")->capture_default_str();
  app.add_option("--connect-timeout", c.connect_timeout,
                 "give up on one connect attempt (with --tls: and its handshake) after this long")
      ->capture_default_str();
  heartwheel::cli::add_tls_client_flags(app, c.tls);
  app.add_option("--tick", c.tick, "timing wheel resolution (>= 1ms)")->capture_default_str();
  app.add_option("--json", c.json, "also write the summary to this file");
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;

  rpcclient::ClientOptions options;
  heartwheel::LoopWheel::Options wheel_options;
  try {
    options = make_options(c);
    wheel_options.tick = parse_duration_flag("--tick", c.tick);
    if (wheel_options.tick < std::chrono::milliseconds(1))
      throw std::invalid_argument("--tick must be at least 1ms");
  } catch (const std::exception& e) {
    return heartwheel::cli::usage_error(app, e.what());
  }

  uv_loop_t loop;
  heartwheel::check_uv(uv_loop_init(&loop), "uv_loop_init");
  nlohmann::json result;
  int status = 0;
  {
    heartwheel::LoopWheel wheel(&loop, wheel_options);
    try {
      rpcclient::RpcClient client(wheel, options);
      SignalCtl ctl{&client};
      uv_signal_t term, intr;
      for (uv_signal_t* s : {&term, &intr}) {
        heartwheel::check_uv(uv_signal_init(&loop, s), "uv_signal_init");
        s->data = &ctl;
      }
      auto on_signal = [](uv_signal_t* h, int) {
        auto* sc = static_cast<SignalCtl*>(h->data);
        if (++sc->count == 1) {
          sc->client->finish();  // stop issuing, let in-flight calls finish
        } else {
          uv_stop(h->loop);
        }
      };
      heartwheel::check_uv(uv_signal_start(&term, on_signal, SIGTERM), "uv_signal_start");
      heartwheel::check_uv(uv_signal_start(&intr, on_signal, SIGINT), "uv_signal_start");
      client.start([&loop] { uv_stop(&loop); });
      uv_run(&loop, UV_RUN_DEFAULT);
      result = summary(client);
      if (!client.fatal_error().empty()) status = heartwheel::cli::failure(app, client.fatal_error());
      uv_close(reinterpret_cast<uv_handle_t*>(&term), nullptr);
      uv_close(reinterpret_cast<uv_handle_t*>(&intr), nullptr);
    } catch (const std::exception& e) {
      status = heartwheel::cli::failure(app, e.what());
    }
  }
  uv_run(&loop, UV_RUN_DEFAULT);  // closing handles finish
  uv_loop_close(&loop);
  if (status != 0) return status;

  const std::string text = result.dump(2);
  std::printf("%s\n", text.c_str());
  std::fflush(stdout);
  if (!c.json.empty()) {
    std::ofstream out(c.json);
    out << text << "\n";
    if (!out) return heartwheel::cli::failure(app, "cannot write --json " + c.json);
  }
  return 0;
}
