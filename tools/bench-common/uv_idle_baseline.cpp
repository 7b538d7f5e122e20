// See uv_idle_baseline.h. One heap block per connection: the uv_timer_t and
// the times of its last idle events; the activity stamps are the
// connection's own.
#include "uv_idle_baseline.h"

#include <heartwheel/net/connection.h>
#include <heartwheel/net/deadline.h>

#include <algorithm>
#include <uv.h>

namespace heartwheel::bench {

namespace {

// An idle kind's next event: one timeout after the later of the activity
// and its last event (the deadline set's anchor rule).
TimePoint due(TimePoint activity, TimePoint last_event, Duration timeout) noexcept {
  return deadline_after(std::max(activity, last_event), timeout);
}

}  // namespace

class UvIdleBaseline::Wrapper final : public net::Handler {
 public:
  Wrapper(const net::IdlePolicy& policy, net::Handler& inner,
          std::unique_ptr<net::Handler> owned = nullptr)
      : policy_(policy), inner_(&inner), owned_(std::move(owned)) {}

  void on_open(net::Connection& conn) override {
    auto* t = new Tracker{};
    if (uv_timer_init(conn.loop(), &t->timer) < 0) {
      delete t;
      conn.close(net::CloseReason::error);
      return;
    }
    t->timer.data = t;
    t->conn = &conn;
    conn.set_user_data(t);
    rearm(*t);
    inner_->on_open(conn);
  }
  void on_data(net::Connection& conn, std::string_view data) override {
    inner_->on_data(conn, data);
    if (policy_.refresh == net::RefreshMode::eager)
      if (Tracker* t = of(conn)) rearm(*t);
  }
  net::DeadlineAction on_deadline(net::Connection& conn, net::DeadlineEvent event) override {
    return inner_->on_deadline(conn, event);  // net's own: request, ...
  }
  void on_writable(net::Connection& conn, bool writable) override {
    inner_->on_writable(conn, writable);
  }
  void on_eof(net::Connection& conn) override { inner_->on_eof(conn); }
  void on_drain(net::Connection& conn) override { inner_->on_drain(conn); }
  void on_close(net::Connection& conn, net::CloseReason reason, std::error_code error) override {
    if (Tracker* t = of(conn)) {
      conn.set_user_data(nullptr);
      t->conn = nullptr;
      uv_timer_stop(&t->timer);
      uv_close(reinterpret_cast<uv_handle_t*>(&t->timer),
               [](uv_handle_t* h) { delete static_cast<Tracker*>(h->data); });
    }
    inner_->on_close(conn, reason, error);
  }

  const net::NetStats& counters() const noexcept { return counters_; }

 private:
  struct Tracker {
    uv_timer_t timer;
    net::Connection* conn = nullptr;  // its handler is the Wrapper
    // When each idle kind last fired; min(): never.
    TimePoint read_event = TimePoint::min();
    TimePoint write_event = TimePoint::min();
    TimePoint all_event = TimePoint::min();
    TimePoint armed_for = kNever;
    bool age_fired = false;
  };

  static Tracker* of(net::Connection& conn) noexcept {
    return static_cast<Tracker*>(conn.user_data());
  }

  TimePoint all_activity(const net::Connection& c) const noexcept {
    return std::max(c.last_read(), c.last_write());
  }
  TimePoint next_due(const Tracker& t) const noexcept {
    const net::Connection& c = *t.conn;
    TimePoint next = std::min({due(c.last_read(), t.read_event, policy_.read_idle),
                               due(c.last_write(), t.write_event, policy_.write_idle),
                               due(all_activity(c), t.all_event, policy_.all_idle)});
    if (!t.age_fired) next = std::min(next, deadline_after(c.opened_at(), policy_.max_age));
    return next;
  }

  void rearm(Tracker& t) noexcept {
    const TimePoint next = next_due(t);
    if (next == t.armed_for) return;
    t.armed_for = next;
    if (next == kNever) {
      uv_timer_stop(&t.timer);
      return;
    }
    const Duration delay = next - t.conn->timers().now();
    uv_timer_start(&t.timer, &on_timer, to_uv_millis_ceil(delay), 0);
  }

