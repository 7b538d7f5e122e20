// heartwheel/net/picker.h - how a net::Pool (pool.h) chooses the endpoint of
// the next call.
//
// What it is
//   Before each call the pool lists the endpoints that may take it (healthy,
//   with an open connection that has room; a probing one's trial) and asks
//   its Picker for one of them. Two pickers come with the library:
//   - round_robin: each in turn. Every endpoint gets the same share of the
//     calls, however slow it is.
//   - p2c: power of two choices over the calls in flight (Finagle's
//     least-loaded balancer; Mitzenmacher): two candidates at random, the
//     one with fewer calls in flight wins (a tie: the first drawn). A slow
//     endpoint holds its calls longer, so it is drawn into fewer: the share
//     it gets follows its speed, with no latency measurement and O(1) work.
//     Always drawing two keeps the choice random enough that a burst does
//     not pile onto the one endpoint that looked least loaded a moment ago
//     (what picking the minimum of all would do).
//   An application may bring its own (by weight, by locality, by hash of a
//   key): derive from Picker.
//
// Cost: O(1) per pick for both; the pool's candidate list is O(endpoints).
// Threads: a Picker belongs to one pool, on its loop thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

namespace heartwheel::net {

// One endpoint that may take the next call.
struct EndpointLoad {
  // The endpoint's id: the pool numbers its endpoints from 0 in the order
  // they were added (EndpointInfo::id); an id is never reused.
  std::size_t endpoint;
  std::uint32_t in_flight;  // calls acquired and not released yet
  std::uint32_t open;       // open connections
};

class Picker {
 public:
  virtual ~Picker() = default;
  // Returns an index into `candidates` (never empty).
  virtual std::size_t pick(std::span<const EndpointLoad> candidates) noexcept = 0;
};

enum class Balance : std::uint8_t { round_robin, p2c };

// "round-robin" / "p2c", and back (false for anything else).
const char* to_string(Balance balance) noexcept;
bool parse_balance(std::string_view text, Balance& out) noexcept;

std::unique_ptr<Picker> make_round_robin_picker();
// `seed` 0: seeded from the clock (each pool its own sequence).
std::unique_ptr<Picker> make_p2c_picker(std::uint64_t seed = 0);
std::unique_ptr<Picker> make_picker(Balance balance);

}  // namespace heartwheel::net
