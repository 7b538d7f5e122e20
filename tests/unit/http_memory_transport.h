// An http::Transport in memory: it records what the session sent, and keeps
// the session's deadlines in a net::DeadlineTimer on a ManualTimerService (the
// very deadline set a net::Connection uses), passing each due slot to
// Session::on_deadline. What a test or a fuzzer needs to drive a Session
// without sockets. No Catch2 here, so a fuzz target can include it.
#pragma once

#include <heartwheel/http/session.h>
#include <heartwheel/net/deadline_timer.h>
#include <heartwheel/timer/virtual_clock.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace http_test {

class MemoryTransport final : public heartwheel::http::Transport,
                              private heartwheel::net::DeadlineTimer {
 public:
  // `refresh`: how the deadline set re-arms its one entry (as a connection's
  // IdlePolicy says); both must give the same timings.
  explicit MemoryTransport(
      heartwheel::ManualTimerService& timers,
      heartwheel::net::RefreshMode refresh = heartwheel::net::RefreshMode::eager)
      : service_(timers) {
    policy_.refresh = refresh;
    start_deadlines(policy_);
  }
  ~MemoryTransport() { stop_deadlines(); }

  // The session the deadline events go to (nullptr: none).
  void attach(heartwheel::http::Session* session) noexcept { session_ = session; }

  void send(std::string_view head, std::string_view body) override {
    out.append(head);
    out.append(body);
  }
  // Recorded by identity: the buffer the session handed on, not a copy.
  void send_shared(std::string_view head, std::shared_ptr<const std::string> body) override {
    ++shared_sends;
    last_shared = body.get();
    send(head, *body);
  }
  void close(CloseMode mode, heartwheel::net::CloseReason reason) override {
    ++closes;
    last_mode = mode;
    reason_ = reason;
  }
  void set_reading(bool on) override { reading = on; }
  // With `turns` on, the session may yield (SessionOptions::pipeline_burst);
  // give_turn() is the loop's later turn.
  bool yield_turn() override {
    if (!turns) return false;
    ++yields;
    return true;
  }
  void give_turn() {
    if (session_ != nullptr) session_->on_writable(true);
  }
  bool writable() const noexcept override { return writable_; }
  heartwheel::TimerService& timers() noexcept override { return service_; }
  void set_deadline(heartwheel::net::Deadline slot, heartwheel::TimePoint when) override {
    ++deadline_calls;
    DeadlineTimer::set_deadline(slot, when);
  }
  void begin_request(heartwheel::Duration timeout) override {
    ++deadline_calls;
    DeadlineTimer::begin_request(timeout);
  }
  void end_request() override {
    ++deadline_calls;
    DeadlineTimer::end_request();
  }
  // Records the hand-off (the session stays alive; a connection would now
  // belong to `next`).
  void switch_protocols(heartwheel::http::UpgradeHandler take_over, std::string rest) override {
    ++switches;
    upgrade_next = std::move(take_over);
    upgrade_rest = std::move(rest);
  }

  // What a connection would do when its queue crosses a watermark.
  void set_writable(bool on) {
    writable_ = on;
    if (session_ != nullptr) session_->on_writable(on);
  }

  using DeadlineTimer::deadline;
  using DeadlineTimer::in_request;
  // The earliest deadline any slot holds (kNever: nothing set).
  heartwheel::TimePoint next_deadline() const noexcept { return deadlines().next_deadline(scale()); }
  std::optional<heartwheel::net::CloseReason> reason() const noexcept { return reason_; }

  std::string out;
  int shared_sends = 0;                      // send_shared calls
  const std::string* last_shared = nullptr;  // the buffer of the last one
  int closes = 0;
  CloseMode last_mode = CloseMode::kAfterFlush;
  bool reading = true;
  bool turns = false;
  int yields = 0;          // yield_turn calls while `turns`
  int switches = 0;        // switch_protocols calls
  int deadline_calls = 0;  // set_deadline, begin_request and end_request calls
  heartwheel::http::UpgradeHandler upgrade_next;
  std::string upgrade_rest;

 private:
  heartwheel::TimerService& timer_service() const noexcept override { return service_; }
  void on_deadline_event(heartwheel::net::DeadlineEvent event, heartwheel::TimePoint) override {
    if (session_ == nullptr) return;
    if (session_->on_deadline(event.kind) == heartwheel::net::DeadlineAction::close) {
      ++closes;  // the owner closes, as net::Connection would
      reason_ = heartwheel::net::close_reason_for(event.kind);
    }
  }

  heartwheel::ManualTimerService& service_;
  heartwheel::net::IdlePolicy policy_;
  heartwheel::http::Session* session_ = nullptr;
  std::optional<heartwheel::net::CloseReason> reason_;
  bool writable_ = true;
};

}  // namespace http_test
