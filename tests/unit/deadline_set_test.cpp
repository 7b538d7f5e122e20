// A connection's deadline set on a hand-driven clock: one timer entry covers
// read, write, all idle, request deadlines, max age and the claimed slots of
// the layers above, with lazy or eager refresh.
#include <heartwheel/net/deadline_timer.h>
#include <heartwheel/timer/virtual_clock.h>

#include <catch2/catch.hpp>

#include <cstddef>
#include <functional>
#include <vector>

using namespace std::chrono_literals;
using heartwheel::Duration;
using heartwheel::ManualTimerService;
using heartwheel::TimePoint;
using namespace heartwheel::net;

namespace {

struct Fired {
  DeadlineEvent event;
  TimePoint at;
};

// A DeadlineTimer that records events and, unless told otherwise, keeps going.
class Probe final : public DeadlineTimer {
 public:
  explicit Probe(ManualTimerService& timers) : timers_(timers) {}
  ~Probe() override { stop_deadlines(); }
  std::vector<Fired> fired;
  std::vector<Duration> lateness;
  bool stop_on_event = false;
  std::function<void(Probe&, DeadlineEvent)> on_event;  // runs inside the expiry

 private:
  heartwheel::TimerService& timer_service() const noexcept override { return timers_; }
  void on_timer_fired(Duration late) override { lateness.push_back(late); }
  void on_deadline_event(DeadlineEvent e, TimePoint) override {
    fired.push_back({e, timers_.now()});
    if (stop_on_event) stop_deadlines();
    if (on_event) on_event(*this, e);
  }
  ManualTimerService& timers_;
};

TimePoint at(Duration d) { return TimePoint{} + d; }

// The grid of a 1 ms wheel at the clock's zero, for the set used alone.
constexpr heartwheel::TickScale kScale{TimePoint{}, std::chrono::milliseconds(1)};

// Kinds of imaginary layers (a handshake, a token's expiry, a close wait):
// the set keeps any number from kFirstClaimedDeadline on, named or not.
constexpr Deadline kHandshake{24};
constexpr Deadline kTokenExpiry{25};
constexpr Deadline kCloseWait{26};

}  // namespace

TEST_CASE("Read idle fires once the timeout passed with nothing read", "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy policy{.read_idle = 100ms};
  Probe p(timers);
  p.start_deadlines(policy);
  timers.run_for(99ms);
  CHECK(p.fired.empty());
  timers.run_for(1ms);
  REQUIRE(p.fired.size() == 1);
  CHECK(p.fired[0].event.kind == Deadline::read_idle);
  CHECK(p.fired[0].event.first);
  CHECK(p.fired[0].at == at(100ms));
}

TEST_CASE("Lazy refresh: reads only stamp time, and the entry re-arms when it fires", "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy policy{.read_idle = 100ms, .refresh = RefreshMode::lazy};
  Probe p(timers);
  p.start_deadlines(policy);
  const auto scheduled_before = timers.wheel().stats().scheduled;
  timers.run_for(60ms);
  p.note_read();  // at 60 ms: no reschedule
  CHECK(timers.wheel().stats().scheduled == scheduled_before);
  CHECK(p.armed_for() == at(100ms));
  timers.run_for(40ms);  // the entry fires at 100 ms, finds the read, re-arms for 160 ms
  CHECK(p.fired.empty());
  CHECK(p.armed_for() == at(160ms));
  timers.run_for(60ms);
  REQUIRE(p.fired.size() == 1);
  CHECK(p.fired[0].at == at(160ms));
}

TEST_CASE("Eager refresh moves the entry on every read and fires exactly once", "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy policy{.read_idle = 100ms, .refresh = RefreshMode::eager};
  Probe p(timers);
  p.start_deadlines(policy);
  timers.run_for(60ms);
  p.note_read();
  CHECK(p.armed_for() == at(160ms));
  timers.run_for(99ms);
  CHECK(p.fired.empty());
  timers.run_for(1ms);
  REQUIRE(p.fired.size() == 1);
  CHECK(p.fired[0].at == at(160ms));
}

TEST_CASE("Idle events repeat with first=false and restart after activity (Netty semantics)",
          "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy policy{.write_idle = 50ms};
  Probe p(timers);
  p.start_deadlines(policy);
  timers.run_for(150ms);
  REQUIRE(p.fired.size() == 3);
  CHECK(p.fired[0].event.first);
  CHECK_FALSE(p.fired[1].event.first);
  CHECK_FALSE(p.fired[2].event.first);
  CHECK(p.fired[2].at == at(150ms));
  p.note_write();
  timers.run_for(50ms);
  REQUIRE(p.fired.size() == 4);
  CHECK(p.fired[3].event.first);
}

