// The Prometheus text exposition writer (heartwheel/metrics/text_writer.h,
// durations.h): HELP/TYPE lines, escaping, histograms with cumulative le
// buckets ending in +Inf, number forms, and the rules it refuses to break.
#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/metrics/durations.h>
#include <heartwheel/metrics/text_writer.h>

#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

using namespace heartwheel::metrics;
using namespace std::chrono_literals;

TEST_CASE("A counter family is a HELP line, a TYPE line and its samples", "[metrics][format]") {
  TextWriter out;
  out.family("app_requests_total", Type::counter, "Requests served.");
  out.sample(std::uint64_t{3}, {{"code", "200"}});
  out.sample(std::uint64_t{1}, {{"code", "404"}, {"method", "GET"}});
  out.gauge("app_temperature_celsius", "Temperature.", 21.5);
  CHECK(out.text() ==
        "# HELP app_requests_total Requests served.\n"
        "# TYPE app_requests_total counter\n"
        "app_requests_total{code=\"200\"} 3\n"
        "app_requests_total{code=\"404\",method=\"GET\"} 1\n"
        "# HELP app_temperature_celsius Temperature.\n"
        "# TYPE app_temperature_celsius gauge\n"
        "app_temperature_celsius 21.5\n");
}

TEST_CASE("Label values escape backslash, double quote and newline and keep the rest",
          "[metrics][format]") {
  CHECK(escape_label_value(R"(a\b"c)"
                           "\n"
                           "d\te") == R"(a\\b\"c\nd)"
                                      "\te");
  CHECK(escape_label_value("caf\xc3\xa9 {x=1}") == "caf\xc3\xa9 {x=1}");  // UTF-8 and braces as is
  TextWriter out;
  out.family("x_total", Type::counter, "help with \\ and\nnewline \"quotes\"");
  out.sample(std::uint64_t{1}, {{"path", "/a\"b\\c\nd"}});
  CHECK(out.text() ==
        "# HELP x_total help with \\\\ and\\nnewline \"quotes\"\n"  // quotes stay in HELP
        "# TYPE x_total counter\n"
        "x_total{path=\"/a\\\"b\\\\c\\nd\"} 1\n");
}

TEST_CASE("A histogram writes cumulative le buckets ending in +Inf then sum and count",
          "[metrics][format]") {
  TextWriter out;
  out.family("op_seconds", Type::histogram, "Op time.");
  const std::array<double, 3> bounds{0.001, 0.01, 0.1};
  const std::array<std::uint64_t, 4> counts{2, 0, 5, 1};  // per bucket, last one above 0.1
  out.histogram(bounds, counts, 0.75, {{"op", "read"}});
  CHECK(out.text() ==
        "# HELP op_seconds Op time.\n"
        "# TYPE op_seconds histogram\n"
        "op_seconds_bucket{op=\"read\",le=\"0.001\"} 2\n"
        "op_seconds_bucket{op=\"read\",le=\"0.01\"} 2\n"
        "op_seconds_bucket{op=\"read\",le=\"0.1\"} 7\n"
        "op_seconds_bucket{op=\"read\",le=\"+Inf\"} 8\n"
        "op_seconds_sum{op=\"read\"} 0.75\n"
        "op_seconds_count{op=\"read\"} 8\n");
}

TEST_CASE("An unlabelled histogram puts le alone in braces", "[metrics][format]") {
  TextWriter out;
  out.family("h_seconds", Type::histogram, "H.");
  const std::array<double, 1> bounds{1};
  const std::array<std::uint64_t, 2> counts{0, 0};
  out.histogram(bounds, counts, 0);
  CHECK(out.text() ==
        "# HELP h_seconds H.\n# TYPE h_seconds histogram\n"
        "h_seconds_bucket{le=\"1\"} 0\nh_seconds_bucket{le=\"+Inf\"} 0\n"
        "h_seconds_sum 0\nh_seconds_count 0\n");
}

TEST_CASE("Numbers are integers as written, shortest exact doubles and the special values",
          "[metrics][format]") {
  TextWriter out;
  out.family("g", Type::gauge, "G.");
  out.sample(std::numeric_limits<std::uint64_t>::max());
  out.sample(0.1, {{"k", "a"}});
  out.sample(1e-9, {{"k", "b"}});
  out.sample(std::numeric_limits<double>::infinity(), {{"k", "c"}});
  out.sample(-std::numeric_limits<double>::infinity(), {{"k", "d"}});
  out.sample(std::nan(""), {{"k", "e"}});
  CHECK(out.text() ==
        "# HELP g G.\n# TYPE g gauge\n"
        "g 18446744073709551615\n"
        "g{k=\"a\"} 0.1\n"
        "g{k=\"b\"} 1e-09\n"
        "g{k=\"c\"} +Inf\n"
        "g{k=\"d\"} -Inf\n"
        "g{k=\"e\"} NaN\n");
}

