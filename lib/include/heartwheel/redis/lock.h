// heartwheel/redis/lock.h - a lock in Redis, kept by a watchdog on the wheel.
//
// What it is
//   Redisson's RLock without a lease time, on a redis::Client: a named lock
//   that one holder at a time gets, across processes and nodes. The lock is
//   a key with a lease (default 30 s); while the holder lives, a wheel entry
//   renews it every lease/3 (a Lua script that extends it only if it is
//   still this holder's), so a live holder keeps it as long as it wants and
//   a crashed one's lock frees itself when the lease runs out.
//     redis::Lock locks(wheel, client, {.on_lost = [](std::string_view name,
//                                           std::uint64_t token, std::error_code why) {
//       stop_writing(name);                        // see "Losing the lock"
//     }});
//     locks.lock("orders", [](std::error_code ec, std::uint64_t token) {
//       if (ec) return;                            // stopped, timed_out, disconnected, ...
//       storage.write(data, token);                // the storage refuses tokens older than its last
//       locks.unlock("orders");
//     });
//
// Fencing tokens
//   Each acquisition of a name gets the next value of a counter kept beside
//   the lock (INCR, never reset), so tokens of one name strictly increase
//   from holder to holder. A holder that was paused past its lease (GC,
//   SIGSTOP, swap) may act before it learns it lost the lock: a store that
//   remembers the highest token it saw and refuses older ones closes that
//   gap (the known gap of Redlock-style locks). Tokens survive as long as
//   Redis keeps its data (a Redis that loses it starts counting again).
//
// Losing the lock: on_lost(name, token, why) runs, once, when
//   - a renewal finds the lock gone or another holder's (why: lock_lost);
//   - the lease runs out before a renewal is confirmed: the process was
//     frozen, or Redis did not answer (why: lock_lost), checked locally on
//     the wheel, so a holder resumed after a freeze is told within its first
//     loop turns (held(name) is false at once: it compares the local lease
//     with the clock, so check it before acting on the lock);
//   - a renewal fails (why: its error: disconnected, timed_out, stopped,
//     server_error), or the link is down when a renewal is due
//     (why: disconnected).
//   The Lock then forgets the name and sends a release (compared with the
//   holder's token in Lua, so it never frees another holder's lock), so a
//   lock that may still be ours in Redis frees now, not after the lease.
//   The local lease is counted from when each acquire or renewal was SENT,
//   less a drift margin (lease/100 + 2 ms, as Redlock), so it ends before
//   Redis's copy does.
//
// Waiting
//   lock() waits until it gets the lock; try_lock() gives up after `wait`.
//   A waiter asks again every retry_interval, or sooner when the holder's
//   lease ends sooner (the acquire script answers its remaining time), so a
//   crashed holder's lock passes on within retry_interval of its lease's end.
//   Not fair: whoever asks first after a release gets it.
//
// Keys (one hash slot, for Redis Cluster): key_prefix + "{" + name + "}"
//   (a hash: owner, fence; with the lease as its TTL) and the same + ":fence"
//   (the token counter, without TTL: one small key per name ever locked).
//   Both share the hash tag {name}, so a script sees them on one node.
//
// Outcomes
//   lock(), try_lock() and unlock() either refuse at once (return the error;
//   the callback never runs) or accept, and then the callback runs exactly
//   once, never from inside the call:
//     returned:
//       heartwheel::errc::invalid_argument  an empty name
//       redis::errc::already_locked         this Lock holds or waits for that name (not reentrant)
//       redis::errc::lock_not_held          unlock(): this Lock neither holds nor waits for it
//       what Client::command returns        stopped, not_connected, buffer_full, ...
//     given to lock()/try_lock()'s callback:
//       {} and the fencing token            acquired
//       heartwheel::errc::timed_out         try_lock(): still held by another after `wait`
//       std::errc::operation_canceled       unlock() was called while waiting
//       a command's error                   Redis could not be asked (timed_out, stopped,
//                                           server_error, ...); the waiter stops waiting
//     given to unlock()'s callback:
//       {}                                  released
//       redis::errc::lock_lost              it was no longer ours (expired, or another's)
//       a command's error                   the release may not have run: the lock then
//                                           ends with its lease (renewals stopped at unlock())
//
// Ownership and lifetime: the application owns the Lock; destroy it on the
//   loop thread, before the Client and the LoopWheel. The destructor stops
//   the renewals and sends a release for every lock held (no callbacks run).
// Threads: the loop thread only (the Client's).
// Re-entrancy: callbacks and on_lost may call lock(), try_lock() and unlock()
//   (also for the same name); they must not destroy the Lock or the Client.
// Cost: per held lock one wheel entry and one EVALSHA per lease/3; per
//   waiting lock one EVALSHA per retry_interval at most.
#pragma once

