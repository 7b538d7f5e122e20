// See rate_limits.h.
#include "rate_limits.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace chat {

namespace {
constexpr std::uint32_t kFullScale = std::numeric_limits<std::uint32_t>::max();

std::invalid_argument bad(std::string_view value, const std::string& why) {
  return std::invalid_argument("--rate-limit '" + std::string(value) + "': " + why +
                               " (the form is OP=N/s, OP one of publish, subscribe, history, "
                               "presence; e.g. publish=20/s or history=0.5/s)");
}
}  // namespace

std::optional<RateOp> rate_op(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kRateOps; ++i)
    if (kRateOpNames[i] == name) return static_cast<RateOp>(i);
  return std::nullopt;
}

RateLimits::RateLimits() {
  assign(RateOp::publish, 1000);
  assign(RateOp::subscribe, 200);
  assign(RateOp::history, 50);
  assign(RateOp::presence, 50);
}

void RateLimits::assign(RateOp op, double per_second) noexcept {
  Rate& r = rate_[index(op)];
  r.per_second = per_second;
  r.burst = static_cast<std::uint32_t>(std::max(1.0, std::floor(per_second)));
  // Fixed point with a whole number of units refilled per millisecond, so
  // that refills add up exactly however often they happen (a refill every
  // millisecond loses nothing to rounding). The largest such step whose
  // full bucket still fits in 32 bits; a token is then unit units (rounded
  // down: the rate is at most 1/4000 above N).
  r.units_per_ms = static_cast<std::uint32_t>(
      std::floor(static_cast<double>(kFullScale) * per_second / (static_cast<double>(r.burst) * 1000.0)));
  r.unit = static_cast<std::uint32_t>(std::floor(static_cast<double>(r.units_per_ms) * 1000.0 / per_second));
  r.capacity = r.burst * r.unit;
}

void RateLimits::set(std::string_view value) {
  const std::size_t eq = value.find('=');
  if (eq == std::string_view::npos) throw bad(value, "no '='");
  const std::optional<RateOp> op = rate_op(value.substr(0, eq));
  if (!op) throw bad(value, "unknown op '" + std::string(value.substr(0, eq)) + "'");
  std::string_view rate = value.substr(eq + 1);
  if (rate.size() < 2 || rate.substr(rate.size() - 2) != "/s")
    throw bad(value, "the rate must end in /s");
  rate.remove_suffix(2);
  double n = 0;
  const auto [end, ec] = std::from_chars(rate.data(), rate.data() + rate.size(), n);
  if (ec != std::errc{} || end != rate.data() + rate.size() || rate.empty() || !std::isfinite(n))
    throw bad(value, "'" + std::string(rate) + "' is not a number");
  if (n < kMinRate || n > kMaxRate)
    throw bad(value, "N must be from 0.001 to 1000000 (requests a second)");
  assign(*op, n);
}

std::string RateLimits::text(RateOp op) const {
  char n[32];
  std::snprintf(n, sizeof n, "%g/s", per_second(op));
  return n;
}

std::string RateLimits::describe() const {
  std::string out;
  for (std::size_t i = 0; i < kRateOps; ++i)
    out += (i ? " " : "") + std::string(kRateOpNames[i]) + "=" + text(static_cast<RateOp>(i));
  return out;
}

RateBuckets::RateBuckets(const RateLimits& limits, std::uint32_t now_ms) noexcept
    : stamp_ms_(now_ms) {
  for (std::size_t i = 0; i < kRateOps; ++i) tokens_[i] = limits.rate_[i].capacity;
}

void RateBuckets::refill(const RateLimits& limits, std::uint32_t now_ms) noexcept {
  const std::uint32_t elapsed = now_ms - stamp_ms_;  // modulo 2^32: the clock may wrap
  if (elapsed == 0) return;  // several requests in one loop iteration: no work
  stamp_ms_ = now_ms;
  for (std::size_t i = 0; i < kRateOps; ++i) {
    const RateLimits::Rate& r = limits.rate_[i];
    const std::uint64_t add = std::uint64_t{elapsed} * r.units_per_ms;
    tokens_[i] = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(r.capacity, std::uint64_t{tokens_[i]} + add));
  }
}

bool RateBuckets::take(const RateLimits& limits, RateOp op, std::uint32_t now_ms) noexcept {
  refill(limits, now_ms);
  const std::uint32_t unit = limits.rate_[RateLimits::index(op)].unit;
  std::uint32_t& tokens = tokens_[RateLimits::index(op)];
  if (tokens < unit) return false;
  tokens -= unit;
  return true;
}

bool RateBuckets::full(const RateLimits& limits, std::uint32_t now_ms) const noexcept {
  RateBuckets then = *this;
  then.refill(limits, now_ms);
  for (std::size_t i = 0; i < kRateOps; ++i)
    if (then.tokens_[i] < limits.rate_[i].capacity) return false;
  return true;
}

}  // namespace chat

