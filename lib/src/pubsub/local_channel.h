// Private: a hub's view of one channel with local subscribers.
#pragma once

#include <heartwheel/pubsub/stats.h>
#include <heartwheel/pubsub/subscriber.h>

#include <cstdint>
#include <string>

namespace heartwheel::pubsub::detail {

struct LocalChannel {
  LocalChannel(std::string_view n, Hub& h) : name(n), hub(&h) {}

  std::string name;              // the hub's map key views it: never modified
  Hub* hub;                      // its hub: Subscriber::hub() reads it here, not per subscriber
  Subscription* head = nullptr;  // newest first; fan-out walks head to tail
  std::uint32_t count = 0;       // local subscribers (0 only while a fan-out defers the free)
  std::uint32_t pending = 0;     // joins the broker has not answered yet
  // Where this hub's delivery stands in the broker's order. Envelopes at or
  // below delivered_seq, or of another epoch, were ordered before this hub
  // became interested (again) and are dropped as stale.
  std::string epoch;
  std::uint64_t delivered_offset = 0;
  std::uint64_t delivered_seq = 0;
  ChannelStats stats;
};

}  // namespace heartwheel::pubsub::detail
