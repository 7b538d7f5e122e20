// redis::Lock's Lua scripts (see lock_scripts.h).
#include "lock_scripts.h"

namespace heartwheel::redis::lock_scripts {

const Script& acquire() {
  static const Script script(R"lua(
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner == false then
  local fence = redis.call('INCR', KEYS[2])
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'fence', fence)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, fence}
end
if owner == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, tonumber(redis.call('HGET', KEYS[1], 'fence'))}
end
return {0, redis.call('PTTL', KEYS[1])}
)lua");
  return script;
}

const Script& renew() {
  static const Script script(R"lua(
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
)lua");
  return script;
}

const Script& release() {
  static const Script script(R"lua(
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
)lua");
  return script;
}

}  // namespace heartwheel::redis::lock_scripts
