// DelayedQueue: scheduling, cancelling, and a claim's life from its script to
// the acknowledgement. The order in which held pushes are claimed and
// delivered is in delayed_order.cpp, loading and reaping in delayed_load.cpp.
// See heartwheel/push/delayed_queue.h.
#include <heartwheel/common/error.h>
#include <heartwheel/push/delayed_queue.h>

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "held.h"
#include "store.h"

namespace heartwheel::push {

std::int64_t to_unix_ms(WallTime t) noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

WallTime from_unix_ms(std::int64_t ms) noexcept {
  return WallTime(std::chrono::duration_cast<WallClock::duration>(std::chrono::milliseconds(ms)));
}

namespace {
// `n` bytes from the kernel's CSPRNG (getrandom(2), blocking only until the
// pool is first seeded at boot).
void random_bytes(unsigned char* out, std::size_t n) {
  while (n > 0) {
    const ssize_t got = ::getrandom(out, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "getrandom");
    }
    out += got;
    n -= static_cast<std::size_t>(got);
  }
}
}  // namespace

DelayedQueue::DelayedQueue(LoopWheel& wheel, redis::Client& client, DelayedQueueOptions options,
                           DeliverFunction deliver)
    : DelayedQueue(wheel, client, std::move(options),
                   deliver ? AsyncDeliverFunction([f = std::move(deliver)](const DelayedPush& p,
                                                                           DeliveredCallback done) {
                     f(p);  // an exception: deliver_errors, left for the lease
                     done(true);
                   })
                           : AsyncDeliverFunction()) {}

DelayedQueue::DelayedQueue(LoopWheel& wheel, redis::Client& client, DelayedQueueOptions options,
                           AsyncDeliverFunction deliver)
    : wheel_(wheel),
      client_(client),
      options_(std::move(options)),
      deliver_(std::move(deliver)),
      tags_((options_.validate(), options_.partitions)),
      load_timer_(&DelayedQueue::on_load_timer),
      reap_timer_(&DelayedQueue::on_reap_timer),
      front_timer_(&DelayedQueue::on_front_timer) {
  // A durable claim is delivered once its WAIT answers, which takes up to
  // wait_timeout when no replica acknowledges: the lease must leave room
  // for that and the delivery, or the reaper re-queues a push being
  // delivered, and it is delivered twice.
  const redis::ClientOptions& link = client_.options();
  if (link.wait_replicas > 0 && link.wait_timeout * 2 > options_.lease)
    throw std::invalid_argument(
        "DelayedQueue: lease must be at least twice the Redis client's wait_timeout");
  // One redis-server: one owners hash for every partition (an exact cap).
  // A cluster: a script touches one slot, so each partition counts its own
  // and holds its share of the cap.
  const bool cluster = !link.cluster.seeds.empty();
  const std::size_t cap = options_.max_pending_per_owner;
  owner_cap_ = cluster ? (cap + tags_.size() - 1) / tags_.size() : cap;
  for (std::size_t i = 0; i < tags_.size(); ++i) {
    const std::string base = options_.key_prefix + tags_.braced(i);
    partitions_.push_back({{base + "due", base + "data", base + "claims",
                            cluster ? base + "owners" : options_.key_prefix + "owners"},
                           kNothingLoaded});
  }
  if (!deliver_) throw std::invalid_argument("DelayedQueue: a deliver function is required");
  load_timer_.owner = this;
  reap_timer_.owner = this;
  front_timer_.owner = this;
}

DelayedQueue::~DelayedQueue() { stop(); }

void DelayedQueue::start() {
  if (started_) return;
  started_ = true;
  life_ = std::make_shared<int>(0);
  load();
  wheel_.schedule(reap_timer_, options_.reap_interval);
}

void DelayedQueue::stop() {
  life_.reset();  // pending callbacks now do nothing
  started_ = false;
  for (auto& [id, held] : held_) wheel_.cancel(*held);
  waiting_.clear();
  held_.clear();
  claims_base_ += claims_.size();  // replies still coming belong to no claim now
  claims_.clear();
  wheel_.cancel(load_timer_);
  wheel_.cancel(reap_timer_);
  wheel_.cancel(front_timer_);
  for (Partition& p : partitions_) p.loaded_until_us = kNothingLoaded;
  loads_pending_ = 0;
  reaping_ = 0;
}

DelayedQueue::Partition& DelayedQueue::partition_of(std::string_view id) {
  return partitions_[tags_.of(id)];
}

redis::Callback DelayedQueue::guarded(redis::Callback f) const {
  return
      [life = std::weak_ptr<int>(life_), f = std::move(f)](std::error_code ec, redis::Reply reply) {
        if (!life.expired()) f(ec, std::move(reply));
      };
}