TEST_CASE("Names that the format forbids are refused", "[metrics][format]") {
  CHECK(valid_metric_name("heartwheel_x:y_total"));
  CHECK_FALSE(valid_metric_name(""));
  CHECK_FALSE(valid_metric_name("9lives"));
  CHECK_FALSE(valid_metric_name("has-dash"));
  CHECK_FALSE(valid_metric_name("has space"));
  CHECK(valid_label_name("reason"));
  CHECK_FALSE(valid_label_name("__reserved"));
  CHECK_FALSE(valid_label_name("a:b"));
  CHECK_FALSE(valid_label_name("1a"));

  TextWriter out;
  CHECK_THROWS_AS(out.family("bad-name", Type::gauge, "x"), std::invalid_argument);
  out.family("ok_total", Type::counter, "x");
  CHECK_THROWS_AS(out.sample(std::uint64_t{1}, {{"bad-label", "v"}}), std::invalid_argument);
  CHECK_THROWS_AS(out.sample(std::uint64_t{1}, {{"__name__", "v"}}), std::invalid_argument);
}

TEST_CASE("Out-of-order calls are refused: a family twice, a sample of the wrong kind",
          "[metrics][format]") {
  TextWriter out;
  CHECK_THROWS_AS(out.sample(std::uint64_t{1}), std::logic_error);  // no family yet
  out.family("a_total", Type::counter, "A.");
  CHECK_THROWS_AS(out.family("a_total", Type::counter, "again"), std::logic_error);
  const std::array<double, 1> bounds{1};
  const std::array<std::uint64_t, 2> counts{1, 1};
  CHECK_THROWS_AS(out.histogram(bounds, counts, 1.0), std::logic_error);  // a counter family
  out.family("h_seconds", Type::histogram, "H.");
  CHECK_THROWS_AS(out.sample(1.0), std::logic_error);  // a histogram family
  CHECK_THROWS_AS(out.histogram(bounds, counts, 1.0, {{"le", "x"}}), std::invalid_argument);
  const std::array<std::uint64_t, 1> too_few{1};
  CHECK_THROWS_AS(out.histogram(bounds, too_few, 1.0), std::invalid_argument);
  const std::array<double, 2> not_increasing{1, 1};
  const std::array<std::uint64_t, 3> three{1, 1, 1};
  CHECK_THROWS_AS(out.histogram(not_increasing, three, 1.0), std::invalid_argument);
  const std::array<double, 1> infinite{std::numeric_limits<double>::infinity()};
  CHECK_THROWS_AS(out.histogram(infinite, counts, 1.0), std::invalid_argument);
}

TEST_CASE("A duration histogram is written in seconds with power-of-two millisecond bounds",
          "[metrics][format]") {
  heartwheel::DurationHistogram<4> h;  // <= 1 ms, <= 2 ms, <= 4 ms, +Inf
  h.record(0ms);
  h.record(1500us);
  h.record(3ms);
  h.record(4ms);
  h.record(1s);
  TextWriter out;
  out.family("d_seconds", Type::histogram, "D.");
  write_duration_histogram(out, h);
  CHECK(out.text() ==
        "# HELP d_seconds D.\n# TYPE d_seconds histogram\n"
        "d_seconds_bucket{le=\"0.001\"} 1\n"
        "d_seconds_bucket{le=\"0.002\"} 2\n"
        "d_seconds_bucket{le=\"0.004\"} 4\n"
        "d_seconds_bucket{le=\"+Inf\"} 5\n"
        "d_seconds_sum 1.0085\n"
        "d_seconds_count 5\n");
}

TEST_CASE(
    "Duration histogram bucket i holds durations above 2^(i-1) ms up to 2^i ms and the last the "
    "rest",
    "[metrics][histogram]") {
  using H = heartwheel::DurationHistogram<16>;
  CHECK(H::bucket_of(-5ms) == 0);
  CHECK(H::bucket_of(0ms) == 0);
  CHECK(H::bucket_of(1ms) == 0);
  CHECK(H::bucket_of(1001us) == 1);
  CHECK(H::bucket_of(2ms) == 1);
  CHECK(H::bucket_of(3ms) == 2);
  CHECK(H::bucket_of(4ms) == 2);
  CHECK(H::bucket_of(5ms) == 3);
  CHECK(H::bucket_of(16384ms) == 14);
  CHECK(H::bucket_of(16385ms) == 15);
  CHECK(H::bucket_of(std::chrono::hours(1000)) == 15);
  for (std::size_t i = 0; i + 1 < H::kBuckets; ++i) {
    CHECK(H::bucket_of(H::bound(i)) == i);  // a bound belongs to its own bucket
    CHECK(H::bound(i) == heartwheel::LoopWheel::lag_bucket_bound(i));
  }
  H a, b;
  a.record(3ms);
  b.record(3ms);
  b.record(100s);
  a.merge(b);
  CHECK(a.count() == 3);
  CHECK(a.buckets[2] == 2);
  CHECK(a.buckets[15] == 1);
  CHECK(a.sum == 100006ms);
}
