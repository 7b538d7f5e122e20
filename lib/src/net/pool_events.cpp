// net::Pool's connections and their events: each callback passed on to the
// protocol's handler, the heartbeat on the connection's ping / pong_timeout
// slots, and the health transitions these events and the endpoint's timer
// make (pool.h, pool_health.h).
#include <heartwheel/net/pool.h>

#include <typeinfo>

#include "pool_endpoint.h"

namespace heartwheel::net {

// ---- PooledConnection --------------------------------------------------------

PooledConnection::PooledConnection(Pool& pool, Endpoint& endpoint,
                                   std::shared_ptr<const ConnectorOptions> options)
    : pool_(&pool),
      endpoint_(&endpoint),
      connector_(pool.wheel_, *this, std::move(options), &pool.net_stats_) {}

PooledConnection::~PooledConnection() = default;

Connection* PooledConnection::connection() const noexcept {
  return conn_ && !conn_->closing() ? conn_ : nullptr;
}

const std::string& PooledConnection::address() const noexcept { return endpoint_->address; }

std::size_t PooledConnection::endpoint_id() const noexcept { return endpoint_->id; }

PooledConnection* PooledConnection::of(const Connection& conn) noexcept {
  Handler& h = conn.handler();
  return typeid(h) == typeid(PooledConnection) ? static_cast<PooledConnection*>(&h) : nullptr;
}

void PooledConnection::on_open(Connection& conn) {
  pool_->protocol_.on_open(conn);
  if (conn.closing()) return;  // the protocol refused it: on_close follows
  conn_ = &conn;
  if (pool_->heartbeats_on()) heartbeat_.start(conn, pool_->options_.heartbeat);
  pool_->opened(*this);
}

void PooledConnection::on_data(Connection& conn, std::string_view data) {
  if (pool_->heartbeats_on()) heartbeat_.note_read(conn);
  pool_->protocol_.on_data(conn, data);
  if (endpoint_->probe_sent) pool_->read(*this);
}

DeadlineAction PooledConnection::on_deadline(Connection& conn, DeadlineEvent event) {
  if (pool_->heartbeats_on()) {
    if (event.kind == Deadline::ping) {
      // The protocol's writes count as activity too: the connection stamps
      // them, the heartbeat reads the stamp instead of being told.
      if (conn.last_write() > heartbeat_.last_write) heartbeat_.last_write = conn.last_write();
      if (heartbeat_.ping_due(conn, pool_->options_.heartbeat) && pool_->options_.ping(conn))
        ++endpoint_->stats.pings_sent;
      return DeadlineAction::keep;
    }
    if (event.kind == Deadline::pong_timeout) return DeadlineAction::close;
  }
  return pool_->protocol_.on_deadline(conn, event);
}

void PooledConnection::on_writable(Connection& conn, bool writable) {
  pool_->protocol_.on_writable(conn, writable);
}

void PooledConnection::on_eof(Connection& conn) { pool_->protocol_.on_eof(conn); }

void PooledConnection::on_drain(Connection& conn) { pool_->protocol_.on_drain(conn); }

void PooledConnection::on_close(Connection& conn, CloseReason reason, std::error_code error) {
  const bool was_open = conn_ != nullptr;
  conn_ = nullptr;  // no longer picked, also by acquire() calls from the protocol's on_close
  pool_->protocol_.on_close(conn, reason, error);
  if (was_open) pool_->closed(*this, reason);
}

// ---- the endpoint's timer -----------------------------------------------------

void detail::PoolEndpoint::Timer::fire(TimerEntry& t) {
  PoolEndpoint& e = *static_cast<Timer&>(t).owner;
  e.pool->on_endpoint_timer(e);
}

void Pool::on_endpoint_timer(Endpoint& e) {
  switch (e.health.state()) {
    case EndpointState::ejected:
      begin_probe(e);
      break;
    case EndpointState::probing:  // the probe ping went unanswered
      try_eject(e);
      break;
    case EndpointState::draining:  // drain_timeout: close what is left under its calls
      for (auto& m : e.members)
        if (m->conn_) m->conn_->close(CloseReason::drain);
      schedule_sweep();
      break;
    default:
      break;
  }
}

// ---- health transitions -------------------------------------------------------

void Pool::set_state(Endpoint& e, EndpointState from) {
  if (from != e.health.state() && options_.on_state_change)
    options_.on_state_change(e.info(), from);
}

void Pool::notify_available() {
  if (options_.on_available) options_.on_available();
}

bool Pool::try_eject(Endpoint& e) {
  // The cap counts the endpoints in use (not draining) and those ejected or
  // probing among them; one already counted may be ejected again.
  if (!e.health.counts_as_ejected()) {
    std::size_t total = 0, ejected = 0;
    for (const auto& x : endpoints_) {
      if (x->health.state() == EndpointState::draining) continue;
      ++total;
      if (x->health.counts_as_ejected()) ++ejected;
    }
    if (ejected >= options_.outlier.ejection_cap(total)) {
      ++e.stats.ejections_skipped;
      return false;
    }
  }
  const EndpointState from = e.health.state();
  const TimePoint until = e.health.eject(wheel_.now(), options_.outlier);
  ++e.stats.ejections;
  e.probe_sent = false;
  wheel_.schedule_at(e.timer, until);
  set_state(e, from);
  return true;
}

void Pool::failure(Endpoint& e) {
  if (e.health.note_failure(options_.outlier)) try_eject(e);
}

void Pool::begin_probe(Endpoint& e) {
  e.health.start_probe();
  ++e.stats.probes;
  set_state(e, EndpointState::ejected);
  if (!options_.ping) {  // a trial call decides (release())
    notify_available();
    return;
  }
  e.probe_sent = false;
  wheel_.schedule(e.timer, options_.outlier.probe_timeout);
  send_probe(e);  // or once a connection opens (opened())
}

void Pool::send_probe(Endpoint& e) {
  for (auto& m : e.members) {
    Connection* c = m->connection();
    if (!c) continue;
    if (options_.ping(*c)) {
      ++e.stats.pings_sent;
      e.probe_sent = true;
    }
    return;
  }
}

// ---- the connections' events ------------------------------------------------------

void Pool::opened(PooledConnection& m) {
  Endpoint& e = *m.endpoint_;
  ++e.open;
  ++e.stats.connects;
  if (m.connector_.connects() > 1) ++e.stats.reconnects;
  switch (e.health.state()) {
    case EndpointState::draining:  // opened as it was removed: nothing will use it
      m.conn_->close_after_flush(CloseReason::drain);
      return;
    case EndpointState::warming:
      e.health.warmed();
      set_state(e, EndpointState::warming);
      break;
    case EndpointState::probing:
      if (options_.ping && !e.probe_sent) send_probe(e);
      break;
    default:
      break;
  }
  if (e.health.pickable(!options_.ping)) notify_available();
}

void Pool::read(PooledConnection& m) {
  Endpoint& e = *m.endpoint_;
  if (e.health.state() != EndpointState::probing) return;
  // Any byte after the probe ping: the endpoint is alive again.
  wheel_.cancel(e.timer);
  e.probe_sent = false;
  e.health.readmit(wheel_.now());
  ++e.stats.readmissions;
  set_state(e, EndpointState::probing);
  notify_available();
}

void Pool::closed(PooledConnection& m, CloseReason reason) {
  Endpoint& e = *m.endpoint_;
  if (e.open > 0) --e.open;
  ++e.stats.disconnects;
  if (reason == CloseReason::pong_timeout) {
    ++e.stats.heartbeat_timeouts;
    const EndpointState s = e.health.state();
    if ((s == EndpointState::healthy && options_.outlier.eject_on_heartbeat_timeout) ||
        s == EndpointState::probing)
      try_eject(e);
  }
  if (e.health.state() == EndpointState::draining) schedule_sweep();
}

void Pool::connect_failed(Endpoint& e, std::error_code ec, Duration next) {
  ++e.stats.connect_failures;
  if (e.health.state() != EndpointState::draining) failure(e);
  if (options_.on_connect_error) options_.on_connect_error(e.address, ec, next);
}

}  // namespace heartwheel::net
