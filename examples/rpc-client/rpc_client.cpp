// See rpc_client.h.
#include "rpc_client.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <uv.h>

#include <heartwheel/common/error.h>
#include <heartwheel/tls/net_transport.h>

namespace rpcclient {

namespace {

// Round trips are measured on the monotonic ns clock, not the loop's cached ms.
TimePoint hr_now() noexcept { return TimePoint(std::chrono::nanoseconds(uv_hrtime())); }

}  // namespace

// Two wheel entries: the pacing tick and the end of the run.
struct RpcClient::Pacer {
  struct Hook final : heartwheel::TimerEntry {
    Hook(RpcClient* o, void (RpcClient::*f)()) : TimerEntry(&fire), owner(o), fn(f) {}
    static void fire(TimerEntry& e) {
      auto& h = static_cast<Hook&>(e);
      (h.owner->*h.fn)();
    }
    RpcClient* owner;
    void (RpcClient::*fn)();
  };
  explicit Pacer(RpcClient* o) : tick(o, &RpcClient::pace), end(o, &RpcClient::finish) {}
  Hook tick;
  Hook end;
};

void ClientOptions::validate() const {
  if (servers.empty()) throw std::invalid_argument("give at least one --server HOST:PORT");
  if (rate < 0) throw std::invalid_argument("--rate must not be negative");
  if (call_timeout.count() <= 0) throw std::invalid_argument("--call-timeout must be > 0");
  if (duration.count() <= 0 && calls == 0)
    throw std::invalid_argument("give --duration or --calls (or both): the run needs an end");
  if (max_in_flight == 0) throw std::invalid_argument("--max-in-flight must be at least 1");
}

rpc::NetHandlerOptions RpcClient::handler_options() {
  rpc::NetHandlerOptions o;
  o.heartbeat.interval = Duration{0};  // the pool runs the heartbeat (pool_options)
  o.max_frame_length = options_.max_frame_length;
  o.max_calls_in_flight = options_.max_in_flight;
  o.clock = &hr_now;
  o.on_open = [this](net::Connection&) { ++open_; };
  o.on_close = [this](net::Connection&, net::CloseReason, std::error_code) { on_close(); };
  o.on_call_done = [this](const rpc::CallCompletion& done) { on_call_done(done); };
  o.on_heartbeat_rtt = [this](net::Connection&, Duration rtt) {
    counters_.heartbeat_rtt_ns.add(rtt.count());
  };
  return o;  // validated by the handler
}

net::PoolOptions RpcClient::pool_options() {
  net::PoolOptions o = options_.pool;
  // The heartbeat's PINGs are the protocol's: the handler writes them (and
  // measures their PONGs); the pool decides when, and probes with them.
  o.ping = [this](net::Connection& c) { return handler_.ping(c); };
  o.on_available = [this] { on_available(); };
  if (options_.tls) {
    const Duration handshake = o.connector.connect_timeout;
    o.endpoint_transport = [this, handshake](const std::string& address) {
      // The host as given ("localhost", not the 127.0.0.1 it connects to)
      // is the name the certificate must carry.
      std::string_view name(address);
      name = name.substr(0, name.rfind(':'));
      if (name.size() >= 2 && name.front() == '[' && name.back() == ']')
        name = name.substr(1, name.size() - 2);
      return heartwheel::tls::client_transport(
          options_.tls, std::string(name), {},
          {.handshake_timeout = handshake,
           .on_failure = [this, address](heartwheel::tls::FailureCause cause,
                                         const std::string& message) {
             on_tls_failure(address, cause, message);
           }});
    };
  }
  return o;
}

void RpcClient::on_tls_failure(const std::string& server, heartwheel::tls::FailureCause cause,
                               const std::string& message) {
  // A slow handshake may be the server's load: retried with backoff like a
  // connect. The rest would fail the same way on every attempt.
  if (cause == heartwheel::tls::FailureCause::timeout || !fatal_error_.empty()) return;
  fatal_error_ = "tls: handshake with " + server + " failed: " + message;
  // Not from inside the failing connection's close: finish on the next tick.
  wheel_.schedule(pacer_->end, Duration{0});
}

RpcClient::RpcClient(heartwheel::LoopWheel& wheel, ClientOptions options)
    : wheel_(wheel),
      options_((options.validate(), std::move(options))),
      handler_(handler_options()),
      pool_(wheel, handler_, pool_options()),
      pacer_(std::make_unique<Pacer>(this)),
      payload_(options_.payload_size, 'x') {
  pool_.set_endpoints(options_.servers);
  for (std::size_t i = 0; i < payload_.size(); ++i) payload_[i] = static_cast<char>('a' + i % 26);
}

RpcClient::~RpcClient() {
  wheel_.cancel(pacer_->tick);
  wheel_.cancel(pacer_->end);
}

void RpcClient::start(std::function<void()> on_finished) {
  on_finished_ = std::move(on_finished);
  started_at_ = hr_now();
  if (options_.duration.count() > 0) wheel_.schedule(pacer_->end, options_.duration);
  pool_.start();
}

Duration RpcClient::elapsed() const noexcept {
  return (finished_ ? stopped_at_ : hr_now()) - started_at_;
}

bool RpcClient::done_issuing() const noexcept {
  return finishing_ || (options_.calls > 0 && issued_ >= options_.calls);
}

bool RpcClient::issue_one() {
  std::error_code ec;
  net::PooledConnection* lease = pool_.acquire(ec);
  if (!lease) return false;  // no server can take it now (none open, all ejected)
  handler_.call(*lease->connection(), payload_, options_.call_timeout, lease, ec);
  if (ec) {  // closing, or max_in_flight (counted as refused)
    pool_.release(*lease, net::CallOutcome::cancelled);
    return false;
  }
  ++issued_;
  return true;
}

void RpcClient::pace() {
  if (!done_issuing() && paced_from_) {
    if (options_.rate > 0) {
      const double secs = std::chrono::duration<double>(hr_now() - *paced_from_).count();
      const auto due = static_cast<std::uint64_t>(std::floor(secs * options_.rate));
      while (due_taken_ < due && !done_issuing()) {
        ++due_taken_;
        if (!issue_one()) ++counters_.calls_unsent;
      }
      // Next slot, but no more often than the wheel's tick: batches at high rates.
      const auto next = *paced_from_ + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(
                                          static_cast<double>(due_taken_ + 1) / options_.rate));
      const Duration wait = std::max<Duration>(next - hr_now(), wheel_.wheel().tick());
      if (!done_issuing()) wheel_.schedule(pacer_->tick, wait);
    } else if (options_.calls > 0) {  // back to back, a window of max_in_flight
      while (!done_issuing() && handler_.calls_in_flight() < options_.max_in_flight &&
             issue_one()) {
      }
    }
  }
  // The REQUESTs wait in the connection's batch: the handler writes them
  // together before the loop polls again.
  maybe_finished();
}