TEST_CASE("All idle needs both directions silent, and reads do not reset write idle", "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy policy{.write_idle = 100ms, .all_idle = 100ms};
  Probe p(timers);
  p.start_deadlines(policy);
  for (int i = 0; i < 4; ++i) {
    timers.run_for(30ms);
    p.note_read();
  }
  // 120 ms: write idle fired at 100 ms, all idle never (reads kept it alive).
  REQUIRE(p.fired.size() == 1);
  CHECK(p.fired[0].event.kind == Deadline::write_idle);
  timers.run_for(100ms);
  bool all_seen = false;
  for (auto& f : p.fired) all_seen = all_seen || f.event.kind == Deadline::all_idle;
  CHECK(all_seen);
}

TEST_CASE("A request deadline fires request_timeout, ending the request prevents it", "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy policy{.read_idle = 10s};
  Probe p(timers);
  p.start_deadlines(policy);
  p.begin_request(50ms);  // earlier than the armed 10 s: re-armed at once
  CHECK(p.armed_for() == at(50ms));
  CHECK(p.in_request());
  timers.run_for(50ms);
  REQUIRE(p.fired.size() == 1);
  CHECK(p.fired[0].event.kind == Deadline::request_timeout);
  CHECK(p.in_request());  // the handler decides; the deadline is spent
  p.end_request();
  p.begin_request(50ms);
  timers.run_for(20ms);
  p.end_request();
  timers.run_for(100ms);
  CHECK(p.fired.size() == 1);
  CHECK_FALSE(p.in_request());
}

TEST_CASE("Max age fires once, however busy the connection", "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy policy{.read_idle = 40ms, .max_age = 100ms};
  Probe p(timers);
  p.start_deadlines(policy);
  for (int i = 0; i < 10; ++i) {
    timers.run_for(20ms);
    p.note_read();
  }
  REQUIRE(p.fired.size() == 1);
  CHECK(p.fired[0].event.kind == Deadline::max_age);
  CHECK(p.fired[0].at == at(100ms));
}

TEST_CASE("Jitter pushes first deadlines later, never earlier", "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy policy{.read_idle = 100ms};
  std::vector<std::unique_ptr<Probe>> probes;
  for (int i = 0; i < 50; ++i) {
    probes.push_back(std::make_unique<Probe>(timers));
    probes.back()->start_deadlines(policy, Duration(std::chrono::milliseconds(i)));
  }
  timers.run_for(200ms);
  for (int i = 0; i < 50; ++i) {
    REQUIRE(probes[i]->fired.size() >= 1);
    CHECK(probes[i]->fired[0].at == at(100ms + std::chrono::milliseconds(i)));
  }
}

TEST_CASE("Stopping from inside an event delivers nothing more", "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy policy{.read_idle = 50ms, .write_idle = 50ms, .all_idle = 50ms};
  Probe p(timers);
  p.stop_on_event = true;
  p.start_deadlines(policy);
  timers.run_for(500ms);
  CHECK(p.fired.size() == 1);  // read, write and all were due together
  CHECK(timers.wheel().empty());
}

TEST_CASE("A zero policy arms nothing", "[idle]") {
  ManualTimerService timers(1ms);
  IdlePolicy off{};
  Probe p(timers);
  p.start_deadlines(off);
  CHECK(timers.wheel().empty());
  CHECK(p.armed_for() == heartwheel::kNever);
  p.note_read();
  p.note_write();
  timers.run_for(1h);
  CHECK(p.fired.empty());
}

TEST_CASE("The deadline set stays small", "[idle][memory]") {
  // policy, open tick with the rebase count and the flags, 3 anchors, request
  // and write stall, 6 claimed slots (a 32-bit offset and a one-byte kind
  // each): 66 bytes used, 6 of padding an owner's fields may take.
  CHECK(sizeof(detail::DeadlineSet) <= 72);
  // vtable, entry, set (the timer's flags in the set's, its armed time the
  // entry's own tick), and an owner's fields from byte 106 on.
  CHECK(sizeof(DeadlineTimer) <= 112);
  struct Owner : DeadlineTimer {
    std::uint16_t first_field;
  };
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"  // GCC and Clang give the real offset
  CHECK(offsetof(Owner, first_field) <= 106);
#pragma GCC diagnostic pop
}

