// net::Pool: the list of endpoints, picking and releasing calls (pool.h).
// The connections' events, the health transitions and their timers are in
// pool_events.cpp.
#include <heartwheel/common/duration_parse.h>
#include <heartwheel/common/error.h>
#include <heartwheel/net/address.h>
#include <heartwheel/net/pool.h>

#include <set>
#include <stdexcept>

#include "pool_endpoint.h"

namespace heartwheel::net {

// Destroys drained endpoints from a timer callback, never from inside one of
// their own connections' callbacks.
struct Pool::Sweep final : TimerEntry {
  explicit Sweep(Pool& p) : TimerEntry(&fire), pool(&p) {}
  static void fire(TimerEntry& t) { static_cast<Sweep&>(t).pool->sweep(); }
  Pool* pool;
};

namespace {

HostPort checked_address(const std::string& address) {
  HostPort hp;
  try {
    hp = parse_host_port(address);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("pool: endpoint: ") + e.what());
  }
  if (hp.port <= 0 || hp.port > 65535)
    throw std::invalid_argument("pool: endpoint '" + address + "' needs a port: HOST:PORT");
  sockaddr_storage ss;
  if (to_sockaddr(hp, ss))
    throw std::invalid_argument("pool: endpoint '" + address +
                                "' is not a numeric IPv4 or IPv6 address (no DNS here)");
  return hp;
}

}  // namespace

void PoolOptions::validate() const {
  if (connections_per_endpoint == 0)
    throw std::invalid_argument("pool: connections_per_endpoint must be at least 1");
  if (!connector.reconnect)
    throw std::invalid_argument(
        "pool: connector.reconnect must stay on: a pool keeps its connections");
  ConnectorOptions c = connector;  // host and port are each endpoint's
  c.host = "127.0.0.1";
  c.port = 1;
  c.validate();
  if (ping && heartbeat.interval.count() > 0) heartbeat.validate();
  outlier.validate();
  if (drain_timeout.count() <= 0)
    throw std::invalid_argument("pool: drain_timeout must be positive (got " +
                                format_duration(drain_timeout) + ")");
}

EndpointInfo detail::PoolEndpoint::info() const {
  EndpointInfo i{id, address, health.state(), stats};
  i.stats.in_flight = in_flight;
  i.stats.open = open;
  i.stats.connections = members.size();
  return i;
}

PooledConnection* detail::PoolEndpoint::least_loaded(std::uint32_t max_calls) noexcept {
  const std::size_t n = members.size();
  PooledConnection* best = nullptr;
  std::size_t best_at = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = (next_member + k) % n;
    PooledConnection* m = members[i].get();
    if (!m->connection() || (max_calls > 0 && m->in_flight() >= max_calls)) continue;
    if (!best || m->in_flight() < best->in_flight()) {
      best = m;
      best_at = i;
    }
  }
  if (best) next_member = best_at + 1;
  return best;
}

bool detail::PoolEndpoint::has_room(std::uint32_t max_calls) const noexcept {
  for (const auto& m : members)
    if (m->connection() && (max_calls == 0 || m->in_flight() < max_calls)) return true;
  return false;
}

bool detail::PoolEndpoint::drained() const noexcept {
  if (health.state() != EndpointState::draining || in_flight > 0) return false;
  for (const auto& m : members)
    if (m->connector().connected() || m->connector().started()) return false;
  return true;
}

Pool::Pool(LoopWheel& wheel, Handler& protocol, PoolOptions options)
    : wheel_(wheel), protocol_(protocol), options_(std::move(options)) {
  options_.validate();
  picker_ = options_.make_picker ? options_.make_picker() : make_picker(options_.balance);
  if (!picker_) throw std::invalid_argument("pool: make_picker returned no picker");
  sweep_ = std::make_unique<Sweep>(*this);
}

Pool::~Pool() {
  wheel_.cancel(*sweep_);
  for (auto& e : endpoints_) wheel_.cancel(e->timer);
  endpoints_.clear();  // the connectors abandon what is open (no callbacks)
}

void Pool::set_endpoints(std::span<const std::string> addresses) {
  std::set<std::string> wanted;
  for (const std::string& a : addresses) {
    checked_address(a);
    if (!wanted.insert(a).second)
      throw std::invalid_argument("pool: endpoint '" + a + "' is listed twice");
  }
  std::set<std::string> kept;
  for (auto& e : endpoints_) {
    if (e->health.state() == EndpointState::draining) continue;
    if (wanted.count(e->address)) {
      kept.insert(e->address);
    } else {
      drain(*e);
    }
  }
  for (const std::string& a : addresses) {
    if (kept.count(a)) continue;
    Endpoint& e = add(a);
    if (started_) start_endpoint(e);
  }
}

Pool::Endpoint& Pool::add(const std::string& address) {
  const HostPort hp = checked_address(address);
  auto e = std::make_unique<Endpoint>(*this, next_id_++, address);
  Endpoint* ep = e.get();
  auto o = std::make_shared<ConnectorOptions>(options_.connector);
  o->host = hp.host;
  o->port = hp.port;
  if (options_.endpoint_transport) o->transport = options_.endpoint_transport(address);
  o->on_connect_error = [this, ep](std::error_code ec, Duration next) {
    connect_failed(*ep, ec, next);
  };
  e->options = o;
  e->members.reserve(options_.connections_per_endpoint);
  for (std::size_t i = 0; i < options_.connections_per_endpoint; ++i)
    e->members.push_back(std::unique_ptr<PooledConnection>(new PooledConnection(*this, *ep, o)));
  endpoints_.push_back(std::move(e));
  return *ep;
}

