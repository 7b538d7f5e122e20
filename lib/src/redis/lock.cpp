// redis::Lock: acquire, wait, renew on the wheel, release, lose (see
// heartwheel/redis/lock.h). Every name this Lock holds or waits for is one
// Attempt: one wheel entry (the next retry, or the next renewal and then the
// end of the local lease) and at most one command in flight. Replies find
// their Attempt by name and token, so a reply for an attempt that ended
// (unlock() while it was in flight, or a new attempt of the same name) is
// recognised and dropped.
#include <heartwheel/redis/lock.h>

#include <heartwheel/common/error.h>
#include <heartwheel/timer/timer_entry.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <stdexcept>
#include <vector>

#include "lock_scripts.h"

namespace heartwheel::redis {

namespace {
// How often a held lock is renewed.
Duration renew_period(const LockOptions& o) {
  return o.renew_every > Duration::zero() ? o.renew_every : o.lease / 3;
}
// The holder's view of a lease: shorter than Redis's by Redlock's drift margin,
// since Redis's copy may run on a faster clock.
Duration local_lease(Duration lease) { return lease - lease / 100 - std::chrono::milliseconds(2); }
}  // namespace

void LockOptions::validate() const {
  if (lease <= Duration::zero()) throw std::invalid_argument("redis::LockOptions: lease must be > 0");
  if (renew_every < Duration::zero() || (renew_every > Duration::zero() && renew_every >= lease))
    throw std::invalid_argument("redis::LockOptions: renew_every must be 0 (lease/3) or in (0, lease)");
  if (retry_interval <= Duration::zero())
    throw std::invalid_argument("redis::LockOptions: retry_interval must be > 0");
  if (local_lease(lease) <= renew_period(*this))
    throw std::invalid_argument(
        "redis::LockOptions: lease too short to renew before it ends (lease - lease/100 - 2ms must "
        "exceed renew_every)");
}

namespace detail {

namespace {

std::string generated_owner() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::random_device rd;
  const std::uint64_t bits = (std::uint64_t{rd()} << 32) ^ rd();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(bits));
  return std::string(host) + ":" + std::to_string(::getpid()) + ":" + hex;
}

std::string millis(Duration d) {
  return std::to_string(std::chrono::ceil<std::chrono::milliseconds>(d).count());
}

}  // namespace

class LockCore : public std::enable_shared_from_this<LockCore> {
  enum class Phase { waiting, held };
  struct Attempt : TimerEntry {
    explicit Attempt(LockCore* c) : TimerEntry(&fire), core(c) {}
    static void fire(TimerEntry& e) {
      auto& a = static_cast<Attempt&>(e);
      a.core->on_timer(a);
    }
    LockCore* core;
    std::string name, key, fence_key, token;
    Phase phase = Phase::waiting;
    bool in_flight = false;     // an acquire or a renewal awaits its reply
    TimePoint give_up = kNever;  // waiting: try_lock()'s end
    TimePoint valid_until{};     // held: the local lease's end
    std::uint64_t fence = 0;
    LockCallback done;  // waiting
  };
  // Callbacks that must not run inside the call that caused them, run from
  // the wheel on the next expiry.
  struct Poster : TimerEntry {
    explicit Poster(LockCore* c) : TimerEntry(&fire), core(c) {}
    static void fire(TimerEntry& e) {
      auto batch = std::move(static_cast<Poster&>(e).core->posted_);
      for (auto& fn : batch) fn();
    }
    LockCore* core;
  };

 public:
  LockCore(LoopWheel& wheel, Client& client, LockOptions options)
      : wheel_(wheel), client_(client), options_(std::move(options)) {
    options_.validate();
    if (options_.owner.empty()) options_.owner = generated_owner();
    renew_every_ = renew_period(options_);
    local_lease_ = local_lease(options_.lease);
    lease_ms_ = millis(options_.lease);
  }

  ~LockCore() {
    for (auto& [name, a] : attempts_) {
      wheel_.cancel(*a);
      if (a->phase == Phase::held || a->in_flight) release(*a, nullptr);
    }
    wheel_.cancel(poster_);
  }

  std::error_code acquire(std::string name, std::optional<Duration> wait, LockCallback done) {
    if (name.empty()) return heartwheel::errc::invalid_argument;
    if (attempts_.count(name)) return errc::already_locked;
    auto a = std::make_unique<Attempt>(this);
    a->key = key_of(name);
    a->fence_key = a->key + ":fence";
    a->token = options_.owner + ":" + std::to_string(++tokens_);
    a->name = std::move(name);
    const TimePoint now = wheel_.now();
    a->give_up = !wait ? kNever : *wait <= Duration::zero() ? now : deadline_after(now, *wait);
    a->done = std::move(done);
    if (auto ec = send_acquire(*a)) return ec;
    const std::string& key = a->name;
    attempts_.emplace(key, std::move(a));
    return {};
  }

