// heartwheel/metrics/pool_metrics.h - the client side's counters as
// Prometheus families: a net::Pool's endpoints (heartwheel_pool_*) and an
// http::Client's requests (heartwheel_http_client_*). Every family:
// lib/src/metrics/README.md.
//
// The pool's families walk net::EndpointStats' table (pool_stats.h), one
// sample per endpoint labelled pool="<name>" and endpoint="HOST:PORT" (plus
// the row's own label, outcome="ok" ...), and add
//   heartwheel_pool_endpoint_state{pool,endpoint,state} 1 for the state the
//   endpoint is in (warming, healthy, ejected, probing, draining).
// The HTTP client's walk http::ClientStats' table, unlabelled.
//
// Threads: any (each reads a copy: Pool::endpoints(), Client::stats(),
// taken on the loop's thread). Cost: ~16 samples per endpoint.
#pragma once

#include <heartwheel/http/client.h>
#include <heartwheel/metrics/text_writer.h>
#include <heartwheel/net/pool_stats.h>

#include <span>
#include <string_view>
#include <vector>

namespace heartwheel::metrics {

struct PoolEndpoints {
  std::string_view name;                         // the pool label's value ("backend")
  std::span<const net::EndpointInfo> endpoints;  // Pool::endpoints()
};

// Appends the heartwheel_pool_* families, one sample per endpoint of every
// pool. Throws std::logic_error if `out` already has one of them.
void write(TextWriter& out, std::span<const PoolEndpoints> pools);
// Appends the heartwheel_http_client_* families.
void write(TextWriter& out, const http::ClientStats& stats);

}  // namespace heartwheel::metrics
