// See heartwheel/net/picker.h.
#include <heartwheel/net/picker.h>
#include <uv.h>

namespace heartwheel::net {

namespace {

class RoundRobin final : public Picker {
 public:
  std::size_t pick(std::span<const EndpointLoad> candidates) noexcept override {
    // Follows the endpoints, not the list positions: when the list changes
    // (one ejected, one back) the turn goes on from the last endpoint
    // picked instead of starting over.
    std::size_t best = 0;
    bool found = false;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i].endpoint > last_ &&
          (!found || candidates[i].endpoint < candidates[best].endpoint)) {
        best = i;
        found = true;
      }
    }
    if (!found) {  // wrap around: the lowest endpoint
      for (std::size_t i = 1; i < candidates.size(); ++i)
        if (candidates[i].endpoint < candidates[best].endpoint) best = i;
    }
    last_ = candidates[best].endpoint;
    return best;
  }

 private:
  std::size_t last_ = static_cast<std::size_t>(-1);
};

class PowerOfTwo final : public Picker {
 public:
  explicit PowerOfTwo(std::uint64_t seed) noexcept
      : state_(seed ? seed : (uv_hrtime() ^ 0x9e3779b97f4a7c15ULL) | 1) {}

  std::size_t pick(std::span<const EndpointLoad> candidates) noexcept override {
    const std::size_t n = candidates.size();
    if (n == 1) return 0;
    const std::size_t a = static_cast<std::size_t>(next() % n);
    std::size_t b = static_cast<std::size_t>(next() % (n - 1));
    if (b >= a) ++b;  // two distinct candidates
    return candidates[b].in_flight < candidates[a].in_flight ? b : a;
  }

 private:
  std::uint64_t next() noexcept {  // xorshift64
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return state_;
  }
  std::uint64_t state_;
};

}  // namespace

const char* to_string(Balance balance) noexcept {
  return balance == Balance::round_robin ? "round-robin" : "p2c";
}

bool parse_balance(std::string_view text, Balance& out) noexcept {
  if (text == "round-robin") {
    out = Balance::round_robin;
  } else if (text == "p2c") {
    out = Balance::p2c;
  } else {
    return false;
  }
  return true;
}

std::unique_ptr<Picker> make_round_robin_picker() { return std::make_unique<RoundRobin>(); }

std::unique_ptr<Picker> make_p2c_picker(std::uint64_t seed) {
  return std::make_unique<PowerOfTwo>(seed);
}

std::unique_ptr<Picker> make_picker(Balance balance) {
  return balance == Balance::round_robin ? make_round_robin_picker() : make_p2c_picker();
}

}  // namespace heartwheel::net
