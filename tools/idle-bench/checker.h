// checker.h - the ground truth every idle tracker is checked against.
//
// The simulation records each connection's real last read, last write and
// request start here (the same stores for every variant, so their cost cancels
// in the comparison). Each close and each request timeout a variant reports is
// checked on the spot: never before the truth says it is due, and less than
// one wheel tick plus one 1-ms step after. At the end, every connection or
// request that is overdue by more than that counts as missed, and every close
// of a connection that was never silent counts as a wrongly closed active one.
// A fast but wrong variant therefore shows errors in its output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <heartwheel/common/time.h>

namespace heartwheel::bench {

struct Truth {
  TimePoint last_read{};
  TimePoint last_write{};
  TimePoint request_begin{};
  bool in_request = false;
  bool closed = false;
};

struct CheckCounts {
  std::size_t closed_silent = 0;
  std::size_t closed_active = 0;   // error
  std::size_t early = 0;           // error: fired before due
  std::size_t late = 0;            // error: fired more than tick + step after due
  std::size_t missed = 0;          // error: still open / in flight though overdue at the end
  std::size_t request_timeouts = 0;
  std::size_t stale_request = 0;   // error: timeout of a request that had ended
  Duration max_lateness{0};
  std::size_t errors() const { return closed_active + early + late + missed + stale_request; }
};

class Checker {
 public:
  Checker(std::size_t connections, const std::vector<std::uint8_t>& silent, Duration read_idle,
          Duration write_idle, Duration request_timeout, Duration tolerance)
      : truth_(connections), silent_(silent), read_idle_(read_idle), write_idle_(write_idle),
        request_timeout_(request_timeout), tolerance_(tolerance) {}

  Truth& operator[](std::size_t c) noexcept { return truth_[c]; }
  std::size_t size() const noexcept { return truth_.size(); }

  TimePoint close_due(std::size_t c) const noexcept {
    return std::min(truth_[c].last_read + read_idle_, truth_[c].last_write + write_idle_);
  }
  // A variant closed connection c at `now` because an idle entry expired.
  void on_close(std::size_t c, TimePoint now) noexcept {
    Truth& t = truth_[c];
    check_time(close_due(c), now);
    t.closed = true;
    t.in_request = false;
    if (silent_[c]) ++counts_.closed_silent;
    else ++counts_.closed_active;
  }
  // A variant's request entry for c expired at `now`.
  void on_request_timeout(std::size_t c, TimePoint now) noexcept {
    Truth& t = truth_[c];
    if (!t.in_request) {
      ++counts_.stale_request;
      return;
    }
    check_time(t.request_begin + request_timeout_, now);
    t.in_request = false;
    ++counts_.request_timeouts;
  }
  // After the run: whatever is overdue by more than the tolerance was missed.
  void finish(TimePoint end) noexcept {
    for (std::size_t c = 0; c < truth_.size(); ++c) {
      const Truth& t = truth_[c];
      if (t.closed) continue;
      if (close_due(c) + tolerance_ <= end) ++counts_.missed;
      if (t.in_request && t.request_begin + request_timeout_ + tolerance_ <= end) ++counts_.missed;
    }
  }
  const CheckCounts& counts() const noexcept { return counts_; }

 private:
  void check_time(TimePoint due, TimePoint now) noexcept {
    if (now < due) {
      ++counts_.early;
      return;
    }
    const Duration late = now - due;
    if (late >= tolerance_) ++counts_.late;
    if (late > counts_.max_lateness) counts_.max_lateness = late;
  }

  std::vector<Truth> truth_;
  const std::vector<std::uint8_t>& silent_;
  Duration read_idle_, write_idle_, request_timeout_, tolerance_;
  CheckCounts counts_;
};

}  // namespace heartwheel::bench
