// Private: redis::Lock's Lua scripts (heartwheel/redis/lock.h). The lock is a
// hash {owner, fence} with the lease as its TTL; the token counter a plain
// key beside it. Each script compares the owner with the caller's token, so
// no holder can renew or release another's lock.
#pragma once

#include <heartwheel/redis/command.h>

namespace heartwheel::redis::lock_scripts {

// KEYS lock, fence; ARGV token, lease_ms -> {1, fencing token} when the lock
// is (now, or already) the token's, {0, the holder's remaining PTTL in ms}
// when another holds it. A new holder gets INCR fence.
const Script& acquire();
// KEYS lock; ARGV token, lease_ms -> 1 (the lease restarts) if the lock is
// the token's, else 0.
const Script& renew();
// KEYS lock; ARGV token -> 1 (deleted) if the lock is the token's, else 0.
const Script& release();

}  // namespace heartwheel::redis::lock_scripts