void RpcClient::finish() {
  if (finishing_) return;
  finishing_ = true;
  wheel_.cancel(pacer_->tick);
  maybe_finished();
}

void RpcClient::maybe_finished() {
  if (finished_ || !done_issuing() || handler_.calls_in_flight() > 0) return;
  finished_ = true;
  stopped_at_ = hr_now();
  wheel_.cancel(pacer_->tick);
  wheel_.cancel(pacer_->end);
  pool_.stop();
  if (open_ == 0) notify_finished();  // else when the last on_close comes
}

void RpcClient::notify_finished() {
  if (notified_ || !on_finished_) return;
  notified_ = true;
  on_finished_();
}

void RpcClient::on_available() {
  // The schedule starts with the first connection, so the connect itself does
  // not count as calls missed; after that, calls due while no server could
  // take them are.
  if (!paced_from_) paced_from_ = hr_now();
  if (!finished_) pace();
}

void RpcClient::on_close() {
  // The handler has failed this connection's calls already (on_call_done):
  // replies can only come on the connection their request went out on.
  if (open_ > 0) --open_;
  if (finished_ && open_ == 0) notify_finished();
}

void RpcClient::on_call_done(const rpc::CallCompletion& done) {
  auto* lease = static_cast<net::PooledConnection*>(done.context);
  // What the server's health learns: an answer is life, an ERROR frame (a
  // draining or failing server) is not, a timeout is a timeout.
  net::CallOutcome outcome = net::CallOutcome::failed;
  if (done.status == rpc::CallStatus::ok) {
    outcome = net::CallOutcome::ok;
    counters_.rtt_ns.add(done.elapsed.count());
    if (done.payload != payload_) ++counters_.payload_mismatches;
  } else if (done.status == rpc::CallStatus::timed_out) {
    outcome = net::CallOutcome::timed_out;
  }
  if (lease) pool_.release(*lease, outcome);
  if (options_.rate <= 0 && !finished_) {
    pace();
  } else {
    maybe_finished();
  }
}

}  // namespace rpcclient
