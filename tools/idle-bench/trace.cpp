#include "trace.h"

#include <algorithm>
#include <random>
#include <stdexcept>

namespace heartwheel::bench {

namespace {
// A random permutation of the active connections, reshuffled when used up.
class Stream {
 public:
  void reset(const std::vector<std::uint32_t>& active, std::mt19937_64& rng) {
    order_ = active;
    std::shuffle(order_.begin(), order_.end(), rng);
    pos_ = 0;
  }
  std::uint32_t next(std::mt19937_64& rng) {
    if (pos_ == order_.size()) {
      std::shuffle(order_.begin(), order_.end(), rng);
      pos_ = 0;
    }
    return order_[pos_++];
  }

 private:
  std::vector<std::uint32_t> order_;
  std::size_t pos_ = 0;
};
}  // namespace

Trace make_trace(const TraceConfig& cfg) {
  if (cfg.connections == 0 || cfg.connections > Trace::kConnMask)
    throw std::invalid_argument("connections must be between 1 and 2^30 - 1");
  if (cfg.reads_per_sec <= 0 || cfg.writes_per_sec <= 0)
    throw std::invalid_argument("read and write rates must be positive");
  Trace t;
  std::mt19937_64 rng(cfg.seed);
  t.silent.assign(cfg.connections, 0);
  {
    std::vector<std::uint32_t> all(cfg.connections);
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint32_t>(i);
    std::shuffle(all.begin(), all.end(), rng);
    t.silent_count = static_cast<std::size_t>(cfg.silent_fraction * static_cast<double>(cfg.connections));
    for (std::size_t i = 0; i < t.silent_count; ++i) t.silent[all[i]] = 1;
  }
  std::vector<std::uint32_t> active(cfg.connections);
  for (std::size_t i = 0; i < active.size(); ++i) active[i] = static_cast<std::uint32_t>(i);
  Stream reads, writes;
  reads.reset(active, rng);
  writes.reset(active, rng);

  const double reads_per_ms = cfg.reads_per_sec * static_cast<double>(cfg.connections) / 1000.0;
  const double writes_per_ms = cfg.writes_per_sec * static_cast<double>(cfg.connections) / 1000.0;
  t.events.reserve(static_cast<std::size_t>((reads_per_ms + writes_per_ms) * static_cast<double>(cfg.steps_ms)) + 16);
  t.step_end.push_back(0);
  std::bernoulli_distribution begin_request(cfg.request_fraction);
  double read_debt = 0, write_debt = 0;  // fractional events carried to the next step
  for (std::size_t step = 1; step <= cfg.steps_ms; ++step) {
    if (step == cfg.warmup_ms + 1 && t.silent_count > 0) {
      active.erase(std::remove_if(active.begin(), active.end(), [&](std::uint32_t c) { return t.silent[c] != 0; }),
                   active.end());
      if (active.empty()) throw std::invalid_argument("silent fraction leaves no active connection");
      reads.reset(active, rng);
      writes.reset(active, rng);
    }
    read_debt += reads_per_ms;
    write_debt += writes_per_ms;
    const auto r = static_cast<std::size_t>(read_debt);
    const auto w = static_cast<std::size_t>(write_debt);
    read_debt -= static_cast<double>(r);
    write_debt -= static_cast<double>(w);
    // Interleave r reads and w writes evenly (Bresenham style).
    std::size_t done_r = 0, done_w = 0;
    for (std::size_t e = 0; e < r + w; ++e) {
      const bool write = done_w < w && (done_r == r || done_w * (r + w) <= e * w);
      if (write) {
        t.events.push_back(writes.next(rng) | Trace::kWrite);
        ++done_w;
      } else {
        std::uint32_t ev = reads.next(rng);
        if (begin_request(rng)) ev |= Trace::kBeginRequest;
        t.events.push_back(ev);
        ++done_r;
      }
    }
    t.reads += r;
    t.writes += w;
    t.step_end.push_back(t.events.size());
  }
  return t;
}

}  // namespace heartwheel::bench
