// RedisBroker: the public calls (handed to the broker's thread), the thread
// and its loop, publish / history / presence, the presence lease renewal.
// Channels (joins, reads, live messages) are in redis_broker_channels.cpp.
#include <heartwheel/common/error.h>
#include <heartwheel/common/log.h>
#include <heartwheel/pubsub_redis/redis_broker.h>
#include <heartwheel/redis/slot.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>

#include "redis_broker_core.h"

namespace heartwheel::pubsub {

using detail::WireMessage;

namespace {
std::string millis(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

}  // namespace

// ---- options, stats ---------------------------------------------------------

void RedisBrokerOptions::validate() const {
  limits.validate();
  channel.validate();
  redis.validate();
  if (channel.history_ttl.count() <= 0)
    throw std::invalid_argument(
        "pubsub: RedisBrokerOptions::channel.history_ttl must be positive (it is also the TTL of "
        "a channel's offset and epoch in Redis)");
  if (presence_ttl < std::chrono::milliseconds(30))
    throw std::invalid_argument("pubsub: presence_ttl must be at least 30ms");
  if (tick < std::chrono::milliseconds(1))
    throw std::invalid_argument("pubsub: tick must be at least 1ms");
  for (char c : key_prefix)
    if (c == '{' || c == '}')
      throw std::invalid_argument("pubsub: key_prefix must not contain braces");
  if (partitions < 1 || partitions > redis::kSlotCount)
    throw std::invalid_argument("pubsub: partitions must be 1..16384");
}

namespace {
using B = RedisBrokerStats;
constexpr auto kCounter = StatKind::counter;
constexpr StatField<B> kBrokerFields[] = {
    {"hubs", &B::hubs, StatKind::gauge, "", ""},
    {"channels", &B::channels, StatKind::gauge, "", ""},
    {"publishes", &B::publishes, kCounter, "", ""},
    {"publish_errors", &B::publish_errors, kCounter, "", ""},
    {"joins", &B::joins, kCounter, "", ""},
    {"join_errors", &B::join_errors, kCounter, "", ""},
    {"messages", &B::messages, kCounter, "", ""},
    {"posted", &B::posted, kCounter, "", ""},
    {"duplicates", &B::duplicates, kCounter, "", ""},
    {"syncs", &B::syncs, kCounter, "", ""},
    {"filled_from_stream", &B::filled_from_stream, kCounter, "", ""},
    {"lost", &B::lost, kCounter, "", ""},
    {"epoch_changes", &B::epoch_changes, kCounter, "", ""},
    {"lease_renewals", &B::lease_renewals, kCounter, "", ""},
    {"decode_errors", &B::decode_errors, kCounter, "", ""},
    {"not_replicated", &B::not_replicated, kCounter, "", ""},
    {"duplicates_refused", &B::duplicates_refused, kCounter, "", ""},
    {"rewinds", &B::rewinds, kCounter, "", ""},
};
static_assert(stat_fields_cover(StatTable<B>(kBrokerFields),
                                sizeof(redis::LinkStats) +
                                    2 * sizeof(std::vector<redis::MasterStats>)),
              "a RedisBrokerStats field without a row");
}  // namespace

StatTable<RedisBrokerStats> RedisBrokerStats::fields() noexcept { return kBrokerFields; }

std::string to_json(const RedisBrokerStats& s) {
  std::string out = "{";
  append_stat_fields_json(out, RedisBrokerStats::fields(), s);
  out += ",\"link\":" + redis::to_json(s.link);
  out += ",\"masters\":" + redis::to_json(s.masters);
  out += ",\"subscriber_masters\":" + redis::to_json(s.subscriber_masters) + '}';
  return out;
}

// ---- RedisBroker: each call goes to the broker's thread -----------------------

RedisBroker::RedisBroker(RedisBrokerOptions options) : options_(std::move(options)) {
  options_.validate();
  if (options_.node_id.empty()) {
    std::random_device rd;
    char buf[17];
    std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
    options_.node_id = buf;
  }
  core_ = std::make_unique<Core>(options_);
}

RedisBroker::~RedisBroker() {
  if (const auto n = core_->hubs(); n != 0) {
    log::error("heartwheel::pubsub::RedisBroker destroyed while hubs are attached",
               {log::field("hubs", static_cast<std::uint64_t>(n))});
    std::abort();
  }
}

void RedisBroker::publish(Inbox& from, std::string_view channel, std::string data, std::string info,
                          const PublishOptions& options, PublishDone done) {
  PublishResult early;
  if ((early.error = validate_channel(channel, options_.limits))) {
  } else if (data.size() > options_.limits.max_data_bytes) {
    early.error = errc::data_too_large;
  }
  if (early.error) {
    core_->complete(&from, [done = std::move(done), early] {
      if (done) done(early);
    });
    return;
  }
  core_->submit([core = core_.get(), from = &from, ch = std::string(channel),
                 data = std::move(data), info = std::move(info), options,
                 done = std::move(done)]() mutable {
    core->publish(from, std::move(ch), std::move(data), std::move(info), options, std::move(done));
  });
}

void RedisBroker::join(Inbox& inbox, const JoinRequest& r, JoinDone done) {
  core_->submit([core = core_.get(), inbox = &inbox, ch = std::string(r.channel),
                 info = std::string(r.info), first = r.first_local, since = r.since,
                 done = std::move(done)]() mutable {
    core->join(inbox, std::move(ch), std::move(info), first, std::move(since), std::move(done));
  });
}

void RedisBroker::leave(Inbox& inbox, std::string_view channel, std::string_view info,
                        bool last_local) {
  core_->submit([core = core_.get(), inbox = &inbox, ch = std::string(channel),
                 info = std::string(info),
                 last_local] { core->leave(inbox, ch, info, last_local); });
}

void RedisBroker::history(Inbox& from, std::string_view channel, std::size_t limit,
                          HistoryDone done) {
  core_->submit([core = core_.get(), from = &from, ch = std::string(channel), limit,
                 done = std::move(done)]() mutable {
    core->history(from, std::move(ch), limit, std::move(done));
  });
}

void RedisBroker::presence(Inbox& from, std::string_view channel, PresenceDone done) {
  core_->submit(
      [core = core_.get(), from = &from, ch = std::string(channel),
       done = std::move(done)]() mutable { core->presence(from, std::move(ch), std::move(done)); });
}

void RedisBroker::remove_history(Inbox& from, std::string_view channel, RemoveDone done) {
  core_->submit([core = core_.get(), from = &from, ch = std::string(channel),
                 done = std::move(done)]() mutable {
    core->remove_history(from, std::move(ch), std::move(done));
  });
}

void RedisBroker::attach(Inbox& inbox) { core_->attach(&inbox); }
void RedisBroker::detach(Inbox& inbox) noexcept { core_->detach(&inbox); }

void RedisBroker::halt() {
  core_->submit([core = core_.get()] { core->halt(); });
}

RedisBrokerStats RedisBroker::stats() const {
  auto promise = std::make_shared<std::promise<RedisBrokerStats>>();
  auto future = promise->get_future();
  core_->submit([core = core_.get(), promise] { promise->set_value(core->snapshot()); });
  if (future.wait_for(std::chrono::seconds(1)) == std::future_status::ready) {
    try {
      return future.get();
    } catch (const std::future_error&) {  // stopping: the request was dropped
    }
  }
  RedisBrokerStats s;  // the broker's thread is stopping or stuck: what we know here
  s.hubs = core_->hubs();
  return s;
}

// ---- the thread and its loop ----------------------------------------------------

std::string RedisBroker::redis_channel(std::string_view channel) const {
  return core_->layout().keys(channel).channel;
}

RedisBroker::Core::Core(const RedisBrokerOptions& options)
    : options_(options),
      layout_(options_.key_prefix, options_.partitions),
      publish_verb_(options_.redis.cluster.enabled() ? "SPUBLISH" : "PUBLISH") {
  ttl_ms_ = millis(options_.channel.history_ttl);
  lease_ms_ = millis(options_.presence_ttl);
  history_size_ = std::to_string(options_.channel.history_size);
  std::random_device rd;
  epoch_seed_ = (std::uint64_t{rd()} << 32) ^ rd() ^
                static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
  std::promise<void> ready;
  auto started = ready.get_future();
  thread_ = std::thread([this, &ready] { run(ready); });
  try {
    started.get();
  } catch (...) {
    thread_.join();
    throw;
  }
}

RedisBroker::Core::~Core() {
  submit([this] { begin_stop(); });
  thread_.join();
}

void RedisBroker::Core::run(std::promise<void>& ready) {
  try {
    check_uv(uv_loop_init(&loop_), "pubsub redis broker: uv_loop_init");
    wheel_ = std::make_unique<LoopWheel>(&loop_, LoopWheel::Options{.tick = options_.tick});
    async_ = new uv_async_t;
    check_uv(uv_async_init(&loop_, async_, &Core::on_async), "pubsub redis broker: uv_async_init");
    async_->data = this;
    client_ = std::make_unique<redis::Client>(*wheel_, options_.redis);
    redis::SubscriberOptions so;
    static_cast<redis::LinkOptions&>(so) = options_.redis;
    so.on_message = [this](const redis::Message& m) { on_message(m); };
    so.on_subscribed = [this](std::string_view name, bool pattern, bool again) {
      if (!pattern) on_subscribed(name, again);
    };
    subscriber_ = std::make_unique<redis::Subscriber>(*wheel_, so);
    // One slot map for both (cluster mode): a failover the publishes meet
    // (timing out on a frozen or cut-off master) moves the subscriptions
    // too, while their own connection to that master is still open.
    subscriber_->follow(*client_);
    client_->start();
    subscriber_->start();
    renewal_ = std::make_unique<Renewal>(this);
    wheel_->schedule(*renewal_, options_.presence_ttl / 3);
    {
      std::lock_guard lock(queue_mu_);
      accepting_ = true;
    }
  } catch (...) {
    ready.set_exception(std::current_exception());
    return;  // (a failed start leaks the half-made loop: the process is about to report it)
  }
  ready.set_value();
  uv_run(&loop_, UV_RUN_DEFAULT);
  uv_run(&loop_, UV_RUN_DEFAULT);  // the closes finish() started
  (void)uv_loop_close(&loop_);
}

void RedisBroker::Core::submit(std::function<void()> task) {
  std::lock_guard lock(queue_mu_);
  if (!accepting_) return;
  queue_.push_back(std::move(task));
  if (queue_.size() == 1) uv_async_send(async_);
}

void RedisBroker::Core::on_async(uv_async_t* handle) {
  static_cast<Core*>(handle->data)->drain_queue();
}

void RedisBroker::Core::drain_queue() {
  std::vector<std::function<void()>> tasks;
  {
    std::lock_guard lock(queue_mu_);
    tasks.swap(queue_);
  }
  for (auto& t : tasks) t();
}

void RedisBroker::Core::complete(Inbox* inbox, std::function<void()> completion) {
  std::lock_guard lock(inbox_mu_);
  if (attached_.count(inbox) != 0) post_completion(*inbox, std::move(completion));
}

void RedisBroker::Core::attach(Inbox* inbox) {
  std::lock_guard lock(inbox_mu_);
  attached_.insert(inbox);
}

void RedisBroker::Core::detach(Inbox* inbox) noexcept {
  std::lock_guard lock(inbox_mu_);
  attached_.erase(inbox);
}

std::uint64_t RedisBroker::Core::hubs() const {
  std::lock_guard lock(inbox_mu_);
  return attached_.size();
}

// Stopping: the hubs are gone, their leaves are queued; let them reach Redis
// (up to 1 s), then close everything on this thread.
void RedisBroker::Core::begin_stop() {
  {
    std::lock_guard lock(queue_mu_);
    accepting_ = false;
  }
  drain_queue();  // what came in before the stop
  wheel_->cancel(*renewal_);
  stop_deadline_ = wheel_->now() + std::chrono::seconds(1);
  stop_timer_ = new uv_timer_t;
  uv_timer_init(&loop_, stop_timer_);
  stop_timer_->data = this;
  uv_timer_start(stop_timer_, &Core::on_stop_timer, 0, 10);
}

void RedisBroker::Core::on_stop_timer(uv_timer_t* handle) {
  auto* self = static_cast<Core*>(handle->data);
  const bool quiet = self->halted_ || !self->client_->connected() ||
                     (self->client_->buffered() == 0 && self->client_->in_flight() == 0);
  if (quiet || self->wheel_->now() >= self->stop_deadline_) self->finish();
}

void RedisBroker::Core::finish() {
  uv_timer_stop(stop_timer_);
  subscriber_.reset();
  client_.reset();
  channels_.clear();
  wheel_.reset();
  uv_close(reinterpret_cast<uv_handle_t*>(stop_timer_),
           [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
  uv_close(reinterpret_cast<uv_handle_t*>(async_),
           [](uv_handle_t* h) { delete reinterpret_cast<uv_async_t*>(h); });
}

void RedisBroker::Core::halt() {
  halted_ = true;
  wheel_->cancel(*renewal_);
  client_->stop();
  subscriber_->stop();
}

std::error_code RedisBroker::Core::send(redis::Command command, redis::Callback done,
                                        redis::CommandOptions o) {
  if (halted_) return redis::errc::stopped;
  return client_->command(std::move(command), std::move(done), o);
}

std::string RedisBroker::Core::new_epoch() {
  std::uint64_t z = epoch_seed_ + 0x9e3779b97f4a7c15ULL * ++epoch_counter_;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(z >> 32));
  return buf;
}

// ---- publish, history, presence ---------------------------------------------------

void RedisBroker::Core::publish(Inbox* from, std::string channel, std::string data,
                                std::string info, const PublishOptions& options, PublishDone done) {
  ++stats_.publishes;
  const detail::Keys keys = layout_.keys(channel);
  auto answer = [this, from, done](PublishResult r) {
    if (r.error) ++stats_.publish_errors;
    complete(from, [done, r = std::move(r)] {
      if (done) done(r);
    });
  };
  const std::string epoch = new_epoch();
  // Durable: with wait_replicas, acknowledged only once that many replicas
  // have it (a publication that ran but is not replicated answers
  // unavailable: it is in history, and a failover may lose it).
  // Without a key the script is given the meta's name as its third key
  // (untouched: a key of the same slot, as a cluster wants).
  const bool keyed = !options.idempotency_key.empty();
  const std::string idempotency = keyed ? keys.idempotency + options.idempotency_key : keys.meta;
  const std::string window = keyed ? std::to_string(std::max<std::uint64_t>(
                                         1, to_uv_millis_ceil(options.idempotency_window)))
                                   : "0";
  auto refused = send(detail::publish_script().call({keys.meta, keys.stream, idempotency},
                                                    {history_size_, ttl_ms_, keys.channel, data,
                                                     info, epoch, publish_verb_, window}),
                      [this, answer](std::error_code ec, redis::Reply reply) {
                        PublishResult r;
                        if (ec == redis::errc::not_replicated) ++stats_.not_replicated;
                        if (ec || !reply.is_array() || (reply.size() != 2 && reply.size() != 3)) {
                          r.error = errc::unavailable;
                        } else {
                          r.position.offset = static_cast<std::uint64_t>(reply[0].integer());
                          r.position.epoch = std::string(reply[1].str());
                          r.duplicate = reply.size() == 3;  // the key's earlier result
                          if (r.duplicate) ++stats_.duplicates_refused;
                        }
                        answer(std::move(r));
                      },
                      {.durable = true});
  if (refused) answer(PublishResult{errc::unavailable, {}});
}

void RedisBroker::Core::history(Inbox* from, std::string channel, std::size_t limit,
                                HistoryDone done) {
  auto answer = [this, from, done](HistoryResult r) {
    complete(from, [done, r = std::move(r)] {
      if (done) done(r);
    });
  };
  HistoryResult bad;
  if ((bad.error = validate_channel(channel, options_.limits))) return answer(std::move(bad));
  const detail::Keys keys = layout_.keys(channel);
  auto refused =
      send(detail::history_script().call({keys.meta, keys.stream}, {std::to_string(limit)}),
           [answer, channel](std::error_code ec, redis::Reply reply) {
             HistoryResult r;
             std::vector<redis::StreamEntry> entries;
             if (ec || !reply.is_array() || reply.size() != 3 ||
                 redis::parse_entries(std::move(reply.elements()[2]), entries)) {
               r.error = errc::unavailable;
               return answer(std::move(r));
             }
             r.position.epoch = std::string(reply[1].str());
             if (!r.position.epoch.empty())
               r.position.offset = static_cast<std::uint64_t>(reply[0].integer());
             for (auto it = entries.rbegin(); it != entries.rend(); ++it)
               if (auto p = detail::to_publication(channel, r.position.epoch, *it))
                 r.publications.push_back(std::move(p));
             answer(std::move(r));
           });
  if (refused) answer(HistoryResult{errc::unavailable, {}, {}});
}

void RedisBroker::Core::remove_history(Inbox* from, std::string channel, RemoveDone done) {
  auto answer = [this, from, done](std::error_code ec) {
    complete(from, [done, ec] {
      if (done) done(ec);
    });
  };
  if (std::error_code bad = validate_channel(channel, options_.limits)) return answer(bad);
  const detail::Keys keys = layout_.keys(channel);
  auto refused = send(
      redis::Command{"XTRIM", keys.stream, "MAXLEN", "0"},
      [answer](std::error_code ec, redis::Reply reply) {
        answer(ec || reply.is_error() ? make_error_code(errc::unavailable) : std::error_code());
      });
  if (refused) answer(make_error_code(errc::unavailable));
}

void RedisBroker::Core::presence(Inbox* from, std::string channel, PresenceDone done) {
  auto answer = [this, from, done](PresenceResult r) {
    complete(from, [done, r] {
      if (done) done(r);
    });
  };
  PresenceResult bad;
  if ((bad.error = validate_channel(channel, options_.limits))) return answer(bad);
  const detail::Keys keys = layout_.keys(channel);
  auto refused = send(detail::presence_script().call({keys.counts, keys.leases, keys.meta},
                                                     {"c", options_.node_id, "0", lease_ms_,
                                                      keys.channel, "", "0", ttl_ms_, publish_verb_}),
                      [answer](std::error_code ec, redis::Reply reply) {
                        PresenceResult r;
                        if (ec || !reply.is_integer())
                          r.error = errc::unavailable;
                        else
                          r.subscribers = static_cast<std::uint64_t>(reply.integer());
                        answer(r);
                      });
  if (refused) answer(PresenceResult{errc::unavailable, 0});
}

// The watchdog: every presence_ttl / 3, this node's entry of every channel it
// has subscribers on gets its lease renewed (and its count rewritten).
void RedisBroker::Core::renew() {
  for (auto& [name, ch] : channels_) {
    if (ch->local == 0) continue;
    ++stats_.lease_renewals;
    (void)send(detail::presence_script().call({ch->keys.counts, ch->keys.leases, ch->keys.meta},
                                              {"r", options_.node_id, std::to_string(ch->local),
                                               lease_ms_, ch->keys.channel, "", "0", ttl_ms_,
                                               publish_verb_}),
               {});
  }
  wheel_->schedule(*renewal_, options_.presence_ttl / 3);
}

RedisBrokerStats RedisBroker::Core::snapshot() const {
  RedisBrokerStats s = stats_;
  s.hubs = hubs();
  s.channels = channels_.size();
  if (client_) {
    s.link = client_->stats();
    s.masters = client_->masters();
  }
  if (subscriber_) {
    s.link.merge(subscriber_->stats());
    s.subscriber_masters = subscriber_->masters();
  }
  return s;
}

}  // namespace heartwheel::pubsub
