// Hub: delivery. The inbox is drained in order; each event of a channel with
// local subscribers is encoded once and handed to every subscriber in one
// walk of the channel's list.
#include <heartwheel/common/send_batch_scope.h>
#include <heartwheel/pubsub/hub.h>

#include <optional>

#include "local_channel.h"

namespace heartwheel::pubsub {

using detail::LocalChannel;
using detail::Subscription;

std::size_t Hub::poll() { return drain(options_.max_events_per_wakeup); }

std::size_t Hub::drain(std::size_t budget) noexcept {
  if (draining_) return 0;  // called from a callback: the running drain continues
  draining_ = true;
  ++stats_.wakeups;
  std::size_t n = 0;
  while (n < budget) {
    Envelope* e = inbox_.pop();
    if (e == nullptr) break;
    ++n;
    if (e->completion) {
      try {
        e->completion();
      } catch (...) {
        ++stats_.subscriber_errors;
      }
    } else {
      dispatch(*e);
    }
    delete e;
  }
  draining_ = false;
  return n;
}

void Hub::dispatch(Envelope& envelope) noexcept {
  ++stats_.events;
  const Event& event = *envelope.event;
  LocalChannel* ch = find(event.channel);
  // Stale: nobody here any more, or ordered before this hub's interest began
  // (an envelope left from an earlier subscription period or epoch).
  if (ch == nullptr || ch->count == 0 || envelope.seq <= ch->delivered_seq ||
      (event.epoch != ch->epoch && !envelope.new_epoch)) {
    ++stats_.stale_events;
    return;
  }
  ch->delivered_seq = envelope.seq;
  if (envelope.new_epoch) ch->epoch = event.epoch;  // the broker's store lost the stream
  if (event.kind == EventKind::publication) {
    const auto& publication = static_cast<const Publication&>(event);
    ch->delivered_offset = publication.offset;
    fan_out_publication(*ch, publication);
  } else {
    fan_out_presence(*ch, static_cast<const PresenceEvent&>(event));
  }
}

// Calls `call(subscriber)` for every subscriber of `ch`, tolerating any
// subscribe / unsubscribe from inside the calls (see hub.h), and counts.
template <class Call>
void Hub::fan_out(LocalChannel& ch, bool presence, Call&& call) noexcept {
  fanning_ = &ch;
  ChannelStats counted;
  // One frame to every subscriber: their connections' sends leave together
  // (io_uring batches where the kernel has them) when the walk ends, before
  // the next event's (heartwheel/common/send_batch_scope.h).
  std::optional<SendBatchScope> batch(std::in_place);
  for (Subscription* s = ch.head; s != nullptr; s = cursor_) {
    cursor_ = s->next;  // remove() moves it on if that one goes
    // While this subscriber's delivery runs (a write: microseconds in the
    // kernel), bring in the next subscriber and the node after it: walking
    // a channel of thousands otherwise misses the cache at every step.
    if (cursor_ != nullptr) {
      __builtin_prefetch(cursor_->subscriber);
      if (cursor_->next != nullptr) __builtin_prefetch(cursor_->next);
    }
    DeliveryOutcome outcome;
    try {
      outcome = call(*s->subscriber);
    } catch (...) {
      ++stats_.subscriber_errors;
      outcome = DeliveryOutcome::dropped;
    }
    // The next subscriber's object came in during that delivery: let it
    // start loading what its own delivery will read.
    if (cursor_ != nullptr) cursor_->subscriber->prefetch();
    switch (outcome) {
      case DeliveryOutcome::delivered:
        ++(presence ? counted.presence_deliveries : counted.deliveries);
        break;
      case DeliveryOutcome::skipped:
        ++counted.skips;
        break;
      case DeliveryOutcome::closed:
        ++counted.slow_closes;
        break;
      case DeliveryOutcome::dropped:
        ++counted.dropped;
        break;
    }
  }
  cursor_ = nullptr;
  batch.reset();  // the sends leave; a failed one closes its connection
  fanning_ = nullptr;
  fanning_event_ = nullptr;
  for (Frame& f : more_frames_) f.reset();
  ch.stats.merge(counted);
  stats_.delivery.merge(counted);
  release_if_empty(&ch);  // everyone may have left during the walk
}

template <class Encoder, class E>
bool Hub::encode(const Encoder& encoder, LocalChannel& ch, const E& event, Frame& frame) noexcept {
  if (event.frame) {  // encoded once per node by the broker
    frame = event.frame;
    return true;
  }
  if (!encoder) return true;
  ++stats_.encodes;
  try {
    frame = encoder(event);
    return true;
  } catch (...) {
    ++stats_.encode_errors;
    ch.stats.dropped += ch.count;
    stats_.delivery.dropped += ch.count;
    return false;
  }
}

void Hub::fan_out_publication(LocalChannel& ch, const Publication& publication) noexcept {
  Frame frame;
  if (!encode(options_.encode_publication, ch, publication, frame)) return;
  ++ch.stats.fanned_out;
  ++stats_.delivery.fanned_out;
  fanning_event_ = &publication;
  fan_out(ch, false, [&](Subscriber& s) { return s.on_publication(publication, frame); });
}

void Hub::fan_out_presence(LocalChannel& ch, const PresenceEvent& event) noexcept {
  Frame frame;
  if (!encode(options_.encode_presence, ch, event, frame)) return;
  fanning_event_ = &event;
  fan_out(ch, true, [&](Subscriber& s) { return s.on_presence(event, frame); });
}

Frame Hub::frame_as(std::size_t index) noexcept {
  if (fanning_event_ == nullptr || index >= more_frames_.size()) return nullptr;
  Frame& frame = more_frames_[index];
  if (frame) return frame;
  const HubOptions::Encoding& e = options_.more_encodings[index];
  try {
    if (fanning_event_->kind == EventKind::publication) {
      if (e.publication) frame = e.publication(static_cast<const Publication&>(*fanning_event_));
    } else if (e.presence) {
      frame = e.presence(static_cast<const PresenceEvent&>(*fanning_event_));
    }
    if (frame) ++stats_.encodes;
  } catch (...) {
    ++stats_.encode_errors;
    frame = nullptr;
  }
  return frame;
}

}  // namespace heartwheel::pubsub
