// heartwheel-pubsub-bench: the cost of the pub/sub hub's fan-out per local
// subscriber, and the memory of a subscription. One hub without a loop (the
// inbox is drained by poll(), so only the hub's own work is timed), N
// subscribers on one channel, P publications. The encoder makes one frame per
// publication; subscribers then:
//   read   look at the shared frame (the hub's cost alone)
//   keep   keep a reference to it, as a connection whose socket is busy
//          queues it (one atomic increment, and a decrement when replaced)
//   copy   copy its bytes into a new buffer of their own (an allocation and
//          a free per subscriber, as a write queue that copies): the cost
//          "encode once, share the bytes" avoids, for comparison
// Memory: heap bytes per subscription from mallinfo2() around subscribing N
// subscribers (the subscriber objects are allocated before), and allocations
// (counted operator new) per publication during fan-out: independent of N.
// Prints one JSON line.
#include <alloc_count.h>
#include <bench_args.h>
#include <bench_clock.h>
#include <heartwheel/pubsub/bus.h>
#include <heartwheel/pubsub/hub.h>
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace ps = heartwheel::pubsub;
using heartwheel::bench::Stopwatch;

namespace {

enum class Mode { read, keep, copy };

struct BenchSubscriber final : ps::Subscriber {
  ps::DeliveryOutcome on_publication(const ps::Publication&, const ps::Frame& frame) override {
    switch (*mode) {
      case Mode::read:
        bytes += frame->size();
        break;
      case Mode::keep:
        kept = frame;
        break;
      case Mode::copy: {  // a buffer of its own, as a write queue that copies would make
        std::string fresh(*frame);
        copy.swap(fresh);
        break;
      }
    }
    return ps::DeliveryOutcome::delivered;
  }
  const Mode* mode = nullptr;
  std::size_t bytes = 0;
  ps::Frame kept;
  std::string copy;
};

std::size_t heap_in_use() { return mallinfo2().uordblks; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "heartwheel-pubsub-bench: hub fan-out cost per subscriber and bytes per subscription"};
  std::string subscribers_text = "100k";
  std::string publications_text = "200";
  std::size_t payload = 64;
  app.add_option("--subscribers", subscribers_text, "local subscribers of one channel (e.g. 100k)");
  app.add_option("--publications", publications_text, "publications per mode");
  app.add_option("--payload", payload, "bytes of each publication's frame")
      ->check(CLI::Range(1, 1 << 20));
  CLI11_PARSE(app, argc, argv);
  std::size_t n = 0, p = 0;
  try {
    n = heartwheel::bench::parse_count(subscribers_text);
    p = heartwheel::bench::parse_count(publications_text);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heartwheel-pubsub-bench: %s\n", e.what());
    return 2;
  }

  ps::BusOptions bus_options;
  bus_options.limits.max_data_bytes = payload;
  ps::Bus bus(bus_options);
  ps::HubOptions hub_options;
  hub_options.encode_publication = [](const ps::Publication& pub) {
    return std::make_shared<const std::string>(pub.data);  // stands in for a WebSocket frame
  };
  ps::Hub hub(bus, hub_options);
  Mode mode = Mode::read;
  std::vector<BenchSubscriber> subs(n);
  for (auto& s : subs) s.mode = &mode;

  const std::size_t heap_before = heap_in_use();
  Stopwatch subscribing;
  for (auto& s : subs) {
    if (hub.subscribe(s, "bench").error) {
      std::fprintf(stderr, "heartwheel-pubsub-bench: subscribe failed\n");
      return 1;
    }
  }
  const double subscribe_ns =
      static_cast<double>(subscribing.elapsed_ns()) / static_cast<double>(n);
  const double heap_per_sub =
      static_cast<double>(heap_in_use() - heap_before) / static_cast<double>(n);

  const std::string data(payload, 'x');
  auto fan_out = [&](Mode m, std::uint64_t* allocations) {
    mode = m;
    hub.publish("bench", data);  // warm-up, untimed
    hub.poll();
    const std::uint64_t news_before = heartwheel::bench::new_calls();
    std::uint64_t timed_ns = 0;
    for (std::size_t i = 0; i < p; ++i) {
      hub.publish("bench", data);  // the publish is not timed: the hub's drain is
      Stopwatch sw;
      hub.poll();
      timed_ns += sw.elapsed_ns();
    }
    if (allocations) *allocations = heartwheel::bench::new_calls() - news_before;
    return static_cast<double>(timed_ns) / static_cast<double>(p * n);
  };
  std::uint64_t allocations = 0;
  const double read_ns = fan_out(Mode::read, &allocations);
  const double keep_ns = fan_out(Mode::keep, nullptr);
  const double copy_ns = fan_out(Mode::copy, nullptr);
  const ps::HubStats stats = hub.stats();

  Stopwatch unsubscribing;
  for (auto& s : subs) hub.unsubscribe(s, "bench");
  const double unsubscribe_ns =
      static_cast<double>(unsubscribing.elapsed_ns()) / static_cast<double>(n);

  std::printf(
      "{\"bench\":\"pubsub\",\"subscribers\":%zu,\"publications\":%zu,\"payload_bytes\":%zu,"
      "\"sizeof_subscription\":%zu,\"sizeof_subscriber\":%zu,\"heap_bytes_per_subscription\":%.1f,"
      "\"subscribe_ns\":%.1f,\"unsubscribe_ns\":%.1f,\"fanout_read_ns_per_subscriber\":%.2f,"
      "\"fanout_keep_ns_per_subscriber\":%.2f,\"fanout_copy_ns_per_subscriber\":%.2f,"
      "\"allocations_per_publication\":%.2f,\"encodes_per_publication\":%.2f,"
      "\"deliveries\":%llu,\"load_avg_1m\":%.2f}\n",
      n, p, payload, sizeof(ps::detail::Subscription), sizeof(ps::Subscriber), heap_per_sub,
      subscribe_ns, unsubscribe_ns, read_ns, keep_ns, copy_ns,
      static_cast<double>(allocations) / static_cast<double>(p),
      static_cast<double>(stats.encodes) / static_cast<double>(stats.delivery.fanned_out),
      static_cast<unsigned long long>(stats.delivery.deliveries),
      heartwheel::bench::load_average_1m());
  return stats.delivery.deliveries == 3 * (p + 1) * n ? 0 : 1;
}