TEST_CASE("Timer lateness is measured against the tick-rounded deadline", "[idle]") {
  ManualTimerService timers(10ms);  // deadlines round up to the 10 ms tick
  IdlePolicy policy{.read_idle = 15ms};
  Probe p(timers);
  p.start_deadlines(policy);
  // The set keeps ticks: 15 ms is two 10 ms ticks, so the deadline is 20 ms.
  CHECK(p.deadline(Deadline::read_idle) == at(20ms));
  CHECK(p.armed_for() == at(20ms));
  timers.run_for(15ms);
  CHECK(p.fired.empty());  // never early
  timers.run_for(5ms);
  REQUIRE(p.fired.size() == 1);
  REQUIRE(p.lateness.size() == 1);
  CHECK(p.lateness[0] == 0ms);  // the rounding is not the loop's lateness
}

// ---- claimed slots (issues: one deadline set per connection; net knows no
// protocol) --------------------------------------------------------------------

TEST_CASE("A protocol slot fires once at its deadline and is then clear", "[idle][slots]") {
  ManualTimerService timers(1ms);
  IdlePolicy off{};
  Probe p(timers);
  p.start_deadlines(off);
  p.set_timeout(kHandshake, 40ms);
  CHECK(p.deadline(kHandshake) == at(40ms));
  CHECK(timers.wheel().size() == 1);  // one entry for the whole set
  timers.run_for(39ms);
  CHECK(p.fired.empty());
  timers.run_for(1ms);
  REQUIRE(p.fired.size() == 1);
  CHECK(p.fired[0].event.kind == kHandshake);
  CHECK(p.fired[0].at == at(40ms));
  CHECK(p.deadline(kHandshake) == heartwheel::kNever);
  timers.run_for(1h);
  CHECK(p.fired.size() == 1);
  CHECK(timers.wheel().empty());
}

TEST_CASE("Moving a slot earlier re-arms at once, later only stores (lazy)", "[idle][slots]") {
  ManualTimerService timers(1ms);
  IdlePolicy off{};
  Probe p(timers);
  p.start_deadlines(off);
  p.set_timeout(kHandshake, 100ms);
  CHECK(p.armed_for() == at(100ms));
  p.set_timeout(kHandshake, 30ms);  // earlier: the entry moves
  CHECK(p.armed_for() == at(30ms));
  timers.run_for(10ms);
  p.set_timeout(kHandshake, 50ms);  // later (60 ms): the entry stays at 30 ms
  CHECK(p.armed_for() == at(30ms));
  const auto scheduled_before = timers.wheel().stats().scheduled;
  timers.run_for(20ms);  // fires at 30, finds nothing due, re-arms for 60
  CHECK(p.fired.empty());
  CHECK(p.armed_for() == at(60ms));
  CHECK(timers.wheel().stats().scheduled == scheduled_before + 1);
  timers.run_for(30ms);
  REQUIRE(p.fired.size() == 1);
  CHECK(p.fired[0].event.kind == kHandshake);
  CHECK(p.fired[0].at == at(60ms));
}

TEST_CASE("Eager refresh moves the entry on every slot change", "[idle][slots]") {
  ManualTimerService timers(1ms);
  IdlePolicy eager{.refresh = RefreshMode::eager};
  Probe p(timers);
  p.start_deadlines(eager);
  p.set_timeout(kTokenExpiry, 30ms);
  CHECK(p.armed_for() == at(30ms));
  p.set_timeout(kTokenExpiry, 80ms);
  CHECK(p.armed_for() == at(80ms));
  p.clear_deadline(kTokenExpiry);
  CHECK(p.armed_for() == heartwheel::kNever);
  CHECK(timers.wheel().empty());
}

TEST_CASE("A cleared slot does not fire (lazy: the entry wakes once and disarms)",
          "[idle][slots]") {
  ManualTimerService timers(1ms);
  IdlePolicy off{};
  Probe p(timers);
  p.start_deadlines(off);
  p.set_timeout(Deadline::pong_timeout, 20ms);
  p.clear_deadline(Deadline::pong_timeout);
  CHECK(p.deadline(Deadline::pong_timeout) == heartwheel::kNever);
  timers.run_for(1s);
  CHECK(p.fired.empty());
  CHECK(timers.wheel().empty());
}

