// The Lua scripts of the delayed queue (see store.h and the layer README).
// Each runs atomically in Redis: that is what makes a claim exclusive.
#include "store.h"

#include <charconv>

namespace heartwheel::push::detail {

const redis::Script& schedule_script() {
  static const redis::Script s(R"(
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
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
const redis::Script& ack_script() {
  static const redis::Script s(R"(
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
return redis.call('HDEL', KEYS[2], ARGV[1]))");
  return s;
}

// The owner check reads the payload's "~<n>:<owner>" prefix (encode_payload).
const redis::Script& cancel_script() {
  static const redis::Script s(R"(
if ARGV[2] ~= '*' then
  local p = redis.call('HGET', KEYS[2], ARGV[1])
  if not p then return 0 end
  local owner = ''
  local n = string.match(p, '^~(%d+):')
  if n then owner = string.sub(p, #n + 3, #n + 2 + tonumber(n)) end
  if '=' .. owner ~= ARGV[2] then return 0 end
end
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('HDEL', KEYS[2], ARGV[1])
  return 1
end
return 0)");
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
  std::string out;
  if (!owner.empty()) {
    out = "~" + std::to_string(owner.size()) + ":";
    out.append(owner);
  }
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
