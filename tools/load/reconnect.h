// tools/load/reconnect.h - `--auto-reconnect`: every connection comes back after
// the server closes it (or a connect fails), after an exponential backoff
// with jitter, like a fleet of real clients after a server restart.
//
// The delay is net::ConnectorOptions::backoff()'s (the library's client uses
// the same formula): delay(n) = min(max, initial x multiplier^(n-1)) for the
// n-th consecutive failure (n = 1 after a close of an open connection), then
// reduced by a random 0..jitter fraction. jitter 1 is "full jitter" (uniform
// in 0..delay), 0 is lockstep. The failure count resets when a connection
// the server closes had stayed open for `stable`; one closed sooner (a server
// that accepts and closes at once, at its descriptor or connection limit)
// counts as one more failure, so such clients back off instead of
// reconnecting every `initial`. Reconnects bypass --connect-rate and --max-pending-connects: each
// client decides alone, as real clients do.
//
// ReconnectStats is what a run measured, mergeable like LoadResult: per
// second since the worker's start (the supervisor forks every worker at
// once, so the seconds line up), the attempts, the reconnects that succeeded,
// the failed attempts and the server's closes; plus when the first
// connection was lost and when the last lost one was back.
//
// Threads: a worker's loop thread; the supervisor merges after the run.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace heartwheel::load {

struct ReconnectOptions {
  bool enabled = false;
  std::chrono::nanoseconds initial = std::chrono::milliseconds(100);
  std::chrono::nanoseconds max = std::chrono::seconds(30);
  double multiplier = 2.0;
  double jitter = 0.2;  // the fraction of each delay removed at random (net::Connector's default)
  // A connection the server closes sooner than this after it opened counts
  // as a failed attempt: the backoff keeps growing instead of resetting (a
  // server at its limit accepts and closes at once; 0 = reset on every open).
  std::chrono::nanoseconds stable = std::chrono::seconds(1);

  // Throws std::invalid_argument naming the flag.
  void validate() const;
  // The wait before the next attempt after `failures` (>= 1) consecutive
  // failures, jittered with `rng`.
  std::chrono::nanoseconds delay(unsigned failures, std::mt19937_64& rng) const;
};

struct ReconnectStats {
  using Series = std::vector<std::uint64_t>;  // index: second since the worker started
  Series attempts_per_s, reconnects_per_s, failures_per_s, losses_per_s;
  std::uint64_t attempts = 0, reconnects = 0, failures = 0, losses = 0;
  std::uint64_t short_lived = 0;                // losses sooner than `stable` after the open
  std::map<std::string, std::uint64_t> errors;  // failed attempts by errno name
  std::uint64_t first_loss_ms = 0;  // 0: nothing lost; else ms since start (min over workers)
  std::uint64_t all_back_ms = 0;    // last time every lost connection was open again (max)
  std::uint64_t down_at_end = 0;    // lost and not back when the run stopped
  std::uint64_t max_down = 0;       // most connections down at once (per worker, summed)

  static void count(Series& s, std::uint64_t second);
  // Adds `from` into `into` second by second (`into` grows to fit).
  static void add(Series& into, const Series& from);
  void merge(const ReconnectStats& other);
  nlohmann::json to_json() const;  // lossless, also the report block
  static ReconnectStats from_json(const nlohmann::json& j);
};

}  // namespace heartwheel::load