#include <heartwheel/common/stat_fields.h>
#include <heartwheel/common/time.h>
#include <heartwheel/redis/client.h>
#include <heartwheel/timer/loop_wheel.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace heartwheel::redis {

// The outcome of lock() / try_lock(): an error, or {} and the fencing token.
using LockCallback = std::function<void(std::error_code error, std::uint64_t fencing_token)>;
// The outcome of unlock().
using UnlockCallback = std::function<void(std::error_code error)>;
// A held lock was lost (see "Losing the lock"): its name, its fencing token, why.
using LostCallback =
    std::function<void(std::string_view name, std::uint64_t fencing_token, std::error_code why)>;

struct LockOptions {
  // How long the lock outlives its holder's last renewal (> 0). Redisson's
  // lockWatchdogTimeout.
  Duration lease = std::chrono::seconds(30);
  // How often a held lock is renewed; 0: lease / 3. Must be < lease.
  Duration renew_every{0};
  // How often a waiter asks again at most (> 0).
  Duration retry_interval = std::chrono::milliseconds(100);
  // Prefix of the keys in Redis (see "Keys").
  std::string key_prefix = "heartwheel:lock:";
  // This Lock's id in Redis (the owner field, with a counter per
  // acquisition); empty: "<hostname>:<pid>:<64 random bits>".
  std::string owner{};
  LostCallback on_lost{};

  // Throws std::invalid_argument naming the bad field.
  void validate() const;
};

// Counters, for logs and tests.
struct LockStats {
  std::uint64_t attempts = 0;   // acquire scripts sent
  std::uint64_t acquired = 0;   // locks got
  std::uint64_t renewals = 0;   // renewals confirmed
  std::uint64_t lost = 0;       // on_lost calls
  std::uint64_t released = 0;   // unlock() that Redis confirmed
  std::uint64_t held = 0;       // now
  std::uint64_t waiting = 0;    // now

  // The fields' table (heartwheel/common/stat_fields.h): JSON keys and kind
  // (no Prometheus family yet); lib/src/redis/stats.cpp.
  static StatTable<LockStats> fields() noexcept;
};

namespace detail {
class LockCore;
}

class Lock {
 public:
  // Validates `options` (std::invalid_argument). The Client and the wheel
  // must outlive the Lock.
  Lock(LoopWheel& wheel, Client& client, LockOptions options = {});
  ~Lock();
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

  // Takes `name`, waiting as long as another holds it; `done` gets the
  // fencing token (see "Outcomes" for the errors).
  std::error_code lock(std::string name, LockCallback done);
  // The same, but gives up (timed_out) if it is still held by another after
  // `wait` (0: ask once). It may end up to one round trip later than `wait`
  // when a request is in flight then.
  std::error_code try_lock(std::string name, Duration wait, LockCallback done);
  // Releases `name` (a held lock: the release script, compared with our
  // token), or stops waiting for it. Renewals stop at once.
  std::error_code unlock(std::string_view name, UnlockCallback done = {});

  // True while `name` is held and its local lease has not run out.
  bool held(std::string_view name) const noexcept;
  // The fencing token of a held `name`.
  std::optional<std::uint64_t> fencing_token(std::string_view name) const noexcept;
  // The id this Lock writes as owner (LockOptions::owner, or the generated one).
  const std::string& owner() const noexcept;
  // The keys of `name` in Redis: the lock, and its token counter.
  std::string lock_key(std::string_view name) const;
  std::string fence_key(std::string_view name) const;

  LockStats stats() const noexcept;
  const LockOptions& options() const noexcept;

 private:
  std::shared_ptr<detail::LockCore> core_;  // replies hold weak references
};

}  // namespace heartwheel::redis
