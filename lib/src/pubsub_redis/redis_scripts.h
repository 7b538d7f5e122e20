// Private: the RedisBroker's Lua scripts, key names, and the encoding of the
// messages it PUBLISHes on a channel's Redis channel (redis_broker.h lists
// the keys). Each script runs atomically in Redis: an offset is taken, stored
// and announced in one step; a read sees a top and the entries up to it
// together.
#pragma once

#include <heartwheel/pubsub/event.h>
#include <heartwheel/redis/command.h>
#include <heartwheel/redis/slot.h>
#include <heartwheel/redis/stream.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace heartwheel::pubsub::detail {

// KEYS meta, stream, idempotency key; ARGV history_size, ttl_ms, redis
// channel, data, info, epoch (used if the stream has none), publish verb
// (PUBLISH or SPUBLISH), the idempotency window in ms ("0": no key)
// -> {offset, epoch}, or {offset, epoch, 1}: the key's earlier result
// (nothing published).
const redis::Script& publish_script();
// KEYS meta, stream; ARGV from_offset (0: no entries), epoch to make the
// stream with if it has none, ttl_ms -> {top, epoch, [[id, [f, v, ...]], ...],
// base, previous epoch} (entries with offset >= from_offset, oldest first;
// base and previous epoch as reset_script left them: 0 and "" for an epoch
// made from nothing).
const redis::Script& read_script();
// KEYS meta, stream; ARGV limit -> {top, epoch, entries newest first}.
const redis::Script& history_script();
// KEYS meta, stream; ARGV epoch seen, new epoch, ttl_ms: if the channel's
// epoch is still the one seen (a compare-and-set: of two nodes resetting
// the same epoch one wins, the other reads the winner's), the new epoch
// starts at the current top: meta b (base) = s, p (previous epoch) = the
// epoch seen; s and the stream are kept (so XADD ids keep rising), and both
// keys get ttl_ms again -> the epoch now.
const redis::Script& reset_script();
// KEYS counts, leases, meta; ARGV mode (j join, l leave, r renew, c count),
// node, count (r), lease_ms, redis channel, info, join_leave (1/0),
// meta_ttl_ms, publish verb -> the total over live nodes. j/l with
// join_leave publish the event.
const redis::Script& presence_script();

// One channel's names in Redis (redis_broker.h, "Redis keys"): all in the
// slot of its partition's hash tag.
struct Keys {
  std::string meta, stream, counts, leases, channel;
  std::string idempotency;  // + a publish's idempotency key: that key's result
};

class KeyLayout {
 public:
  // Precondition: `prefix` has no braces; 1 <= partitions <= 16384.
  KeyLayout(std::string prefix, std::size_t partitions);
  Keys keys(std::string_view channel) const;
  // The channel whose Redis pub/sub channel this is; nullopt if not ours.
  std::optional<std::string_view> channel_of(std::string_view redis_channel) const noexcept;

 private:
  std::string prefix_;
  std::string channel_prefix_;  // prefix_ + "ch:"
  redis::Partitions partitions_;
};

// A message from a channel's Redis channel.
struct WireMessage {
  EventKind kind = EventKind::publication;
  std::uint64_t offset = 0;  // publications
  std::uint64_t count = 0;   // join/leave: the total after it
  std::string epoch;         // publications
  std::string info;
  std::string data;  // publications
};
std::optional<WireMessage> decode_message(std::string_view payload);

// A stream entry (id "<offset>-0", fields d and i) as a publication; null if
// its id is not one of ours.
PublicationPtr to_publication(const std::string& channel, const std::string& epoch,
                              const redis::StreamEntry& entry);

}  // namespace heartwheel::pubsub::detail
