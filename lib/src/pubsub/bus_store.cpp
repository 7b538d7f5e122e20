// The Bus's store: options, shards, epochs, sweeping and statistics. The
// operations hubs call (publish, join, leave, history) are in bus.cpp.
#include <heartwheel/common/log.h>
#include <heartwheel/pubsub/bus.h>

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>

#include "bus_shard.h"

namespace heartwheel::pubsub {

void ChannelOptions::validate() const {
  if (history_size > 0 && history_ttl.count() <= 0)
    throw std::invalid_argument(
        "pubsub: history_ttl must be positive when history_size > 0 (else a channel nobody "
        "listens to would keep its history forever)");
  if (history_ttl.count() < 0)
    throw std::invalid_argument("pubsub: history_ttl must not be negative");
}

void BusOptions::validate() const {
  limits.validate();
  channel.validate();
  if (shards == 0 || !std::has_single_bit(shards))
    throw std::invalid_argument("pubsub: shards must be a power of two (got " +
                                std::to_string(shards) + ")");
  if (sweep_interval.count() <= 0)
    throw std::invalid_argument("pubsub: sweep_interval must be positive");
  if (max_channels == 0) throw std::invalid_argument("pubsub: max_channels must be positive");
  if (max_history_bytes == 0)
    throw std::invalid_argument("pubsub: max_history_bytes must be positive");
}

namespace detail {

const StreamPosition* IdempotentResults::find(const std::string& key, TimePoint now) {
  forget_expired(now);
  const auto it = results_.find(key);
  return it == results_.end() ? nullptr : &it->second;
}

void IdempotentResults::remember(const std::string& key, const StreamPosition& result,
                                 TimePoint until, TimePoint now) {
  forget_expired(now);
  if (results_.insert_or_assign(key, result).second) expiry_.emplace_back(until, key);
}

void IdempotentResults::forget_expired(TimePoint now) {
  // Windows are the caller's (one per deployment in practice), so the
  // queue is in expiry order; a key remembered twice keeps its first place.
  while (!expiry_.empty() && expiry_.front().first <= now) {
    results_.erase(expiry_.front().second);
    expiry_.pop_front();
  }
}

void StoredChannel::post(const EventPtr& event) {
  ++seq;
  for (Inbox* inbox : inboxes) {
    auto* envelope = new Envelope;
    envelope->event = event;
    envelope->seq = seq;
    inbox->post(envelope);
  }
}

}  // namespace detail

void Bus::Shard::update_orphan(detail::StoredChannel& ch) {
  if (ch.subscribers == 0 && !ch.orphan) {
    ch.orphan = true;
    ch.orphan_prev = newest_orphan;
    ch.orphan_next = nullptr;
    (newest_orphan != nullptr ? newest_orphan->orphan_next : oldest_orphan) = &ch;
    newest_orphan = &ch;
  } else if (ch.subscribers > 0 && ch.orphan) {
    remove_orphan(ch);
  }
}

void Bus::Shard::remove_orphan(detail::StoredChannel& ch) {
  if (!ch.orphan) return;
  (ch.orphan_prev != nullptr ? ch.orphan_prev->orphan_next : oldest_orphan) = ch.orphan_next;
  (ch.orphan_next != nullptr ? ch.orphan_next->orphan_prev : newest_orphan) = ch.orphan_prev;
  ch.orphan = false;
  ch.orphan_prev = ch.orphan_next = nullptr;
}

detail::StoredChannel& Bus::Shard::add(std::string_view name, const ChannelOptions& options,
                                       std::string epoch) {
  auto ch = std::make_unique<detail::StoredChannel>();
  ch->name = std::string(name);
  ch->options = options;
  ch->epoch = std::move(epoch);
  detail::StoredChannel& ref = *ch;
  channels.emplace(ref.name, std::move(ch));
  update_orphan(ref);  // no subscribers yet: the caller's join takes it off again
  return ref;
}

bool Bus::Shard::trim_or_free(detail::StoredChannel& ch, TimePoint now) {
  if (ch.options.history_size > 0) ch.history.trim(now, ch.options.history_ttl);
  if (ch.subscribers > 0 || !ch.history.empty()) return false;
  remove_orphan(ch);
  channels.erase(channels.find(ch.name));  // frees ch
  return true;
}

bool Bus::Shard::free_oldest_orphan() {
  detail::StoredChannel* ch = oldest_orphan;
  if (ch == nullptr) return false;
  ch->history.clear();  // its bytes leave the bus's total
  remove_orphan(*ch);
  channels.erase(channels.find(ch->name));  // frees ch
  return true;
}

Bus::Bus(BusOptions options) : options_(std::move(options)) {
  options_.validate();
  if (!options_.clock) options_.clock = [] { return TimePoint(Clock::now()); };
  shards_ = std::make_unique<Shard[]>(options_.shards);
  epoch_seed_ = (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^
                std::random_device{}() ^
                static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
}

Bus::~Bus() {
  if (hubs_.load() != 0) {
    log::error("heartwheel::pubsub::Bus destroyed while hubs are still attached",
               {log::field("hubs", static_cast<std::uint64_t>(hubs_.load()))});
    std::abort();
  }
}

Bus::Shard& Bus::shard_for(std::string_view channel) const noexcept {
  // The high bits: the maps inside a shard use the low ones of the same hash.
  return shards_[(KeyedStringHash{}(channel) >> 40) & (options_.shards - 1)];
}

// Epochs: 8 hex characters of splitmix64 over a per-process random seed and a
// counter, so two states of one channel (or two processes) practically never
// share one, with no lock and no per-thread generator.
std::string Bus::new_epoch() noexcept {
  std::uint64_t z = epoch_seed_ + 0x9e3779b97f4a7c15ULL * (epoch_counter_.fetch_add(1) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string epoch(8, '0');
  for (int i = 0; i < 8; ++i) epoch[static_cast<std::size_t>(i)] = kHex[(z >> (60 - 4 * i)) & 0xf];
  epochs_.fetch_add(1, std::memory_order_relaxed);
  return epoch;
}

ChannelOptions Bus::options_for(std::string_view channel) noexcept {
  if (!options_.channel_options) return options_.channel;
  try {
    ChannelOptions opts = options_.channel_options(channel);
    opts.validate();
    return opts;
  } catch (...) {
    bad_channel_options_.fetch_add(1, std::memory_order_relaxed);
    return options_.channel;
  }
}

void Bus::sweep() {
  for (std::size_t i = 0; i < options_.shards; ++i) {
    Shard& shard = shards_[i];
    std::lock_guard lock(shard.mu);
    if (shard.oldest_orphan == nullptr) continue;
    const TimePoint now = options_.clock();
    for (detail::StoredChannel* ch = shard.oldest_orphan; ch != nullptr;) {
      detail::StoredChannel* next = ch->orphan_next;  // freeing ch unlinks it
      if (shard.trim_or_free(*ch, now)) freed_.fetch_add(1, std::memory_order_relaxed);
      ch = next;
    }
  }
}

void Bus::attach(Inbox&) { hubs_.fetch_add(1); }
void Bus::detach(Inbox&) noexcept { hubs_.fetch_sub(1); }

BusStats Bus::stats() const {
  BusStats s;
  s.hubs = hubs_.load();
  s.publications = publications_.load();
  s.unheard = unheard_.load();
  s.epochs = epochs_.load();
  s.channels_freed = freed_.load();
  s.bad_channel_options = bad_channel_options_.load();
  s.channels_refused = channels_refused_.load();
  s.history_evictions = history_evictions_.load();
  s.channels_evicted = channels_evicted_.load();
  for (std::size_t i = 0; i < options_.shards; ++i) {
    std::lock_guard lock(shards_[i].mu);
    s.channels += shards_[i].channels.size();
    for (const auto& [name, ch] : shards_[i].channels) {
      s.history_publications += ch->history.size();
      s.history_bytes += ch->history.held_bytes();
    }
  }
  return s;
}

}  // namespace heartwheel::pubsub
