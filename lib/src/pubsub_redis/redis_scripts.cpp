// The RedisBroker's Lua scripts and message codec (redis_scripts.h).
#include "redis_scripts.h"

#include <charconv>

namespace heartwheel::pubsub::detail {

// Messages: "p<offset>:<epoch>:<info length>:<info><data>" for a publication,
// "j<total>:<info>" / "l<total>:<info>" for join / leave. Lengths, not
// separators, delimit info and data: both are arbitrary bytes.
const redis::Script& publish_script() {
  static const redis::Script script(R"lua(
if ARGV[8] ~= '0' then
  local first = redis.call('GET', KEYS[3])
  if first then
    local colon = string.find(first, ':', 1, true)
    return {tonumber(string.sub(first, 1, colon - 1)), string.sub(first, colon + 1), 1}
  end
end
local epoch = redis.call('HGET', KEYS[1], 'e')
if not epoch then
  epoch = ARGV[6]
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[1], 'e', epoch, 's', 0)
end
local offset = redis.call('HINCRBY', KEYS[1], 's', 1)
if tonumber(ARGV[1]) > 0 then
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], offset .. '-0', 'd', ARGV[4], 'i', ARGV[5])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call(ARGV[7], ARGV[3],
  'p' .. offset .. ':' .. epoch .. ':' .. string.len(ARGV[5]) .. ':' .. ARGV[5] .. ARGV[4])
if ARGV[8] ~= '0' then
  redis.call('SET', KEYS[3], offset .. ':' .. epoch, 'PX', ARGV[8])
end
return {offset, epoch}
)lua");
  return script;
}

const redis::Script& read_script() {
  static const redis::Script script(R"lua(
local m = redis.call('HMGET', KEYS[1], 's', 'e', 'b', 'p')
if not m[2] then
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[1], 'e', ARGV[2], 's', 0)
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {0, ARGV[2], {}, 0, ''}
end
local entries = {}
if tonumber(ARGV[1]) > 0 then
  entries = redis.call('XRANGE', KEYS[2], ARGV[1] .. '-0', '+')
end
return {tonumber(m[1]), m[2], entries, tonumber(m[3] or 0), m[4] or ''}
)lua");
  return script;
}

const redis::Script& history_script() {
  static const redis::Script script(R"lua(
local m = redis.call('HMGET', KEYS[1], 's', 'e')
if not m[2] then return {0, '', {}} end
local entries = {}
if tonumber(ARGV[1]) > 0 then
  entries = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', ARGV[1])
end
return {tonumber(m[1]), m[2], entries}
)lua");
  return script;
}