  std::error_code unlock(std::string_view name, UnlockCallback done) {
    auto it = attempts_.find(name);
    if (it == attempts_.end()) return errc::lock_not_held;
    std::unique_ptr<Attempt> a = std::move(it->second);
    attempts_.erase(it);
    wheel_.cancel(*a);
    if (a->phase == Phase::waiting) {
      // An acquire in flight may still succeed: the release follows it on
      // the same connection, so Redis runs it after.
      if (a->in_flight) release(*a, nullptr);
      post([waiting = std::move(a->done), done = std::move(done)] {
        if (waiting) waiting(std::make_error_code(std::errc::operation_canceled), 0);
        if (done) done({});
      });
      return {};
    }
    if (auto ec = release(*a, std::move(done))) return ec;
    return {};
  }

  const Attempt* find_held(std::string_view name) const noexcept {
    auto it = attempts_.find(name);
    if (it == attempts_.end() || it->second->phase != Phase::held) return nullptr;
    return it->second.get();
  }
  bool held(std::string_view name) const noexcept {
    const Attempt* a = find_held(name);
    return a && wheel_.now() < a->valid_until;
  }
  std::optional<std::uint64_t> fencing_token(std::string_view name) const noexcept {
    const Attempt* a = find_held(name);
    if (!a) return std::nullopt;
    return a->fence;
  }
  std::string key_of(std::string_view name) const {
    return options_.key_prefix + "{" + std::string(name) + "}";
  }
  LockStats stats() const noexcept {
    LockStats s = stats_;
    for (const auto& [name, a] : attempts_) ++(a->phase == Phase::held ? s.held : s.waiting);
    return s;
  }
  const LockOptions& options() const noexcept { return options_; }

 private:
  void post(std::function<void()> fn) {
    posted_.push_back(std::move(fn));
    if (!poster_.armed()) wheel_.schedule_at(poster_, wheel_.now());
  }

  Attempt* current(const std::string& name, const std::string& token) {
    auto it = attempts_.find(name);
    return it != attempts_.end() && it->second->token == token ? it->second.get() : nullptr;
  }

  // The callback of a command for attempt `a`: it finds the attempt again (by
  // name and token) and hands the reply to `handler`. A reply for an attempt
  // that has ended is dropped, but an acquire that won after its attempt
  // ended (unlock() while it was in flight, and the release sent then was
  // lost with the connection while the acquire was sent again) is released.
  template <class Handler>
  Callback reply_to(const Attempt& a, Handler handler) {
    return [self = weak_from_this(), name = a.name, key = a.key, token = a.token, sent = wheel_.now(),
            handler](std::error_code ec, Reply r) {
      auto core = self.lock();
      if (!core) return;
      if (Attempt* live = core->current(name, token)) return (core.get()->*handler)(*live, sent, ec, std::move(r));
      if (handler == &LockCore::on_acquired && !ec && r.is_array() && r.size() == 2 && r[0].is_integer() &&
          r[0].integer() == 1)
        core->release(key, token, nullptr);
    };
  }

  std::error_code send_acquire(Attempt& a) {
    // retry: the script is idempotent for one token (a second run finds the
    // lock ours and answers the same token), so a command lost with the
    // connection is simply sent again after the reconnect.
    auto ec = client_.command(lock_scripts::acquire().call({a.key, a.fence_key}, {a.token, lease_ms_}),
                              reply_to(a, &LockCore::on_acquired), {.retry = true});
    if (!ec) {
      a.in_flight = true;
      ++stats_.attempts;
    }
    return ec;
  }

  void on_acquired(Attempt& a, TimePoint sent, std::error_code ec, Reply r) {
    a.in_flight = false;
    if (!ec && !(r.is_array() && r.size() == 2 && r[0].is_integer() && r[1].is_integer()))
      ec = heartwheel::errc::protocol_error;
    if (ec) return end_wait(a, ec);
    const TimePoint now = wheel_.now();
    // Ask again when the holder's lease ends, or after retry_interval.
    Duration next = options_.retry_interval;
    if (r[0].integer() == 1) {
      const TimePoint valid_until = sent + local_lease_;
      if (now < valid_until) {
        a.phase = Phase::held;
        a.fence = static_cast<std::uint64_t>(r[1].integer());
        a.valid_until = valid_until;
        ++stats_.acquired;
        wheel_.schedule_at(a, std::min(sent + renew_every_, valid_until));
        auto done = std::move(a.done);
        if (done) done({}, a.fence);
        return;
      }
      // The answer came after our lease (the process was frozen): not worth
      // having. Free it and ask again.
      release(a, nullptr);
      next = Duration::zero();
    } else if (const std::int64_t pttl_ms = r[1].integer(); pttl_ms >= 0) {
      next = std::min(next, Duration(std::chrono::milliseconds(pttl_ms)));
    }
    if (now >= a.give_up) return end_wait(a, heartwheel::errc::timed_out);
    wheel_.schedule_at(a, std::min(now + next, a.give_up));
  }

