#include <heartwheel/common/histogram.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

using heartwheel::stats::Histogram;

namespace {
// The exact p-th percentile by the same rank rule as Histogram: the value of
// rank ceil(p% * n) in sorted order.
std::uint64_t exact_percentile(std::vector<std::uint64_t> v, double p) {
  std::sort(v.begin(), v.end());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  rank = std::clamp<std::size_t>(rank, 1, v.size());
  return v[rank - 1];
}
}  // namespace

TEST_CASE("Small values below 2^sig_bits are counted exactly", "[histogram]") {
  Histogram h(8);
  for (std::uint64_t v = 0; v < 256; ++v) {
    CHECK(h.bucket_of(v) == v);
    CHECK(h.bucket_low(v) == v);
    CHECK(h.bucket_high(v) == v);
  }
}

TEST_CASE("Every bucket's width stays within the relative error bound across the whole range",
          "[histogram]") {
  for (unsigned bits : {2u, 5u, 8u, 12u}) {
    Histogram h(bits);
    const double bound = 1.0 / static_cast<double>(1u << (bits - 1));
    for (std::size_t i = 0; i < h.bucket_count(); ++i) {
      const auto lo = h.bucket_low(i), hi = h.bucket_high(i);
      REQUIRE(lo <= hi);
      REQUIRE(h.bucket_of(lo) == i);
      REQUIRE(h.bucket_of(hi) == i);
      if (i + 1 < h.bucket_count()) REQUIRE(h.bucket_low(i + 1) == hi + 1);  // no gaps, no overlaps
      if (lo > 0) REQUIRE(static_cast<double>(hi - lo) / static_cast<double>(lo) <= bound);
    }
    CHECK(h.bucket_high(h.bucket_count() - 1) == UINT64_MAX);  // the whole uint64 range is covered
  }
}

TEST_CASE(
    "Percentiles are within 1/128 of the exact value for sig_bits 8, from microseconds to hours",
    "[histogram]") {
  std::mt19937_64 rng(42);
  for (std::uint64_t scale :
       {std::uint64_t{100}, std::uint64_t{100'000}, std::uint64_t{3'600'000'000}}) {
    std::lognormal_distribution<double> dist(std::log(static_cast<double>(scale)), 1.0);
    Histogram h;
    std::vector<std::uint64_t> values;
    for (int i = 0; i < 20000; ++i) {
      const auto v = static_cast<std::uint64_t>(dist(rng));
      values.push_back(v);
      h.record(v);
    }
    for (double p : {1.0, 50.0, 90.0, 99.0, 99.9}) {
      const auto exact = exact_percentile(values, p);
      const auto got = h.percentile(p);
      INFO("scale " << scale << " p" << p << " exact " << exact << " got " << got);
      CHECK(got >= exact);  // reports the bucket's upper edge: never under-reports
      CHECK(static_cast<double>(got - exact) <= static_cast<double>(exact) / 128.0 + 1);
    }
    CHECK(h.percentile(100) == *std::max_element(values.begin(), values.end()));
    CHECK(h.min() == *std::min_element(values.begin(), values.end()));
    CHECK(h.count() == values.size());
  }
}

TEST_CASE("Percentiles of a known distribution land on the right values", "[histogram]") {
  Histogram h;
  for (std::uint64_t v = 1; v <= 100; ++v) h.record(v);
  CHECK(h.percentile(50) == 50);
  CHECK(h.percentile(90) == 90);
  CHECK(h.percentile(99) == 99);
  CHECK(h.percentile(100) == 100);
  CHECK(h.percentile(0) == 1);
  CHECK(h.mean() == Approx(50.5));
  Histogram empty;
  CHECK(empty.percentile(50) == 0);
  CHECK(empty.min() == 0);
  CHECK(empty.max() == 0);
}

TEST_CASE("Merging per-part histograms equals one histogram fed all values", "[histogram]") {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::uint64_t> small(0, 1000), large(0, 1ull << 40);
  Histogram all, a, b, c;
  for (int i = 0; i < 30000; ++i) {
    const auto v = (i % 3 == 0) ? large(rng) : small(rng);
    all.record(v);
    (i % 3 == 0 ? a : i % 3 == 1 ? b : c).record(v);
  }
  Histogram merged;
  merged.merge(a);
  merged.merge(b);
  merged.merge(c);
  CHECK(merged == all);
  for (double p : {50.0, 99.0, 99.9}) CHECK(merged.percentile(p) == all.percentile(p));
  Histogram other_precision(6);
  CHECK_THROWS_AS(merged.merge(other_precision), std::invalid_argument);
}

TEST_CASE("A histogram survives a JSON round trip unchanged", "[histogram]") {
  Histogram h;
  for (std::uint64_t v : {0ull, 1ull, 255ull, 256ull, 1000ull, 123456789ull, 1ull << 62})
    h.record_n(v, v % 7 + 1);
  const std::string text = h.to_json();
  const Histogram back = Histogram::from_json(text);
  CHECK(back == h);
  CHECK(back.percentile(50) == h.percentile(50));
  CHECK(Histogram::from_json(Histogram().to_json()) == Histogram());
}

TEST_CASE("A malformed histogram document is rejected with a message", "[histogram]") {
  auto j = nlohmann::json::parse(Histogram().to_json());
  j["buckets"] = nlohmann::json::array({nlohmann::json::array({999999, 1})});
  j["count"] = 1;
  CHECK_THROWS_AS(Histogram::from_json(j.dump()), std::invalid_argument);
  auto k = nlohmann::json::parse(Histogram().to_json());
  k["count"] = 5;  // buckets say 0
  CHECK_THROWS_AS(Histogram::from_json(k.dump()), std::invalid_argument);
  CHECK_THROWS_AS(Histogram::from_json("{}"), std::invalid_argument);
  CHECK_THROWS_AS(Histogram::from_json("{\"sig_bits\": 8, \"buckets\": ["), std::invalid_argument);
  CHECK_THROWS_AS(Histogram(1), std::invalid_argument);
}
