// DelayedQueue: the order of held pushes (issue 34). They wait in an index
// ordered by due time (then id), behind ONE wheel entry armed at the
// earliest; what comes due is claimed in that order, and what the claims win
// is delivered in the order the claims were sent. A wheel entry per push
// would run the pushes due on one tick in no particular order
// (timing_wheel.h, SameTickOrder), and on a Redis Cluster the claims go to
// several masters, whose replies may come in any order. See
// heartwheel/push/delayed_queue.h ("Order").
#include <heartwheel/push/delayed_queue.h>

#include <charconv>
#include <cmath>
#include <cstdio>

#include "held.h"

namespace heartwheel::push {

namespace {
// Claims sent per turn of the front timer: a restart with very many overdue
// pushes gives the loop back (and claims on at its next tick) in between.
constexpr std::size_t kClaimsPerTurn = 4096;
// The largest due time a score may carry: its microseconds fit an int64.
// (Up to 9e12 ms, the year 2255, a double keeps them exact; beyond, a push
// keeps its millisecond and loses its place within it.)
constexpr double kMaxScoreMs = 9e15;
}  // namespace

namespace detail {

std::string due_score(std::int64_t due_us) {
  if (due_us <= 0) return "0";
  std::string out = std::to_string(due_us / 1000);
  if (const auto us = static_cast<int>(due_us % 1000); us != 0) {
    char fraction[8];
    std::snprintf(fraction, sizeof fraction, ".%03d", us);
    out += fraction;
  }
  return out;
}

// Redis keeps the score as a double and prints it back with 17 significant
// digits: for a due time in ms with three decimals that is exact to well
// under a microsecond (ulp ~0.25 us near 2^40 ms), so rounding recovers it.
bool parse_due_score(std::string_view text, std::int64_t& due_us) {
  double ms = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
  if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(ms) ||
      std::fabs(ms) > kMaxScoreMs)
    return false;
  due_us = std::llround(ms * 1000.0);
  return true;
}

std::int64_t to_unix_us_ceil(WallTime t) noexcept {
  return std::chrono::ceil<std::chrono::microseconds>(t.time_since_epoch()).count();
}

WallTime from_unix_us(std::int64_t us) noexcept {
  return WallTime(std::chrono::duration_cast<WallClock::duration>(std::chrono::microseconds(us)));
}

}  // namespace detail

bool DelayedQueue::Earlier::operator()(const Held* a, const Held* b) const noexcept {
  return a->due_us != b->due_us ? a->due_us < b->due_us : a->id < b->id;
}

void DelayedQueue::hold(std::string_view id, std::int64_t due_us) {
  if (held_.contains(id)) return;
  auto held = std::make_unique<Held>(*this, std::string(id), due_us);
  Held& h = *held;
  held_.emplace(std::string_view(h.id), std::move(held));
  ++stats_.loaded;
  const bool first = waiting_.empty() || Earlier{}(&h, *waiting_.begin());
  waiting_.insert(&h);
  if (first) arm_front();
}

// The front timer may stay armed for a push released here: it then finds
// nothing due and re-arms for what is first by then.
void DelayedQueue::release(Held& held) noexcept {
  if (held.state == Held::State::waiting) waiting_.erase(&held);
  wheel_.cancel(held);
  if (const auto it = held_.find(std::string_view(held.id)); it != held_.end()) held_.erase(it);
}

void DelayedQueue::arm_front() noexcept {
  if (!started_ || waiting_.empty()) {
    wheel_.cancel(front_timer_);
    return;
  }
  wheel_.schedule_at(front_timer_, wheel_time((*waiting_.begin())->due_us));
}

void DelayedQueue::on_front_timer(TimerEntry& e) { static_cast<Periodic&>(e).owner->claim_due(); }

// Claims, in order, every push due by the wall clock (never early, whatever
// the wall and the loop's clocks did since the timer was armed).
void DelayedQueue::claim_due() {
  const std::int64_t now = now_us();
  std::size_t sent = 0;
  while (started_ && !waiting_.empty() && sent < kClaimsPerTurn) {
    Held& h = **waiting_.begin();
    if (h.due_us > now) break;
    waiting_.erase(waiting_.begin());
    claim(h);
    ++sent;
  }
  if (!started_) return;
  if (sent == kClaimsPerTurn && !waiting_.empty())
    wheel_.schedule_at(front_timer_, wheel_.now());  // the rest at the next tick
  else
    arm_front();
  deliver_in_order();  // a claim the Client refused at once may have unblocked the front
}

// A failed claim's retry: back into the index, claimed at the next turn in
// due order with whatever else is due.
void DelayedQueue::on_retry_due(TimerEntry& e) {
  auto& held = static_cast<Held&>(e);
  DelayedQueue& q = held.queue;
  held.state = Held::State::waiting;
  q.waiting_.insert(&held);
  q.arm_front();
}

// `deliver` may call schedule() and cancel() (never inline callbacks), but
// also stop(): the front is taken out before each delivery, and a stop ends
// the loop (claims_ is then empty).
void DelayedQueue::deliver_in_order() {
  while (!claims_.empty() && claims_.front().state != Claim::State::pending) {
    Claim front = std::move(claims_.front());
    claims_.pop_front();
    ++claims_base_;
    if (front.state == Claim::State::won) deliver(front.push);
  }
}

}  // namespace heartwheel::push