  void end_wait(Attempt& a, std::error_code ec) {
    auto done = std::move(a.done);
    erase(a);
    if (done) done(ec, 0);
  }

  void on_timer(Attempt& a) {
    if (a.phase == Phase::waiting) {
      if (auto ec = send_acquire(a)) end_wait(a, ec);
      return;
    }
    const TimePoint now = wheel_.now();
    if (now >= a.valid_until) return lose(a, errc::lock_lost);
    if (!client_.connected()) return lose(a, errc::disconnected);
    if (!a.in_flight) {
      CommandOptions o{.timeout = a.valid_until - now};
      if (auto ec = client_.command(lock_scripts::renew().call({a.key}, {a.token, lease_ms_}),
                                    reply_to(a, &LockCore::on_renewed), o))
        return lose(a, ec);
      a.in_flight = true;
    }
    wheel_.schedule_at(a, a.valid_until);  // lost then, unless a renewal is confirmed first
  }

  void on_renewed(Attempt& a, TimePoint sent, std::error_code ec, Reply r) {
    a.in_flight = false;
    if (ec) return lose(a, ec);
    if (!r.is_integer() || r.integer() != 1) return lose(a, errc::lock_lost, false);
    ++stats_.renewals;
    a.valid_until = std::max(a.valid_until, sent + local_lease_);
    const TimePoint now = wheel_.now();
    if (now >= a.valid_until) return lose(a, errc::lock_lost);
    wheel_.schedule_at(a, std::max(now, std::min(sent + renew_every_, a.valid_until)));
  }

  // `ours_maybe`: false when Redis said the lock is not ours (nothing to free).
  void lose(Attempt& a, std::error_code why, bool ours_maybe = true) {
    ++stats_.lost;
    const std::string name = a.name;
    const std::uint64_t fence = a.fence;
    if (ours_maybe) release(a, nullptr);
    erase(a);
    if (options_.on_lost) options_.on_lost(name, fence, why);
  }

  // The release script, compared with the attempt's token; `done` gets
  // {} (released) or lock_lost (not ours any more) or the command's error.
  std::error_code release(const Attempt& a, UnlockCallback done) { return release(a.key, a.token, std::move(done)); }
  std::error_code release(const std::string& key, const std::string& token, UnlockCallback done) {
    auto self = weak_from_this();
    return client_.command(lock_scripts::release().call({key}, {token}),
                           [self, done = std::move(done)](std::error_code ec, Reply r) {
                             if (!ec && !(r.is_integer() && r.integer() == 1)) ec = errc::lock_lost;
                             if (auto core = self.lock(); core && !ec) ++core->stats_.released;
                             if (done) done(ec);
                           });
  }

  void erase(Attempt& a) {
    wheel_.cancel(a);
    attempts_.erase(a.name);  // frees `a`
  }

  LoopWheel& wheel_;
  Client& client_;
  LockOptions options_;
  Duration renew_every_{};
  Duration local_lease_{};
  std::string lease_ms_;
  std::uint64_t tokens_ = 0;
  std::map<std::string, std::unique_ptr<Attempt>, std::less<>> attempts_;
  std::vector<std::function<void()>> posted_;
  Poster poster_{this};
  LockStats stats_;
};

}  // namespace detail

Lock::Lock(LoopWheel& wheel, Client& client, LockOptions options)
    : core_(std::make_shared<detail::LockCore>(wheel, client, std::move(options))) {}
Lock::~Lock() = default;

std::error_code Lock::lock(std::string name, LockCallback done) {
  return core_->acquire(std::move(name), std::nullopt, std::move(done));
}
std::error_code Lock::try_lock(std::string name, Duration wait, LockCallback done) {
  return core_->acquire(std::move(name), wait, std::move(done));
}
std::error_code Lock::unlock(std::string_view name, UnlockCallback done) {
  return core_->unlock(name, std::move(done));
}
bool Lock::held(std::string_view name) const noexcept { return core_->held(name); }
std::optional<std::uint64_t> Lock::fencing_token(std::string_view name) const noexcept {
  return core_->fencing_token(name);
}
const std::string& Lock::owner() const noexcept { return core_->options().owner; }
std::string Lock::lock_key(std::string_view name) const { return core_->key_of(name); }
std::string Lock::fence_key(std::string_view name) const { return core_->key_of(name) + ":fence"; }
LockStats Lock::stats() const noexcept { return core_->stats(); }
const LockOptions& Lock::options() const noexcept { return core_->options(); }

}  // namespace heartwheel::redis