TEST_CASE("Two slots due in the same tick both fire, in kind order", "[idle][slots]") {
  ManualTimerService timers(10ms);
  IdlePolicy policy{.read_idle = 50ms};
  Probe p(timers);
  p.start_deadlines(policy);
  p.set_timeout(kCloseWait, 43ms);  // rounds up to the 50 ms tick
  p.set_timeout(Deadline::pong_timeout, 47ms);
  timers.run_for(50ms);
  REQUIRE(p.fired.size() == 3);
  CHECK(p.fired[0].event.kind == Deadline::read_idle);
  CHECK(p.fired[1].event.kind == Deadline::pong_timeout);
  CHECK(p.fired[2].event.kind == kCloseWait);
  CHECK(timers.wheel().size() == 1);  // read idle repeats; still one entry
}

TEST_CASE("A slot set again from inside its own expiry fires again later", "[idle][slots]") {
  ManualTimerService timers(1ms);
  IdlePolicy off{};
  Probe p(timers);
  p.on_event = [](Probe& self, DeadlineEvent e) {
    if (e.kind == Deadline::ping && self.fired.size() < 3) self.set_timeout(Deadline::ping, 25ms);
  };
  p.start_deadlines(off);
  p.set_timeout(Deadline::ping, 25ms);
  timers.run_for(1s);
  REQUIRE(p.fired.size() == 3);
  CHECK(p.fired[0].at == at(25ms));
  CHECK(p.fired[1].at == at(50ms));
  CHECK(p.fired[2].at == at(75ms));
  CHECK(timers.wheel().empty());
}

TEST_CASE("A slot set into the past from its own expiry cannot spin", "[idle][slots]") {
  ManualTimerService timers(1ms);
  IdlePolicy off{};
  Probe p(timers);
  int calls = 0;
  p.on_event = [&](Probe& self, DeadlineEvent) {
    if (++calls < 1000) self.set_deadline(Deadline::ping, timers.now());
  };
  p.start_deadlines(off);
  p.set_timeout(Deadline::ping, 5ms);
  // One expiry (one advance of the wheel) runs a bounded number of events;
  // the rest come at later advances, each after the loop polled again.
  timers.wheel().advance(at(5ms));
  CHECK(calls >= 1);
  CHECK(calls <= 2 * static_cast<int>(detail::DeadlineSet::kSlots));
  CHECK(p.armed_for() <= at(5ms));  // still due: it runs at the next advance
}

TEST_CASE("Protocol slots and idle slots share the entry and the earliest wins", "[idle][slots]") {
  ManualTimerService timers(1ms);
  IdlePolicy policy{.read_idle = 200ms};
  Probe p(timers);
  p.start_deadlines(policy);
  p.set_timeout(kHandshake, 50ms);
  CHECK(p.armed_for() == at(50ms));
  p.begin_request(30ms);
  CHECK(p.armed_for() == at(30ms));
  timers.run_for(200ms);
  REQUIRE(p.fired.size() == 3);
  CHECK(p.fired[0].event.kind == Deadline::request_timeout);
  CHECK(p.fired[1].event.kind == kHandshake);
  CHECK(p.fired[2].event.kind == Deadline::read_idle);
  CHECK(p.in_request());  // a request stays in flight until ended
}

TEST_CASE("Kinds claim free slots, give them back when cleared or fired", "[idle][slots]") {
  IdlePolicy off{};
  detail::DeadlineSet set;
  set.start(off, TimePoint{}, kScale);
  CHECK(set.claimed() == 0);
  CHECK(set.set(kHandshake, at(30ms), TimePoint{}, kScale));
  CHECK(set.set(Deadline::ping, at(20ms), TimePoint{}, kScale));
  CHECK(set.set(kTokenExpiry, at(10ms), TimePoint{}, kScale));
  CHECK(set.claimed() == 3);
  CHECK(set.set(kHandshake, at(40ms), TimePoint{}, kScale));  // moved in its own slot
  CHECK(set.claimed() == 3);
  CHECK(set.at(kHandshake, kScale) == at(40ms));
  CHECK(set.next_deadline(kScale) == at(10ms));
  set.clear(Deadline::ping);
  CHECK(set.claimed() == 2);
  CHECK(set.at(Deadline::ping, kScale) == heartwheel::kNever);
  const auto e = set.take_due(at(10ms), kScale);
  REQUIRE(e);
  CHECK(e->kind == kTokenExpiry);
  CHECK(set.claimed() == 1);  // a fired kind gives its slot back
  CHECK_FALSE(set.take_due(at(10ms), kScale));
  CHECK(set.next_deadline(kScale) == at(40ms));
  // Clearing a kind that holds no slot is a no-op.
  set.clear(kCloseWait);
  CHECK(set.claimed() == 1);
}

