// See production.h.
#include "production.h"

#include <heartwheel/metrics/stat_families.h>
#include <heartwheel/net/stats.h>
#include <heartwheel/pubsub/stats.h>
#include <heartwheel/ws/stats.h>

#include <CLI/CLI.hpp>

#include "health.h"
#include "redis_link.h"

namespace chat {

namespace metrics = heartwheel::metrics;

void add_production_flags(CLI::App& app, ProductionFlags& f) {
  app.add_option("--metrics-listen", f.metrics_listen,
                 "HOST:PORT to serve GET /metrics on (Prometheus text format, every worker "
                 "merged; port 0: pick one, printed as 'metrics on HOST:PORT'); off when not "
                 "given");
  // --max-connections, --proxy-protocol, --max-connections-per-ip, --overload-*...
  heartwheel::cli::add_server_flags(app, f.server);
}

std::optional<metrics::EndpointOptions> apply_production_flags(
    const ProductionFlags& f, heartwheel::net::ServerOptions& server) {
  heartwheel::cli::apply_server_flags(f.server, server);
  if (f.metrics_listen.empty()) return std::nullopt;
  return metrics::endpoint_at(f.metrics_listen);
}

std::unique_ptr<metrics::Endpoint> start_metrics(
    const std::optional<metrics::EndpointOptions>& options,
    const heartwheel::runtime::Workers& workers, const StatsBoard& board,
    const heartwheel::pubsub::Bus& bus, const heartwheel::pubsub::RedisBroker* redis) {
  if (!options) return nullptr;
  metrics::EndpointOptions o = *options;
  // /readyz: listening, not draining, and Redis reachable with --redis.
  o.ready = heartwheel::cli::readiness(
      redis ? std::function<bool()>([redis] { return redis->stats().link.connected > 0; })
            : std::function<bool()>());
  return std::make_unique<metrics::Endpoint>(
      std::move(o), [&workers, &board, &bus, redis](metrics::TextWriter& out) {
        metrics::write(out, workers.total());
        const WorkerStats t = board.total();
        metrics::write(out, t.ws);
        write_limits_metrics(out, t.chat);
        // No hub before a worker's first connection: zeros, so every family
        // is there from the first scrape.
        metrics::write(out, t.has_hub ? t.hub : heartwheel::pubsub::HubStats{});
        metrics::write(out, bus.stats());
        if (redis != nullptr) chat::write_redis_metrics(out, redis->stats());
      });
}

}  // namespace chat
