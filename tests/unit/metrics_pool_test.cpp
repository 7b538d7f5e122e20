// The client side's families (net::write_metrics in heartwheel/net/pool_stats.h,
// http::write_metrics in heartwheel/http/client.h) through metrics' TextWriter: a pool's
// endpoints, one sample each with pool and endpoint labels (and the row's
// own), their states; an HTTP client's requests.
#include <heartwheel/http/client.h>
#include <heartwheel/metrics/text_writer.h>
#include <heartwheel/net/pool_stats.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "metrics_text.h"

namespace metrics = heartwheel::metrics;
namespace net = heartwheel::net;
using metrics_text::families;
using metrics_text::has_line;

TEST_CASE("A pool's families carry a sample per endpoint and its state", "[metrics][names][pool]") {
  net::EndpointInfo a{0, "127.0.0.1:7401", net::EndpointState::healthy, {}};
  a.stats.calls_ok = 10;
  a.stats.open = 2;
  net::EndpointInfo b{1, "127.0.0.1:7402", net::EndpointState::ejected, {}};
  b.stats.calls_timed_out = 5;
  b.stats.ejections = 1;
  const std::vector<net::EndpointInfo> list{a, b};
  const net::PoolEndpoints pools[] = {{"backend", list}};
  metrics::TextWriter out;
  net::write_metrics(out, pools);
  const std::string& text = out.text();
  const auto names = families(text);
  CHECK(names.front() == "heartwheel_pool_calls_total");
  CHECK(names.back() == "heartwheel_pool_endpoint_state");
  CHECK(has_line(text, "# TYPE heartwheel_pool_calls_total counter"));
  CHECK(has_line(text,
                 "heartwheel_pool_calls_total{pool=\"backend\",endpoint=\"127.0.0.1:7401\",outcome="
                 "\"ok\"} 10"));
  CHECK(has_line(text,
                 "heartwheel_pool_calls_total{pool=\"backend\",endpoint=\"127.0.0.1:7402\",outcome="
                 "\"timed_out\"} 5"));
  CHECK(has_line(
      text, "heartwheel_pool_ejections_total{pool=\"backend\",endpoint=\"127.0.0.1:7402\"} 1"));
  CHECK(has_line(text, "# TYPE heartwheel_pool_connections_open gauge"));
  CHECK(has_line(
      text, "heartwheel_pool_connections_open{pool=\"backend\",endpoint=\"127.0.0.1:7401\"} 2"));
  CHECK(has_line(text,
                 "heartwheel_pool_endpoint_state{pool=\"backend\",endpoint=\"127.0.0.1:7402\","
                 "state=\"ejected\"} 1"));
  CHECK_THROWS_AS(net::write_metrics(out, pools), std::logic_error);  // each family once
}

TEST_CASE("An HTTP client's families follow its stats table", "[metrics][names][http]") {
  heartwheel::http::ClientStats s;
  s.requests = 7;
  s.responses = 5;
  s.timed_out = 2;
  s.reused = 4;
  metrics::TextWriter out;
  heartwheel::http::write_metrics(out, s);
  const std::string& text = out.text();
  CHECK(has_line(text, "heartwheel_http_client_requests_total 7"));
  CHECK(has_line(text, "heartwheel_http_client_requests_ended_total{result=\"response\"} 5"));
  CHECK(has_line(text, "heartwheel_http_client_requests_ended_total{result=\"timed_out\"} 2"));
  CHECK(has_line(text, "heartwheel_http_client_reused_total 4"));
}