const redis::Script& reset_script() {
  static const redis::Script script(R"lua(
local m = redis.call('HMGET', KEYS[1], 'e', 's')
if m[1] ~= ARGV[1] then return m[1] end
redis.call('HSET', KEYS[1], 'e', ARGV[2], 'b', m[2], 'p', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
return ARGV[2]
)lua");
  return script;
}

const redis::Script& presence_script() {
  static const redis::Script script(R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local mode = ARGV[1]
local lease = tonumber(ARGV[4])
if mode == 'j' or mode == 'l' then
  local c = redis.call('HINCRBY', KEYS[1], ARGV[2], mode == 'j' and 1 or -1)
  if c <= 0 then
    redis.call('HDEL', KEYS[1], ARGV[2])
    redis.call('ZREM', KEYS[2], ARGV[2])
  else
    redis.call('ZADD', KEYS[2], now + lease, ARGV[2])
  end
elseif mode == 'r' then
  if tonumber(ARGV[3]) > 0 then
    redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
    redis.call('ZADD', KEYS[2], now + lease, ARGV[2])
  else
    redis.call('HDEL', KEYS[1], ARGV[2])
    redis.call('ZREM', KEYS[2], ARGV[2])
  end
  if redis.call('EXISTS', KEYS[3]) == 1 and redis.call('PTTL', KEYS[3]) < tonumber(ARGV[8]) then
    redis.call('PEXPIRE', KEYS[3], ARGV[8])
  end
end
local dead = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
for _, n in ipairs(dead) do
  redis.call('HDEL', KEYS[1], n)
  redis.call('ZREM', KEYS[2], n)
end
local total = 0
for _, v in ipairs(redis.call('HVALS', KEYS[1])) do total = total + tonumber(v) end
if mode ~= 'c' then
  -- The keys live as long as the longest lease in them (nodes may differ).
  for i = 1, 2 do
    if redis.call('PTTL', KEYS[i]) < lease then redis.call('PEXPIRE', KEYS[i], lease) end
  end
end
if (mode == 'j' or mode == 'l') and ARGV[7] == '1' then
  redis.call(ARGV[9], ARGV[5], mode .. total .. ':' .. ARGV[6])
end
return total
)lua");
  return script;
}

KeyLayout::KeyLayout(std::string prefix, std::size_t partitions)
    : prefix_(std::move(prefix)), channel_prefix_(prefix_ + "ch:"), partitions_(partitions) {}

// K{T}C:m, K{T}C:s, K{T}C:p, K{T}C:l and Kch:{T}C, T the tag of C's
// partition: the hash tag is the first "{...}" (K has no braces), so every
// name of C is in T's slot whatever C contains.
Keys KeyLayout::keys(std::string_view channel) const {
  const std::string tag = partitions_.braced(partitions_.of(channel));
  std::string base = prefix_ + tag;
  base += channel;
  Keys k;
  k.meta = base + ":m";
  k.stream = base + ":s";
  k.counts = base + ":p";
  k.leases = base + ":l";
  k.channel = channel_prefix_ + tag;
  k.channel += channel;
  // The channel's length first: no channel's keys can be another's.
  k.idempotency = prefix_ + tag + "i:" + std::to_string(channel.size()) + ":";
  k.idempotency += channel;
  k.idempotency += ':';
  return k;
}

std::optional<std::string_view> KeyLayout::channel_of(std::string_view c) const noexcept {
  if (c.substr(0, channel_prefix_.size()) != channel_prefix_) return std::nullopt;
  c.remove_prefix(channel_prefix_.size());
  const auto close = c.find('}');
  if (c.empty() || c.front() != '{' || close == std::string_view::npos) return std::nullopt;
  return c.substr(close + 1);
}

namespace {
// Reads digits up to `stop`; advances `in` past it.
bool read_number(std::string_view& in, char stop, std::uint64_t& out) {
  const auto end = in.find(stop);
  if (end == std::string_view::npos || end == 0) return false;
  const auto [p, ec] = std::from_chars(in.data(), in.data() + end, out);
  if (ec != std::errc() || p != in.data() + end) return false;
  in.remove_prefix(end + 1);
  return true;
}
}  // namespace

std::optional<WireMessage> decode_message(std::string_view in) {
  if (in.empty()) return std::nullopt;
  WireMessage m;
  const char kind = in.front();
  in.remove_prefix(1);
  if (kind == 'p') {
    std::uint64_t info_size = 0;
    if (!read_number(in, ':', m.offset)) return std::nullopt;
    const auto colon = in.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    m.epoch = std::string(in.substr(0, colon));
    in.remove_prefix(colon + 1);
    if (!read_number(in, ':', info_size) || info_size > in.size()) return std::nullopt;
    m.info = std::string(in.substr(0, info_size));
    m.data = std::string(in.substr(info_size));
    return m;
  }
  if (kind == 'j' || kind == 'l') {
    m.kind = kind == 'j' ? EventKind::join : EventKind::leave;
    if (!read_number(in, ':', m.count)) return std::nullopt;
    m.info = std::string(in);
    return m;
  }
  return std::nullopt;
}

PublicationPtr to_publication(const std::string& channel, const std::string& epoch,
                              const redis::StreamEntry& e) {
  const auto id = redis::StreamId::parse(e.id);
  if (!id || id->ms == 0) return nullptr;
  auto p = std::make_shared<Publication>();
  p->kind = EventKind::publication;
  p->channel = channel;
  p->epoch = epoch;
  p->offset = id->ms;
  p->data = std::string(e.field("d").value_or(""));
  p->info = std::string(e.field("i").value_or(""));
  return p;
}

}  // namespace heartwheel::pubsub::detail
