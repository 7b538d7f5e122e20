// Helpers for the pub/sub tests: a subscriber that records what it gets, and
// a bus on a hand-advanced clock.
#pragma once

#include <heartwheel/pubsub/bus.h>
#include <heartwheel/pubsub/hub.h>
#include <heartwheel/timer/virtual_clock.h>

#include <functional>
#include <string>
#include <vector>

namespace pubsub_test {

using namespace heartwheel;
using namespace heartwheel::pubsub;
using namespace std::chrono_literals;

struct Recorder : Subscriber {
  explicit Recorder(std::string info = {}) { set_presence_info(std::move(info)); }
  ~Recorder() override = default;

  DeliveryOutcome on_publication(const Publication& p, const Frame& frame) override {
    offsets.push_back(p.offset);
    data.push_back(p.data);
    frames.push_back(frame);
    if (on_pub) on_pub(p);
    return outcome;
  }
  DeliveryOutcome on_presence(const PresenceEvent& e, const Frame& frame) override {
    presence.push_back((e.kind == EventKind::join ? "join:" : "leave:") + e.info + ":" +
                       std::to_string(e.subscribers));
    presence_frames.push_back(frame);
    return DeliveryOutcome::delivered;
  }

  std::vector<std::uint64_t> offsets;
  std::vector<std::string> data;
  std::vector<Frame> frames;
  std::vector<std::string> presence;
  std::vector<Frame> presence_frames;
  DeliveryOutcome outcome = DeliveryOutcome::delivered;
  std::function<void(const Publication&)> on_pub;  // runs inside the fan-out
};

// A bus whose clock is a VirtualClock the test advances.
struct ManualBus {
  explicit ManualBus(ChannelOptions channel = {}, Limits limits = {})
      : bus(options(channel, limits)) {}

  BusOptions options(ChannelOptions channel, Limits limits) {
    BusOptions o;
    o.channel = channel;
    o.limits = limits;
    o.clock = [this] { return clock.now(); };
    return o;
  }

  VirtualClock clock{TimePoint{} + 1h};
  Bus bus;
};

// History from a channel's first publish: these tests are about the ring
// and recovery and publish before anyone subscribes. (The Bus's default
// keeps nothing for a publish to a channel without state:
// pubsub_caps_test.cpp.)
inline ChannelOptions with_history(std::size_t size, Duration ttl = 60s) {
  ChannelOptions c;
  c.history_size = size;
  c.history_ttl = ttl;
  c.history_before_subscribers = true;
  return c;
}

// Drains a loop-less hub until its inbox is empty.
inline std::size_t poll_all(Hub& hub) {
  std::size_t total = 0;
  while (std::size_t n = hub.poll()) total += n;
  return total;
}

}  // namespace pubsub_test