void Pool::start() {
  if (started_) return;
  started_ = true;
  stopped_ = false;
  for (auto& e : endpoints_)
    if (e->health.state() != EndpointState::draining) start_endpoint(*e);
}

void Pool::start_endpoint(Endpoint& e) {
  for (auto& m : e.members) m->connector_.start();
}

void Pool::stop() {
  started_ = false;
  stopped_ = true;
  for (auto& e : endpoints_)
    for (auto& m : e->members) m->connector_.stop();
}

void Pool::drain(Endpoint& e) {
  const EndpointState from = e.health.state();
  wheel_.cancel(e.timer);
  e.health.drain();
  e.probe_sent = false;
  set_state(e, from);
  for (auto& m : e.members) {
    m->connector_.stop_reconnecting();
    if (m->conn_ && m->in_flight_ == 0 && !m->conn_->closing())
      m->conn_->close_after_flush(CloseReason::drain);
  }
  wheel_.schedule(e.timer, options_.drain_timeout);
  schedule_sweep();
}

PooledConnection* Pool::acquire(std::error_code& error) {
  if (!started_) {
    error = make_error_code(errc::closed);
    return nullptr;
  }
  candidates_.clear();
  candidate_endpoints_.clear();
  const bool trials = !options_.ping;
  const std::uint32_t max = options_.max_calls_per_connection;
  bool any_open = false;
  for (auto& up : endpoints_) {
    Endpoint& e = *up;
    if (e.open == 0 || !e.health.pickable(trials)) continue;
    any_open = true;
    if (!e.has_room(max)) continue;
    candidates_.push_back({e.id, e.in_flight, e.open});
    candidate_endpoints_.push_back(&e);
  }
  if (candidates_.empty()) {
    error = make_error_code(any_open ? errc::limit_reached : errc::unavailable);
    return nullptr;
  }
  std::size_t i = picker_->pick(candidates_);
  if (i >= candidates_.size()) i = 0;  // a picker of the application's out of range
  Endpoint& e = *candidate_endpoints_[i];
  PooledConnection* m = e.least_loaded(max);
  if (e.health.state() == EndpointState::probing) e.health.trial_started();
  ++m->in_flight_;
  ++e.in_flight;
  error.clear();
  return m;
}

bool Pool::available() const noexcept {
  if (!started_) return false;
  const bool trials = !options_.ping;
  for (const auto& e : endpoints_)
    if (e->open > 0 && e->health.pickable(trials) && e->has_room(options_.max_calls_per_connection))
      return true;
  return false;
}

bool Pool::down() const noexcept {
  for (const auto& e : endpoints_) {
    if (e->health.state() == EndpointState::draining) continue;
    if (e->open > 0) return false;
    for (const auto& m : e->members)
      if (m->connector().failures() == 0) return false;
  }
  return true;
}

void Pool::release(PooledConnection& lease, CallOutcome outcome) noexcept {
  Endpoint& e = *lease.endpoint_;
  if (lease.in_flight_ > 0) --lease.in_flight_;
  if (e.in_flight > 0) --e.in_flight;
  const bool trial = !options_.ping && e.health.state() == EndpointState::probing;
  switch (outcome) {
    case CallOutcome::ok:
      ++e.stats.calls_ok;
      e.health.note_success();
      if (trial) {
        e.health.readmit(wheel_.now());
        ++e.stats.readmissions;
        set_state(e, EndpointState::probing);
      }
      break;
    case CallOutcome::failed:
    case CallOutcome::timed_out:
      ++(outcome == CallOutcome::failed ? e.stats.calls_failed : e.stats.calls_timed_out);
      if (trial) {
        try_eject(e);  // the trial failed: ejected again, for longer
      } else {
        failure(e);
      }
      break;
    case CallOutcome::cancelled:
      if (trial) e.health.start_probe();  // the trial is free for another call
      break;
  }
  if (e.health.state() == EndpointState::draining) {
    if (lease.in_flight_ == 0 && lease.conn_ && !lease.conn_->closing())
      lease.conn_->close_after_flush(CloseReason::drain);
    schedule_sweep();
  }
}

std::vector<EndpointInfo> Pool::endpoints() const {
  std::vector<EndpointInfo> out;
  out.reserve(endpoints_.size());
  for (const auto& e : endpoints_) out.push_back(e->info());
  return out;
}

EndpointStats Pool::totals() const {
  EndpointStats t;
  for (const auto& e : endpoints_) t.merge(e->info().stats);
  return t;
}

std::size_t Pool::open_connections() const noexcept {
  std::size_t n = 0;
  for (const auto& e : endpoints_) n += e->open;
  return n;
}

void Pool::schedule_sweep() noexcept {
  if (!sweep_->armed()) wheel_.schedule(*sweep_, Duration{0});
}

void Pool::sweep() noexcept {
  for (auto it = endpoints_.begin(); it != endpoints_.end();) {
    Endpoint& e = **it;
    if (e.drained()) {
      wheel_.cancel(e.timer);
      it = endpoints_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace heartwheel::net