std::int64_t DelayedQueue::now_us() const {
  const WallTime now = options_.clock ? options_.clock() : WallClock::now();
  return std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
}

WallTime DelayedQueue::accept_time() noexcept {
  last_accept_us_ = std::max(now_us(), last_accept_us_ + 1);
  return detail::from_unix_us(last_accept_us_);
}

// Redis holds wall-clock times, the wheel steady ones: convert through "now"
// on both clocks.
TimePoint DelayedQueue::wheel_time(std::int64_t due_us) const noexcept {
  const std::int64_t in = due_us - now_us();
  return in <= 0 ? wheel_.now() : deadline_after(wheel_.now(), std::chrono::microseconds(in));
}

// A UUIDv4: 16 random bytes, version and variant bits set (122 random bits),
// nothing from a counter or the clock, so that one id says nothing of another.
std::string random_id() {
  static constexpr char kHex[] = "0123456789abcdef";
  unsigned char b[16];
  random_bytes(b, sizeof b);
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[b[i] >> 4];
    out += kHex[b[i] & 15];
  }
  return out;
}

// ---- scheduling and cancelling ----------------------------------------------

std::error_code DelayedQueue::schedule(std::string channel, std::string data, WallTime due,
                                       ScheduleCallback done) {
  return schedule(std::move(channel), std::move(data), due, std::string(), std::move(done));
}

std::error_code DelayedQueue::schedule(std::string channel, std::string data, WallTime due,
                                       std::string owner, ScheduleCallback done) {
  if (channel.empty()) return std::make_error_code(std::errc::invalid_argument);
  const std::int64_t due_us = std::max<std::int64_t>(detail::to_unix_us_ceil(due), 0);
  DelayedPush push{random_id(), std::move(channel), std::move(data), detail::from_unix_us(due_us),
                   std::move(owner)};
  const std::string due_arg = detail::due_score(due_us);
  const std::string payload = detail::encode_payload(push.channel, push.data, push.owner);
  Partition& part = partition_of(push.id);
  redis::Command cmd = detail::schedule_script().call(
      {part.keys.due, part.keys.data, part.keys.owners},
      {push.id, due_arg, payload, push.owner, std::to_string(owner_cap_)});
  // Idempotent (same id, same values): safe to send again after a reconnect.
  // Durable: acknowledged once wait_replicas replicas have it, if set.
  const std::error_code refused =
      client_.command(std::move(cmd),
                      guarded([this, &part, push = std::move(push), due_us, done = std::move(done)](
                                  std::error_code ec, redis::Reply reply) {
                        if (ec) {
                          ++stats_.schedule_errors;
                          ++stats_.redis_errors;
                        } else if (reply.integer() == 0) {  // the owner's cap: nothing stored
                          ++stats_.schedule_capped;
                          ec = heartwheel::errc::limit_reached;
                        } else {
                          ++stats_.scheduled;
                          // Inside the loaded window no load will bring it: held now.
                          if (started_ && due_us <= part.loaded_until_us) hold(push.id, due_us);
                        }
                        if (done) done(ec, push);
                      }),
                      {.retry = true, .durable = true});
  if (refused) {
    ++stats_.schedule_errors;
    ++stats_.redis_errors;
  }
  return refused;
}

std::error_code DelayedQueue::cancel(std::string_view id, CancelCallback done) {
  return cancel(id, std::nullopt, std::move(done));
}

std::error_code DelayedQueue::cancel(std::string_view id, std::optional<std::string_view> owner,
                                     CancelCallback done) {
  // ARGV[2]: "*" for any owner, else "=" and the owner (so that no owner name
  // can mean "any").
  const Keys& keys = partition_of(id).keys;
  const std::string who = owner ? "=" + std::string(*owner) : std::string("*");
  const std::error_code refused = client_.command(
      detail::cancel_script().call({keys.due, keys.data, keys.owners}, {id, who}),
      guarded([this, id = std::string(id), done = std::move(done)](std::error_code ec,
                                                                   redis::Reply reply) {
        const bool removed = !ec && reply.integer() == 1;
        if (ec) {
          ++stats_.redis_errors;
        } else if (removed) {
          ++stats_.cancelled;
          // A claim in flight will find it gone by itself.
          if (const auto it = held_.find(id);
              it != held_.end() && it->second->state != Held::State::claiming)
            release(*it->second);
        } else {
          ++stats_.cancel_missed;
        }
        if (done) done(ec, removed);
      }));
  if (refused) ++stats_.redis_errors;
  return refused;
}

