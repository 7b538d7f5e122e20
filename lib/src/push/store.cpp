// The Lua scripts of the delayed queue (see store.h and the layer README).
// Each runs atomically in Redis: that is what makes a claim exclusive.
#include "store.h"

#include <charconv>

namespace heartwheel::push::detail {

namespace {
// Lua shared by the scripts that read a payload's owner or count it: a
// payload with the "~<n>:<owner>" prefix (encode_payload) was counted in
// its owner's pending count when stored; one without (stored before counts
// existed) was not, and is never uncounted.
constexpr std::string_view kOwnerLua = R"(
local function owner_of(p)
  local n = string.match(p, '^~(%d+):')
  if not n then return nil end
  return string.sub(p, #n + 3, #n + 2 + tonumber(n))
end
local function uncount(key, p)
  local owner = owner_of(p)
  if owner and redis.call('HINCRBY', key, owner, -1) <= 0 then redis.call('HDEL', key, owner) end
end
)";

std::string with_owner_lua(std::string_view body) {
  std::string s(kOwnerLua);
  s.append(body);
  return s;
}
}  // namespace

// A new id is counted and checked against the cap; a resent one (its reply
// was lost: the link retries) finds its payload there and is only re-added.
const redis::Script& schedule_script() {
  static const redis::Script s(R"(
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then
  local cap = tonumber(ARGV[5])
  if cap > 0 and (tonumber(redis.call('HGET', KEYS[3], ARGV[4])) or 0) >= cap then return 0 end
  redis.call('HINCRBY', KEYS[3], ARGV[4], 1)
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1)");
  return s;
}

// Only the node whose ZREM removed the id gets the payload: every other
// node that loaded the same push finds it gone and gets nil.
const redis::Script& claim_script() {
  static const redis::Script s(R"(
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return false end
local payload = redis.call('HGET', KEYS[2], ARGV[1])
if not payload then return false end
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
return payload)");
  return s;
}

// Also removes the id from `due`: if this node's lease ran out and a reaper
// re-queued the push, nobody has claimed it again yet, and it was delivered.
// The payload's removal uncounts it: once, however often the ack is resent.
const redis::Script& ack_script() {
  static const redis::Script s(with_owner_lua(R"(
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
local p = redis.call('HGET', KEYS[2], ARGV[1])
if not p then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1])
uncount(KEYS[4], p)
return 1)"));
  return s;
}

// The owner check reads the payload's "~<n>:<owner>" prefix (none: the
// empty owner).
const redis::Script& cancel_script() {
  static const redis::Script s(with_owner_lua(R"(
local p = redis.call('HGET', KEYS[2], ARGV[1])
if ARGV[2] ~= '*' then
  if not p then return 0 end
  if '=' .. (owner_of(p) or '') ~= ARGV[2] then return 0 end
end
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  if p then
    redis.call('HDEL', KEYS[2], ARGV[1])
    uncount(KEYS[3], p)
  end
  return 1
end
return 0)"));
  return s;
}

const redis::Script& reap_script() {
  static const redis::Script s(R"(
local ids = redis.call('ZRANGE', KEYS[3], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, ARGV[2])
local back = {}
for _, id in ipairs(ids) do
  redis.call('ZREM', KEYS[3], id)
  if redis.call('HEXISTS', KEYS[2], id) == 1 then
    redis.call('ZADD', KEYS[1], ARGV[1], id)
    back[#back + 1] = id
  end
end
return back)");
  return s;
}

namespace {
// "<length>:" at the front of `s`: the length, and `s` moved past the colon.
std::optional<std::size_t> take_length(std::string_view& s) {
  const auto colon = s.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::size_t length = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + colon, length);
  if (ec != std::errc{} || end != s.data() + colon || length > s.size() - colon - 1)
    return std::nullopt;
  s.remove_prefix(colon + 1);
  return length;
}
}  // namespace

std::string encode_payload(std::string_view channel, std::string_view data,
                           std::string_view owner) {
  // Always with the owner prefix ("~0:" for nobody): it marks the push as
  // counted in its owner's pending count (the scripts above).
  std::string out = "~" + std::to_string(owner.size()) + ":";
  out.append(owner);
  out += std::to_string(channel.size());
  out += ':';
  out.append(channel);
  out.append(data);
  return out;
}

std::optional<Payload> decode_payload(std::string_view payload) {
  std::string owner;
  if (!payload.empty() && payload.front() == '~') {
    payload.remove_prefix(1);
    const auto length = take_length(payload);
    if (!length) return std::nullopt;
    owner = std::string(payload.substr(0, *length));
    payload.remove_prefix(*length);
  }
  const auto length = take_length(payload);
  if (!length) return std::nullopt;
  return Payload{std::string(payload.substr(0, *length)), std::string(payload.substr(*length)),
                 std::move(owner)};
}

}  // namespace heartwheel::push::detail
