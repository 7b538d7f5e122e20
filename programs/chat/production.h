// The production flags heartwheel-chat shares with every heartwheel server:
// the protection flags (programs/cli/server_flags.h: --max-connections,
// --proxy-protocol, --max-connections-per-ip, --overload-*, ...) and
// `--metrics-listen HOST:PORT`, and the chat's Prometheus collector: the net
// families of every worker, the WebSocket and pub/sub families
// (lib/src/metrics/README.md). Kept out of main.cpp so that the program's own
// setup stays readable and this wiring is one include and four calls there.
// Threads: main thread, except the collector (the endpoint's thread).
#pragma once

#include <heartwheel/metrics/endpoint.h>
#include <heartwheel/net/server.h>
#include <heartwheel/pubsub/bus.h>
#include <heartwheel/pubsub_redis/redis_broker.h>
#include <heartwheel/runtime/workers.h>

#include <memory>
#include <optional>
#include <string>

#include "server_flags.h"
#include "stats_board.h"

namespace CLI {
class App;
}

namespace chat {

struct ProductionFlags {
  heartwheel::cli::ServerFlags server;
  std::string metrics_listen;  // empty: no endpoint
};

// Registers --metrics-listen and the protection flags.
void add_production_flags(CLI::App& app, ProductionFlags& flags);

// Writes the protection flags into `server` and parses --metrics-listen.
// Throws std::invalid_argument naming the flag (a usage error). Returns the
// endpoint's options, or nothing without --metrics-listen.
std::optional<heartwheel::metrics::EndpointOptions> apply_production_flags(
    const ProductionFlags& flags, heartwheel::net::ServerOptions& server);

// Starts GET /metrics (nothing when `options` is empty) on a thread of its
// own: the workers' net counters, every worker's WebSocket and hub counters
// (as last published to `board`, every --stats-interval) and the bus's;
// with a Redis broker (`redis`, may be null) its heartwheel_redis_* families:
// link="broker" (its Client and Subscriber merged; per master of a cluster,
// the Client's connections) and link="broker_subscriber" (the Subscriber's
// connections per master, its counters summed over them; cluster only).
// Throws std::system_error when the address cannot be bound (a runtime
// failure). The endpoint must be destroyed before the workers, board, bus
// and broker.
std::unique_ptr<heartwheel::metrics::Endpoint> start_metrics(
    const std::optional<heartwheel::metrics::EndpointOptions>& options,
    const heartwheel::runtime::Workers& workers, const StatsBoard& board,
    const heartwheel::pubsub::Bus& bus, const heartwheel::pubsub::RedisBroker* redis);

}  // namespace chat