// ---- a claim: sent, won or lost, delivered in order ---------------------------

void DelayedQueue::claim(Held& held) {
  held.state = Held::State::claiming;
  ++stats_.fired;
  const std::uint64_t seq = claims_base_ + claims_.size();
  claims_.emplace_back();
  const std::string lease = std::to_string(
      now_us() / 1000 + std::chrono::ceil<std::chrono::milliseconds>(options_.lease).count());
  // Never retried by the Client: a claim whose reply was lost may have run
  // (see on_claimed). Durable (with wait_replicas): delivered once a
  // replica has the claim too, so that a failover right after the delivery
  // does not bring the push back as due.
  const Keys& keys = partition_of(held.id).keys;
  const std::error_code refused = client_.command(
      detail::claim_script().call({keys.due, keys.data, keys.claims}, {held.id, lease}),
      guarded([this, seq, id = held.id](std::error_code ec, redis::Reply reply) {
        on_claimed(seq, id, ec, std::move(reply));
      }),
      {.durable = true});
  if (refused) {
    ++stats_.redis_errors;
    claims_.back().state = Claim::State::done;
    retry_later(held);
  }
}

void DelayedQueue::retry_later(Held& held) noexcept {
  held.state = Held::State::retrying;
  ++stats_.claim_retries;
  wheel_.schedule_at(held, deadline_after(wheel_.now(), options_.retry_interval));
}

void DelayedQueue::on_claimed(std::uint64_t seq, const std::string& id, std::error_code ec,
                              redis::Reply reply) {
  if (seq < claims_base_ || seq - claims_base_ >= claims_.size()) return;  // not this start's
  Claim& slot = claims_[seq - claims_base_];
  slot.state = Claim::State::done;
  const auto it = held_.find(std::string_view(id));
  Held* held = it == held_.end() ? nullptr : it->second.get();
  // The claim ran, but no replica confirmed it in time: delivered all the
  // same (a replica down for long must not stop deliveries); a failover
  // before it replicates may deliver the push a second time.
  if (ec == redis::errc::not_replicated) ec = {};
  if (ec) {
    ++stats_.redis_errors;
    // Lost with the connection or timed out: it may have run. Trying again
    // is safe either way: if it ran, the retry finds the push gone and the
    // reaper brings it back after the lease.
    if (ec == redis::errc::disconnected || ec == heartwheel::errc::timed_out) ++stats_.lost_claims;
    if (held != nullptr) retry_later(*held);
    deliver_in_order();
    return;
  }
  const std::int64_t due_us = held != nullptr ? held->due_us : now_us();
  if (held != nullptr) release(*held);
  if (!reply.is_string()) {
    ++stats_.claimed_elsewhere;
  } else if (std::optional<detail::Payload> payload = detail::decode_payload(reply.str())) {
    ++stats_.claimed;
    slot.state = Claim::State::won;
    slot.push = DelayedPush{id, std::move(payload->channel), std::move(payload->data),
                            detail::from_unix_us(due_us), std::move(payload->owner)};
  } else {  // not ours to deliver, and never will be: forget it
    ++stats_.claimed;
    ++stats_.deliver_errors;
    acknowledge(id);
  }
  deliver_in_order();
}

void DelayedQueue::deliver(const DelayedPush& push) {
  auto once = std::make_shared<bool>(false);
  DeliveredCallback done = [this, life = std::weak_ptr<int>(life_), once,
                            id = push.id](bool delivered) {
    if (life.expired() || *once) return;
    *once = true;
    if (!delivered) {
      ++stats_.deliver_errors;  // unacknowledged: the lease re-queues it
      return;
    }
    ++stats_.delivered;
    acknowledge(id);
  };
  try {
    deliver_(push, done);
  } catch (...) {
    if (!*once) {
      *once = true;
      ++stats_.deliver_errors;  // unacknowledged: the lease re-queues it
    }
  }
}

void DelayedQueue::acknowledge(const std::string& id) {
  const Keys& keys = partition_of(id).keys;
  const std::error_code refused =
      client_.command(detail::ack_script().call({keys.due, keys.data, keys.claims, keys.owners}, {id}),
                      guarded([this](std::error_code ec, redis::Reply) {
                        if (ec)
                          ++stats_.redis_errors;
                        else
                          ++stats_.acked;
                      }),
                      {.retry = true});  // idempotent
  // Refused: the claim stays and its lease re-queues the push (delivered again).
  if (refused) ++stats_.redis_errors;
}

DelayedQueueStats DelayedQueue::stats() const {
  DelayedQueueStats s = stats_;
  s.held = held_.size();
  return s;
}

}  // namespace heartwheel::push
