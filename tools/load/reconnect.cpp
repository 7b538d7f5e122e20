#include "reconnect.h"

#include <heartwheel/net/connector.h>

#include <algorithm>
#include <stdexcept>

namespace heartwheel::load {

namespace {

net::ConnectorOptions as_connector(const ReconnectOptions& o) {
  net::ConnectorOptions c;
  c.backoff_initial = std::chrono::duration_cast<Duration>(o.initial);
  c.backoff_max = std::chrono::duration_cast<Duration>(o.max);
  c.backoff_multiplier = o.multiplier;
  c.backoff_jitter = o.jitter;
  return c;
}

}  // namespace

void ReconnectOptions::validate() const {
  // Checked with or without --auto-reconnect: ws mode's comeback after a
  // server restart (close 1012) waits this backoff too.
  if (initial <= std::chrono::nanoseconds{0} || max < initial)
    throw std::invalid_argument("--reconnect-initial must be positive and at most --reconnect-max");
  if (multiplier < 1.0) throw std::invalid_argument("--reconnect-multiplier must be >= 1");
  if (jitter < 0 || jitter > 1)
    throw std::invalid_argument("--reconnect-jitter is a fraction between 0 and 1");
  if (stable < std::chrono::nanoseconds{0})
    throw std::invalid_argument("--reconnect-stable must not be negative");
}

std::chrono::nanoseconds ReconnectOptions::delay(unsigned failures, std::mt19937_64& rng) const {
  const auto base = std::chrono::duration_cast<std::chrono::nanoseconds>(
      as_connector(*this).backoff(std::max(1u, failures)));
  const auto cut = static_cast<std::int64_t>(static_cast<double>(base.count()) * jitter);
  if (cut <= 0) return base;
  return base - std::chrono::nanoseconds(std::uniform_int_distribution<std::int64_t>(0, cut)(rng));
}

void ReconnectStats::count(Series& s, std::uint64_t second) {
  if (s.size() <= second) s.resize(second + 1, 0);
  ++s[second];
}

void ReconnectStats::add(Series& into, const Series& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (std::size_t i = 0; i < from.size(); ++i) into[i] += from[i];
}

void ReconnectStats::merge(const ReconnectStats& o) {
  add(attempts_per_s, o.attempts_per_s);
  add(reconnects_per_s, o.reconnects_per_s);
  add(failures_per_s, o.failures_per_s);
  add(losses_per_s, o.losses_per_s);
  attempts += o.attempts;
  reconnects += o.reconnects;
  failures += o.failures;
  losses += o.losses;
  short_lived += o.short_lived;
  for (const auto& [k, v] : o.errors) errors[k] += v;
  if (o.first_loss_ms != 0)
    first_loss_ms = first_loss_ms == 0 ? o.first_loss_ms : std::min(first_loss_ms, o.first_loss_ms);
  all_back_ms = std::max(all_back_ms, o.all_back_ms);
  down_at_end += o.down_at_end;
  max_down += o.max_down;
}

nlohmann::json ReconnectStats::to_json() const {
  return {{"attempts", attempts},
          {"reconnects", reconnects},
          {"failures", failures},
          {"losses", losses},
          {"short_lived", short_lived},
          {"errors", errors},
          {"first_loss_ms", first_loss_ms},
          {"all_back_ms", all_back_ms},
          {"down_at_end", down_at_end},
          {"max_down", max_down},
          {"attempts_per_s", attempts_per_s},
          {"reconnects_per_s", reconnects_per_s},
          {"failures_per_s", failures_per_s},
          {"losses_per_s", losses_per_s}};
}

ReconnectStats ReconnectStats::from_json(const nlohmann::json& j) {
  ReconnectStats r;
  try {
    r.attempts = j.at("attempts").get<std::uint64_t>();
    r.reconnects = j.at("reconnects").get<std::uint64_t>();
    r.failures = j.at("failures").get<std::uint64_t>();
    r.losses = j.at("losses").get<std::uint64_t>();
    r.short_lived = j.at("short_lived").get<std::uint64_t>();
    r.errors = j.at("errors").get<std::map<std::string, std::uint64_t>>();
    r.first_loss_ms = j.at("first_loss_ms").get<std::uint64_t>();
    r.all_back_ms = j.at("all_back_ms").get<std::uint64_t>();
    r.down_at_end = j.at("down_at_end").get<std::uint64_t>();
    r.max_down = j.at("max_down").get<std::uint64_t>();
    r.attempts_per_s = j.at("attempts_per_s").get<Series>();
    r.reconnects_per_s = j.at("reconnects_per_s").get<Series>();
    r.failures_per_s = j.at("failures_per_s").get<Series>();
    r.losses_per_s = j.at("losses_per_s").get<Series>();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("ReconnectStats::from_json: ") + e.what());
  }
  return r;
}

}  // namespace heartwheel::load
