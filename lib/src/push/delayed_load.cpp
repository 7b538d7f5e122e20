// DelayedQueue: loading the window ahead of time, taking over overdue pushes,
// and the reaper of expired claims. See heartwheel/push/delayed_queue.h and
// the layer README ("Loading").
#include <heartwheel/push/delayed_queue.h>

#include "held.h"
#include "store.h"

namespace heartwheel::push {

namespace {
std::int64_t ms_of(Duration d) { return std::chrono::ceil<std::chrono::milliseconds>(d).count(); }
}  // namespace

void DelayedQueue::on_load_timer(TimerEntry& e) { static_cast<Periodic&>(e).owner->load(); }
void DelayedQueue::on_reap_timer(TimerEntry& e) { static_cast<Periodic&>(e).owner->reap(); }

// Two ranges per load and partition, all pipelined: what is new in the
// partition's window (after what was loaded before, so a steady state
// transfers only new pushes), and what is overdue by more than the grace and
// still unclaimed (held by a node that died, or beyond a full page). The
// first load takes everything up to the window's end, overdue pushes first
// (they fire at once).
void DelayedQueue::load() {
  if (!started_ || loads_pending_ > 0) return;
  const std::int64_t now = now_us() / 1000;
  load_failed_ = false;
  load_more_ = false;
  for (Partition& p : partitions_) {
    if (p.loaded_until_us != kNothingLoaded)
      load_range(p, true, "-inf", now - ms_of(options_.takeover_grace));
    load_range(
        p, false,
        p.loaded_until_us == kNothingLoaded ? "-inf" : "(" + detail::due_score(p.loaded_until_us),
        now + ms_of(options_.window));
  }
  if (loads_pending_ == 0) finish_load();
}

void DelayedQueue::load_range(Partition& p, bool overdue, std::string from, std::int64_t to_ms) {
  const std::string batch = std::to_string(options_.load_batch);
  const std::error_code refused = client_.command(
      {"ZRANGE", p.keys.due, from, std::to_string(to_ms), "BYSCORE", "LIMIT", "0", batch,
       "WITHSCORES"},
      guarded([this, &p, overdue, to_ms](std::error_code ec, redis::Reply reply) {
        on_loaded(p, overdue, to_ms, ec, reply);
      }));
  if (refused) {
    ++stats_.redis_errors;
    load_failed_ = true;
  } else {
    ++loads_pending_;
  }
}

void DelayedQueue::on_loaded(Partition& p, bool overdue, std::int64_t to_ms, std::error_code ec,
                             const redis::Reply& reply) {
  --loads_pending_;
  if (ec || !reply.is_array()) {
    ++stats_.redis_errors;
    load_failed_ = true;
  } else {
    const auto& e = reply.elements();
    std::int64_t due_us = 0;
    std::int64_t last = kNothingLoaded;  // the last one's due time
    for (std::size_t i = 0; i + 1 < e.size(); i += 2)
      if (detail::parse_due_score(e[i + 1].str(), due_us)) {
        hold(e[i].str(), due_us);
        last = due_us;
      }
    if (!overdue) {
      const bool full = e.size() / 2 >= options_.load_batch && last != kNothingLoaded;
      if (!full) {
        p.loaded_until_us = to_ms * 1000;
      } else if (last - 1 > p.loaded_until_us) {
        // A full page: go on from its last due time (its pushes held
        // already are skipped) on the next iteration.
        p.loaded_until_us = last - 1;
        load_more_ = true;
      } else {
        // A whole page with one due time: move past it; the rest of that
        // due time is taken over once overdue.
        p.loaded_until_us = last;
        load_more_ = true;
      }
    }
  }
  if (loads_pending_ == 0) finish_load();
}

void DelayedQueue::finish_load() {
  if (load_failed_)
    ++stats_.load_errors;
  else
    ++stats_.loads;
  const Duration next = load_failed_ ? options_.retry_interval
                        : load_more_ ? Duration{0}
                                     : options_.load_interval;
  if (started_) wheel_.schedule(load_timer_, next);
}

// Claims whose lease ran out go back to due (due now), one script per
// partition; this node holds them at once, the others take them over after
// the grace if it cannot.
void DelayedQueue::reap() {
  if (!started_) return;
  wheel_.schedule(reap_timer_, options_.reap_interval);
  if (reaping_ > 0) return;
  const std::string now = std::to_string(now_us() / 1000),
                    limit = std::to_string(options_.load_batch);
  for (Partition& p : partitions_) {
    const std::error_code refused = client_.command(
        detail::reap_script().call({p.keys.due, p.keys.data, p.keys.claims}, {now, limit}),
        guarded([this](std::error_code ec, redis::Reply reply) {
          --reaping_;
          if (ec || !reply.is_array()) {
            ++stats_.redis_errors;
            return;
          }
          const std::int64_t at = now_us();
          for (const redis::Reply& id : reply.elements()) {
            ++stats_.requeued;
            hold(id.str(), at);
          }
        }));
    if (refused)
      ++stats_.redis_errors;
    else
      ++reaping_;
  }
}

}  // namespace heartwheel::push
