// Private: the RedisBroker's state on its own thread. Everything below
// `loop thread only` is touched by the broker's loop thread alone; the
// request queue and the set of attached inboxes are guarded by their mutexes
// (hubs call in from their threads).
#pragma once

#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/pubsub/keyed_hash.h>
#include <heartwheel/pubsub_redis/redis_broker.h>
#include <heartwheel/redis/client.h>
#include <heartwheel/redis/subscriber.h>
#include <heartwheel/timer/timer_entry.h>
#include <uv.h>

#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "redis_scripts.h"

namespace heartwheel::pubsub {

class RedisBroker::Core {
 public:
  explicit Core(const RedisBrokerOptions& options);  // starts the thread
  ~Core();                                           // lets leaves out, stops, joins

  // Any thread: runs `task` on the broker's thread (dropped once stopping).
  void submit(std::function<void()> task);
  // Any thread: answers on `inbox`'s thread (nothing if it was detached).
  void complete(Inbox* inbox, std::function<void()> completion);

  void attach(Inbox* inbox);
  void detach(Inbox* inbox) noexcept;
  std::uint64_t hubs() const;

  // Loop thread: the Broker calls, handed over by RedisBroker.
  void publish(Inbox* from, std::string channel, std::string data, std::string info,
               const PublishOptions& options, PublishDone done);
  void join(Inbox* inbox, std::string channel, std::string info, bool first_local,
            std::optional<StreamPosition> since, JoinDone done);
  void leave(Inbox* inbox, const std::string& channel, const std::string& info, bool last_local);
  void history(Inbox* from, std::string channel, std::size_t limit, HistoryDone done);
  void presence(Inbox* from, std::string channel, PresenceDone done);
  void remove_history(Inbox* from, std::string channel, RemoveDone done);
  void halt();
  RedisBrokerStats snapshot() const;
  // Immutable after construction: any thread.
  const detail::KeyLayout& layout() const noexcept { return layout_; }

 private:
  struct Waiter {
    Inbox* inbox = nullptr;
    bool first_local = false;
    bool cancelled = false;      // its hub left before the answer: do not count it
    bool in_round = false;       // its read is in flight
    bool presence_sent = false;  // its join is counted in Redis once the channel is subscribed
    bool presence_done = false;
    std::string info;
    std::error_code error;
    std::uint64_t subscribers = 0;
    std::optional<StreamPosition> since;
    JoinDone done;
  };
  // A channel's TimerEntry: armed from its first join until Redis confirms
  // the SUBSCRIBE; if Redis does not within command_timeout, its joins fail
  // with unavailable (a join never waits longer than a command would).
  struct Channel : TimerEntry {
    Core* core;
    std::string name;
    detail::Keys keys;
    bool subscribed = false;   // Redis confirmed our SUBSCRIBE (on this connection)
    bool syncing = false;      // a read is in flight: live messages wait in `buffered`
    bool synced = false;       // top and epoch are known
    bool again = false;        // another read is wanted after this one
    bool reset_epoch = false;  // the next event posted carries new_epoch
    std::uint64_t top = 0;     // the last offset posted to the hubs
    // A digest of the publication at `top` as the hubs got it (0: not
    // known): the next read compares the stream's entry there with it.
    std::uint64_t top_digest = 0;
    std::string epoch;
    std::uint64_t local = 0;  // this node's subscribers (its presence entry)
    std::vector<Inbox*> inboxes;
    std::deque<std::shared_ptr<Waiter>> waiters;
    std::vector<detail::WireMessage> buffered;
    Channel(Core* c, std::string n)
        : TimerEntry(&subscribe_timed_out),
          core(c),
          name(std::move(n)),
          keys(c->layout_.keys(name)) {}
    ~Channel() {
      if (armed()) core->wheel_->cancel(*this);
    }
    static void subscribe_timed_out(TimerEntry& e);
  };
  struct Renewal : TimerEntry {
    Core* core;
    explicit Renewal(Core* c) : TimerEntry(&fire), core(c) {}
    static void fire(TimerEntry& e) { static_cast<Renewal&>(e).core->renew(); }
  };

  void run(std::promise<void>& ready);
  static void on_async(uv_async_t* handle);
  static void on_stop_timer(uv_timer_t* handle);
  void drain_queue();
  void begin_stop();
  void finish();

  Channel& channel_for(const std::string& name);
  Channel* find(std::string_view name);
  void start_round(Channel& ch);
  void maybe_round(Channel& ch);
  void count_join(Channel& ch, const std::shared_ptr<Waiter>& w);
  void on_round(Channel& ch, std::uint64_t from, std::error_code ec, redis::Reply reply);
  // A read round's answer about the channel (read_script).
  struct EpochRead {
    std::uint64_t top = 0;
    std::string epoch;
    std::uint64_t base = 0;  // the epoch's first offset - 1 (a rewind keeps what came before)
    std::string previous;    // the epoch a rewind made it from; empty if made from nothing
  };
  void complete_round(Channel& ch, std::uint64_t from, const EpochRead& state,
                      const std::vector<PublicationPtr>& read);
  // may_release: the channel may be freed (not when called from start_round).
  void fail_round(Channel& ch, bool may_release);
  void rewind(Channel& ch);
  void on_message(const redis::Message& m);
  // Redis confirmed the channel's subscription (again: after a loss - a
  // reconnect, a failover, a moved slot - whose gap a round reads).
  void on_subscribed(std::string_view name, bool again);
  void on_live(Channel& ch, detail::WireMessage m);
  void post(Channel& ch, const EventPtr& event);
  EventPtr make_publication(const Channel& ch, detail::WireMessage&& m, bool encode);
  void release_if_idle(Channel& ch);
  void renew();
  std::string new_epoch();
  std::error_code send(redis::Command command, redis::Callback done,
                       redis::CommandOptions options = {});

  RedisBrokerOptions options_;
  detail::KeyLayout layout_;
  // PUBLISH on one redis-server, SPUBLISH on a cluster (sharded pub/sub).
  std::string publish_verb_;
  std::string ttl_ms_, lease_ms_, history_size_;

  // Guarded by queue_mu_.
  mutable std::mutex queue_mu_;
  std::vector<std::function<void()>> queue_;
  bool accepting_ = false;
  uv_async_t* async_ = nullptr;

  // Guarded by inbox_mu_.
  mutable std::mutex inbox_mu_;
  std::unordered_set<Inbox*> attached_;

  std::thread thread_;

  // Loop thread only.
  uv_loop_t loop_{};
  std::unique_ptr<LoopWheel> wheel_;
  std::unique_ptr<redis::Client> client_;
  std::unique_ptr<redis::Subscriber> subscriber_;
  std::unique_ptr<Renewal> renewal_;
  uv_timer_t* stop_timer_ = nullptr;
  TimePoint stop_deadline_{};
  bool halted_ = false;
  // Keyed: channel names are the clients' choice (pubsub/keyed_hash.h).
  std::unordered_map<std::string, std::unique_ptr<Channel>, KeyedStringHash, std::equal_to<>>
      channels_;
  std::uint64_t seq_ = 0;
  std::uint64_t epoch_counter_ = 0;
  std::uint64_t epoch_seed_ = 0;
  RedisBrokerStats stats_;
};

}  // namespace heartwheel::pubsub
