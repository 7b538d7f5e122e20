// Per-connection request rates of the chat protocol (issue 23,
// `--rate-limit OP=N/s`): one token bucket per connection per op, for
// publish, subscribe, history and presence. A bucket holds at most N tokens
// (at least 1: the burst), refills at N a second, and each request takes one;
// a request that finds its bucket empty is refused (limit_exceeded).
//
// Defaults (generous: a person in a chat page never meets them, a script
// flooding the server does): publish 1000/s, subscribe 200/s, history 50/s,
// presence 50/s.
//
// Memory: a connection's buckets are 20 bytes (one 32-bit refill stamp in
// milliseconds of the loop's clock, four 32-bit fixed-point token counts).
// The worker keeps them in a map by client (requests.cpp), made at a
// connection's first rated request and forgotten once every bucket is full
// again (looked at every --stats-interval) or the connection closes: an idle
// connection pays nothing, not even in chat::Client (whose size is
// asserted); the map's node is a 48-byte malloc chunk.
// Cost per request: one hash lookup, the loop's cached time (uv_now: no
// system call), four multiply-adds.
// Threads: RateLimits is read-only once made (any thread); RateBuckets
// belongs to its worker's loop thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace chat {

enum class RateOp : std::uint8_t { publish, subscribe, history, presence };
inline constexpr std::size_t kRateOps = 4;
// By RateOp; the names of the flag and of the counters (chat.limits "rate_OP").
inline constexpr std::array<std::string_view, kRateOps> kRateOpNames = {"publish", "subscribe",
                                                                        "history", "presence"};

// The op of a request named `name`, or nullopt when it is not rate-limited
// (unsubscribe, refresh).
std::optional<RateOp> rate_op(std::string_view name) noexcept;

class RateLimits {
 public:
  // Rates accepted: from kMinRate to kMaxRate a second.
  static constexpr double kMinRate = 0.001, kMaxRate = 1'000'000;

  RateLimits();  // the defaults above

  // One --rate-limit value, "OP=N/s" (N a positive decimal number, e.g. 5
  // or 0.5); the last one given for an op wins. Throws std::invalid_argument
  // naming --rate-limit and what is wrong.
  void set(std::string_view value);
  // N of `op` (requests a second) and its burst (max(1, floor(N))).
  double per_second(RateOp op) const noexcept { return rate_[index(op)].per_second; }
  std::uint32_t burst(RateOp op) const noexcept { return rate_[index(op)].burst; }
  // "0.5/s", "1000/s": N of `op` as the flag writes it.
  std::string text(RateOp op) const;
  // "publish=1000/s subscribe=200/s ..." (for --help and messages).
  std::string describe() const;

 private:
  friend class RateBuckets;
  static constexpr std::size_t index(RateOp op) noexcept { return static_cast<std::size_t>(op); }
  // A token is `unit` fixed-point units, a millisecond refills units_per_ms
  // (a whole number: refills never round); a full bucket, burst * unit, fits
  // in 32 bits.
  struct Rate {
    double per_second = 0;
    std::uint32_t burst = 1;
    std::uint32_t units_per_ms = 0;
    std::uint32_t unit = 0;
    std::uint32_t capacity = 0;  // burst * unit
  };
  void assign(RateOp op, double per_second) noexcept;
  std::array<Rate, kRateOps> rate_{};
};

// One connection's four buckets. A new one is full.
class RateBuckets {
 public:
  RateBuckets(const RateLimits& limits, std::uint32_t now_ms) noexcept;

  // Refills every bucket up to `now_ms` (the loop's clock, in ms; it may
  // wrap: differences are taken modulo 2^32), then takes one token of `op`.
  // False (nothing taken) when its bucket has less than one.
  bool take(const RateLimits& limits, RateOp op, std::uint32_t now_ms) noexcept;
  // Every bucket would be full at `now_ms` (the entry may be forgotten).
  bool full(const RateLimits& limits, std::uint32_t now_ms) const noexcept;

 private:
  void refill(const RateLimits& limits, std::uint32_t now_ms) noexcept;
  std::uint32_t stamp_ms_;
  std::array<std::uint32_t, kRateOps> tokens_;
};

}  // namespace chat