TEST_CASE("Due claimed slots come out by kind number, whatever the claim order",
          "[idle][slots]") {
  detail::DeadlineSet set;
  IdlePolicy off{};
  set.start(off, TimePoint{}, kScale);
  REQUIRE(set.set(kCloseWait, at(5ms), TimePoint{}, kScale));
  REQUIRE(set.set(kHandshake, at(7ms), TimePoint{}, kScale));
  REQUIRE(set.set(Deadline::pong_timeout, at(9ms), TimePoint{}, kScale));
  std::vector<Deadline> order;
  while (const auto e = set.take_due(at(10ms), kScale)) order.push_back(e->kind);
  CHECK(order == std::vector<Deadline>{Deadline::pong_timeout, kHandshake, kCloseWait});
}

TEST_CASE("A full set refuses a new kind and changes nothing, moving and clearing still work",
          "[idle][slots]") {
  ManualTimerService timers(1ms);
  IdlePolicy off{};
  Probe p(timers);
  p.start_deadlines(off);
  // Every claimed slot taken: net's two heartbeat kinds and four layers'.
  REQUIRE(p.set_timeout(Deadline::ping, 10ms));
  REQUIRE(p.set_timeout(Deadline::pong_timeout, 20ms));
  for (std::uint8_t k = 24; k < 28; ++k) REQUIRE(p.set_timeout(Deadline{k}, 30ms + k * 1ms));
  CHECK(p.deadlines().claimed() == detail::DeadlineSet::kClaimedSlots);
  CHECK_FALSE(p.set_timeout(Deadline{28}, 5ms));  // no room
  CHECK(p.deadline(Deadline{28}) == heartwheel::kNever);
  CHECK(p.armed_for() == at(10ms));  // not moved by the refused deadline
  // The absolute slots of net's own are fixed, never refused.
  p.begin_request(100ms);
  CHECK(p.set_deadline(Deadline::write_stall, at(200ms)));
  CHECK(p.set_timeout(Deadline::ping, 15ms));  // a kind in a slot may move
  CHECK(p.set_deadline(Deadline{28}, heartwheel::kNever));  // clearing is never refused
  p.clear_deadline(Deadline{24});
  CHECK(p.set_timeout(Deadline{28}, 5ms));  // a slot is free again
  timers.run_for(300ms);
  std::vector<Deadline> kinds;
  for (const auto& f : p.fired) kinds.push_back(f.event.kind);
  CHECK(kinds == std::vector<Deadline>{Deadline{28}, Deadline::ping, Deadline::pong_timeout,
                                       Deadline{25}, Deadline{26}, Deadline{27},
                                       Deadline::request_timeout, Deadline::write_stall});
  CHECK(p.deadlines().claimed() == 0);
}

// ---- "never" (issue: deadline arithmetic overflows) ------------------------

TEST_CASE("A huge timeout means never instead of wrapping into the past", "[idle][never]") {
  ManualTimerService timers(1ms, TimePoint{} + 5s);
  IdlePolicy policy{.read_idle = Duration::max(), .write_idle = Duration::max() - 1ns,
                    .all_idle = Duration::max(), .max_age = Duration::max()};
  Probe p(timers);
  p.start_deadlines(policy);
  p.begin_request(Duration::max());
  p.set_timeout(kHandshake, Duration::max());
  CHECK(p.deadline(Deadline::read_idle) == heartwheel::kNever);
  CHECK(p.deadline(kHandshake) == heartwheel::kNever);
  CHECK(p.armed_for() == heartwheel::kNever);
  timers.run_for(24h);
  CHECK(p.fired.empty());
}

TEST_CASE("deadline_after saturates and treats <= 0 as off", "[idle][never]") {
  using heartwheel::deadline_after;
  using heartwheel::kNever;
  const TimePoint now = TimePoint{} + 1h;
  CHECK(deadline_after(now, 5s) == now + 5s);
  CHECK(deadline_after(now, Duration{0}) == kNever);
  CHECK(deadline_after(now, -5s) == kNever);
  CHECK(deadline_after(now, Duration::max()) == kNever);
  CHECK(deadline_after(kNever, 1ns) == kNever);
  CHECK(deadline_after(TimePoint{} - 1h, Duration::max()) < kNever);  // no overflow below zero
}