  // The first due idle event at `now`, in the deadline set's order (read,
  // write, all idle, max age last); its state moves as the set's would.
  bool take_due(Tracker& t, TimePoint now, net::DeadlineEvent& event) noexcept {
    const net::Connection& c = *t.conn;
    auto idle = [&](TimePoint activity, TimePoint& last_event, Duration timeout, net::Deadline kind) {
      if (now < due(activity, last_event, timeout)) return false;
      event = {kind, activity > last_event};  // activity since the last event
      last_event = now;
      return true;
    };
    if (idle(c.last_read(), t.read_event, policy_.read_idle, net::Deadline::read_idle)) return true;
    if (idle(c.last_write(), t.write_event, policy_.write_idle, net::Deadline::write_idle))
      return true;
    if (idle(all_activity(c), t.all_event, policy_.all_idle, net::Deadline::all_idle)) return true;
    if (!t.age_fired && now >= deadline_after(c.opened_at(), policy_.max_age)) {
      t.age_fired = true;
      event = {net::Deadline::max_age, true};
      return true;
    }
    return false;
  }

  static void on_timer(uv_timer_t* timer) {
    auto& t = *static_cast<Tracker*>(timer->data);
    if (t.conn == nullptr || t.conn->closing()) return;
    static_cast<Wrapper&>(t.conn->handler()).fire(t);
  }

  void fire(Tracker& t) {
    net::Connection& conn = *t.conn;
    const TimePoint now = conn.timers().now();
    const TimePoint armed = t.armed_for;
    t.armed_for = kNever;
    if (armed != kNever) counters_.record_timer_fire(now > armed ? now - armed : Duration{0});
    net::DeadlineEvent event{};
    // Bounded like the deadline set's round: four kinds, each at most twice.
    for (int n = 0; n < 8 && !conn.closing() && take_due(t, now, event); ++n) {
      ++counters_.idle_events[static_cast<std::size_t>(event.kind)];
      net::DeadlineAction action = net::DeadlineAction::close;
      try {
        action = inner_->on_deadline(conn, event);
      } catch (...) {  // as net does for its own handlers: close, never unwind into libuv
        ++counters_.handler_exceptions;
        conn.close(net::CloseReason::error);
      }
      if (action == net::DeadlineAction::close && !conn.closing())
        conn.close(net::close_reason_for(event.kind));
    }
    if (!conn.closing()) rearm(t);
  }

  net::IdlePolicy policy_;
  net::Handler* inner_;
  std::unique_ptr<net::Handler> owned_;  // inner_, when the wrapper owns it
  net::NetStats counters_;               // timer wake-ups, idle events
};

UvIdleBaseline::UvIdleBaseline(const net::IdlePolicy& policy, unsigned workers)
    : policy_(policy), published_(workers) {}

net::IdlePolicy UvIdleBaseline::net_policy() const {
  net::IdlePolicy p = policy_;
  p.read_idle = p.write_idle = p.all_idle = p.max_age = Duration{0};
  p.refresh = net::RefreshMode::lazy;
  return p;
}

std::unique_ptr<net::Handler> UvIdleBaseline::wrap(std::unique_ptr<net::Handler> inner) {
  net::Handler& h = *inner;
  return std::make_unique<Wrapper>(policy_, h, std::move(inner));
}

std::unique_ptr<net::Handler> UvIdleBaseline::wrap(net::Handler& inner) {
  return std::make_unique<Wrapper>(policy_, inner);
}

void UvIdleBaseline::publish(unsigned worker, net::Handler& handler) {
  const net::NetStats& c = static_cast<Wrapper&>(handler).counters();
  const std::lock_guard lock(mutex_);
  if (worker < published_.size()) published_[worker] = c;
}

net::LoopSnapshot UvIdleBaseline::add_to(net::LoopSnapshot snapshot, int only_worker) const {
  const std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < published_.size(); ++i)
    if (only_worker < 0 || static_cast<std::size_t>(only_worker) == i)
      snapshot.net.merge(published_[i]);
  return snapshot;
}

}  // namespace heartwheel::bench
