// The protection half of net::Server (server.h, "Protection"; overload.h):
// the per-address admission, the pressure and the idle scale, the sweeper
// that makes a new scale bite soon, and picking the idlest connection to drop.
#include <heartwheel/net/detail/ip_limiter.h>
#include <heartwheel/net/server.h>

#include <algorithm>

#include "uv_timers.h"

namespace heartwheel::net {

namespace {
// Connections the sweeper re-arms per wake-up at most (~50-100 ns each); the
// rest wait for the next loop iteration, so a scale change at 100k
// connections never holds the loop for long.
constexpr std::size_t kSweepBudget = 4096;

// The shortest idle timeout that counts reads (read_idle, all_idle), or 0:
// the sweeper's order is by reads, so only these are "due soon" at its back.
Duration read_side_timeout(const IdlePolicy& p) noexcept {
  Duration t{0};
  for (const Duration d : {p.read_idle, p.all_idle})
    if (d.count() > 0 && (t.count() == 0 || d < t)) t = d;
  return t;
}
}  // namespace

void Server::setup_protection() {
  effective_ = options_.connection;
  const OverloadOptions& o = options_.overload;
  if (o.tracks_activity())
    activity_shift_ = net::activity_shift(activity_granularity_for(o, options_.connection.idle));
  if (options_.ip_limiter) {
    limiter_ = options_.ip_limiter;
  } else if (options_.max_connections_per_ip > 0) {
    limiter_ = std::make_shared<detail::IpLimiter>(options_.max_connections_per_ip);
  }
  if (o.scaling() && o.memory_saturation_bytes > 0) {
    memory_timer_ = detail::new_timer(loop(), this);
    if (memory_timer_) {
      const auto every = std::max<std::uint64_t>(1, to_uv_millis_ceil(o.memory_sample_interval));
      uv_timer_start(memory_timer_, &on_memory_timer, 0, every);
      // Sampling alone must not keep a loop running that has nothing else.
      uv_unref(reinterpret_cast<uv_handle_t*>(memory_timer_));
    }
  }
}

void Server::close_protection() noexcept {
  detail::close_timer(memory_timer_);
  if (sweeper_.armed()) wheel_.cancel(sweeper_);
  if (limiter_)
    for (Connection* c = list_.front(); c; c = list_.next(*c)) {
      limiter_->release(ip_slot(*c));
      ip_slot(*c) = 0;
    }
}

bool Server::admit(Connection& conn, CloseReason& refusal) noexcept {
  if (!limiter_) return true;
  sockaddr_storage ss;
  if (!conn.peer_sockaddr(ss)) return true;  // no address to count (the socket failed)
  try {
    const detail::IpLimiter::Admission a = limiter_->acquire(reinterpret_cast<const sockaddr&>(ss));
    if (!a.admitted) {
      refusal = CloseReason::ip_limit;
      return false;
    }
    ip_slot(conn) = a.handle;
    return true;
  } catch (...) {  // bad_alloc: refuse rather than serve uncounted
    refusal = CloseReason::error;
    return false;
  }
}

void Server::connection_active(Connection& conn, std::uint16_t generation) noexcept {
  if (list_.touch(conn, generation)) ++stats_.overload.activity_moves;
}

Duration Server::scale_idle_timeout(Duration timeout) const noexcept {
  return pressure_ == 0 ? timeout : scaled_timeout(timeout, pressure_, options_.overload);
}

void Server::on_memory_timer(uv_timer_t* timer) {
  auto* s = static_cast<Server*>(timer->data);
  std::size_t rss = 0;
  if (uv_resident_set_memory(&rss) != 0) return;
  const OverloadOptions& o = s->options_.overload;
  s->mem_pressure_ = pressure_steps(rss, o.memory_start_bytes, o.memory_saturation_bytes);
  s->update_pressure();
}

void Server::update_pressure() noexcept {
  const OverloadOptions& o = options_.overload;
  if (!o.scaling()) return;
  const std::uint32_t steps = std::max(
      pressure_steps(list_.size(), o.start_connections, o.saturation_connections), mem_pressure_);
  if (steps == pressure_) return;
  const bool tighter = steps > pressure_;
  pressure_ = steps;
  // Every connection reads its idle timeouts from effective_.idle: three
  // stores apply the new scale to all of them (lazily, when each fires).
  effective_.idle = scaled_policy(options_.connection.idle, steps, o);
  ++stats_.overload.scale_changes;
  stats_.overload.idle_scale =
      1.0 - static_cast<double>(steps) / static_cast<double>(kPressureSteps);
  if (read_side_timeout(effective_.idle).count() == 0) return;  // nothing the sweeper can order
  if (tighter) {
    // Deadlines moved earlier: walk the order again from its back (at most
    // once per granularity: the sweeper applies it).
    restart_pending_ = true;
    wheel_.schedule_at(sweeper_, wheel_.now());
  } else if (steps == 0) {
    restart_pending_ = false;
    list_.stop_sweep();
    wheel_.cancel(sweeper_);
  }
}

void Server::Sweeper::on_sweep(TimerEntry& entry) { static_cast<Sweeper&>(entry).owner->sweep(); }

// The tail re-arm (overload.h, ActivityList::sweep): from the oldest reader
// toward the newest, re-arm each connection whose scaled read-side deadline
// is within two granularities; sleep until the next one comes that near (at
// most one step per granularity).
void Server::sweep() noexcept {
  ++stats_.overload.sweeps;
  const TimePoint now = wheel_.now();
  const Duration granularity{Duration::rep{1} << activity_shift()};
  if (restart_pending_ && (last_restart_ == TimePoint{} || now - last_restart_ >= granularity)) {
    list_.restart_sweep();
    last_restart_ = now;
    restart_pending_ = false;
  }
  const Duration timeout = read_side_timeout(effective_.idle);
  TimePoint next = restart_pending_ ? last_restart_ + granularity : kNever;
  if (pressure_ != 0 && timeout.count() > 0) {
    std::size_t budget = kSweepBudget;
    const TimePoint step = list_.sweep(
        now, timeout, granularity, budget, [](Connection& c) { return c.last_read(); },
        [this](Connection& c) {
          reschedule_deadlines(c);
          ++stats_.overload.swept;
        });
    next = std::min(next, step);
  }
  if (next != kNever) wheel_.schedule_at(sweeper_, std::max(next, now));
}

// The least recently reading connection that may be dropped, or nullptr.
Connection* Server::idlest() noexcept {
  const TimePoint now = wheel_.now();
  const Duration min_idle = options_.overload.drop_idle_after;
  Connection* c = list_.back();
  for (std::size_t probe = 0; c && probe < kDropProbe; ++probe) {
    ++stats_.overload.drop_probes;
    Connection* newer = list_.prev(*c);
    if (!c->closing() && !c->in_request()) {
      if (now - c->last_read() >= min_idle) return c;
      // It read more recently than its place says (the order is coarse):
      // put it at the front so the next probe does not meet it again.
      list_.touch(*c, static_cast<std::uint16_t>(list_.generation(*c) + 1));
    }
    c = newer;
  }
  return nullptr;
}

void Server::drop(Connection& victim) noexcept {
  ++dropping_;
  // It stays listed until its close callback (the next loop iteration); at
  // the front it is not met again by the next newcomers of this burst, which
  // look from the back.
  list_.touch(victim, static_cast<std::uint16_t>(list_.generation(victim) + 1));
  victim.close(CloseReason::overload);
}

}  // namespace heartwheel::net