// ---- 32-bit ticks (issue 26): rounding and rebasing ------------------------

TEST_CASE("Deadlines off the tick grid round up: never early, at most one tick late",
          "[idle][ticks]") {
  // A 10 ms tick, a clock that starts off the grid, deadlines at odd times.
  ManualTimerService timers(10ms, TimePoint{} + 3ms);
  IdlePolicy policy{.read_idle = 100ms};  // a whole number of ticks
  Probe p(timers);
  p.start_deadlines(policy);
  timers.run_for(4ms);  // 7 ms: activity between two ticks
  p.note_read();
  // What the set reports is on the grid (3, 13, 23 ms ...), not before the truth.
  CHECK(p.deadlines().read_anchor(p.scale()) == at(13ms));
  p.set_timeout(kHandshake, 27ms);  // due at 34 ms
  for (int step = 0; step < 200; ++step) timers.run_for(1ms);
  REQUIRE(p.fired.size() >= 2);
  CHECK(p.fired[0].event.kind == kHandshake);
  CHECK(p.fired[0].at >= at(34ms));       // never early
  CHECK(p.fired[0].at <= at(34ms) + 10ms);  // at most one tick late (43 ms)
  CHECK(p.fired[1].event.kind == Deadline::read_idle);
  CHECK(p.fired[1].at >= at(107ms));  // the read at 7 ms + 100 ms
  CHECK(p.fired[1].at <= at(107ms) + 10ms);
}

TEST_CASE("A connection that lives past 2^32 ticks is rebased and keeps its deadlines right",
          "[idle][ticks]") {
  // A 1 us tick: 2^32 ticks are 72 minutes of virtual time.
  ManualTimerService timers(1us);
  IdlePolicy policy{.read_idle = 10min, .max_age = 5h};
  Probe p(timers);
  p.start_deadlines(policy);
  const TimePoint opened = timers.now();
  // Reads every 5 minutes for 3 hours: about 2.5 * 2^32 ticks, several rebases.
  for (int i = 0; i < 36; ++i) {
    timers.run_for(5min);
    p.note_read();
  }
  CHECK(p.fired.empty());
  const TimePoint last = timers.now();
  CHECK(p.deadlines().read_anchor(p.scale()) == last);
  CHECK(p.deadlines().opened_at(p.scale()) == opened);
  // A layer's deadline set now, far past 2^32 ticks after the open tick.
  p.set_timeout(kHandshake, 90s);
  CHECK(p.deadline(kHandshake) == last + 90s);
  CHECK(p.deadline(Deadline::read_idle) == last + 10min);
  timers.run_for(90s);
  REQUIRE(p.fired.size() == 1);
  CHECK(p.fired[0].event.kind == kHandshake);
  CHECK(p.fired[0].at == last + 90s);
  timers.run_for(10min - 90s);
  REQUIRE(p.fired.size() == 2);
  CHECK(p.fired[1].event.kind == Deadline::read_idle);
  CHECK(p.fired[1].at == last + 10min);
  // Silent from here: read idle repeats every 10 minutes, max age at 5 h.
  timers.run_for(5h - (timers.now() - opened));
  REQUIRE(!p.fired.empty());
  CHECK(p.fired.back().event.kind == Deadline::max_age);
  CHECK(p.fired.back().at == opened + 5h);
  for (std::size_t i = 2; i + 1 < p.fired.size(); ++i) {
    CHECK(p.fired[i].event.kind == Deadline::read_idle);
    CHECK(p.fired[i].at == last + 10min * static_cast<int>(i));
  }
}

TEST_CASE("A deadline far beyond 32 bits of ticks comes late by a bounded amount, never early",
          "[idle][ticks]") {
  ManualTimerService timers(1us);
  IdlePolicy off{};
  Probe p(timers);
  p.start_deadlines(off);
  // 3 hours at 1 us: 10.8e9 ticks ahead, past the exact range.
  p.set_timeout(kTokenExpiry, 3h);
  const TimePoint due = timers.now() + 3h;
  CHECK(p.deadline(kTokenExpiry) >= due);
  CHECK(p.deadline(kTokenExpiry) <= due + (1 << 22) * 1us);
  timers.run_for(3h - 1ms);
  CHECK(p.fired.empty());
  timers.run_for(1ms + (1 << 22) * 1us);
  REQUIRE(p.fired.size() == 1);
  CHECK(p.fired[0].event.kind == kTokenExpiry);
  CHECK(p.fired[0].at >= due);
}
