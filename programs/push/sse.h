// One Server-Sent Events stream (GET /sse?channel=c): a pub/sub subscriber
// that writes each publication as an event whose id is its offset, resumes
// from Last-Event-ID through the hub's recovery, and keeps the stream alive
// with comment heartbeats, all on one wheel entry of its own.
//
// Life: the node makes it, start() answers 200 text/event-stream and
// subscribes. A recovery writes its missed events at once when they fit in
// SseOptions::max_recovery_bytes, else a "reset" event instead. A streamed
// response has no abandon callback once begun, so the stream notices that its connection is gone when a write fails or at the
// next heartbeat (whichever first), and then asks the node to release it (on
// its wheel entry, never inside a hub callback). A reader that stops reading
// is closed by its connection's write-stall deadline (the HTTP send
// timeout): the heartbeats make sure bytes are waiting for it.
//
// Token expiry: a stream opened with a token that has `exp` ends at `exp`
// (expire_at), as heartwheel-chat's WebSocket connections do: one slot of
// the connection's deadline set (the kind chat::deadline::token_expiry,
// through http::Responder::set_deadline; no wheel entry of its own), which
// writes an event "token_expired", ends the response and closes the
// connection with close reason token_expired (counted in token_expired).
// SSE cannot take a fresh token on the same stream: the client reconnects
// with a new token and its Last-Event-ID, and resumes from history.
#pragma once

#include <heartwheel/http/responder.h>
#include <heartwheel/pubsub/hub.h>
#include <heartwheel/pubsub/subscriber.h>
#include <heartwheel/timer/timer_entry.h>
#include <heartwheel/timer/timer_service.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace pushsrv {

struct SseOptions {
  heartwheel::Duration heartbeat = std::chrono::seconds(15);  // a ": ping" comment this often
  bool close_slow = true;  // a reader over its high watermark: end its stream (else skip events)
  // The most a Last-Event-ID recovery may write at once (the events of the
  // missed publications): the WebSocket path's reply budget
  // (--max-reply-bytes less the reply's envelope, chat's reply_limits.h).
  // All or nothing: a recovery that does not fit sends the "reset" event
  // instead (counted in resets and recovery_cut), so a reader that never
  // reads holds at most this much, not the whole history.
  std::size_t max_recovery_bytes = std::size_t{1} << 20;
};

// What the SSE streams of one worker count (merged over workers).
struct SseStats {
  std::uint64_t opened = 0;
  std::uint64_t current = 0;  // gauge
  std::uint64_t events = 0;   // publications written
  std::uint64_t heartbeats = 0;
  std::uint64_t resumed = 0;  // Last-Event-ID recovered without a gap
  std::uint64_t resets = 0;   // Last-Event-ID that could not be recovered (a "reset" event)
  std::uint64_t recovery_cut = 0;  // of which: the missed events were over max_recovery_bytes
  std::uint64_t slow_closes = 0;
  std::uint64_t slow_skips = 0;
  std::uint64_t token_expired = 0;  // ended at their token's exp

  void merge(const SseStats& o) noexcept;
};

class SseStream final : public heartwheel::pubsub::Subscriber, private heartwheel::TimerEntry {
 public:
  // `release` is called (from the stream's wheel entry) when the stream is
  // over; it destroys the stream.
  SseStream(heartwheel::http::Responder responder, heartwheel::TimerService& timers,
            const SseOptions& options, SseStats& stats, std::function<void(SseStream&)> release);
  ~SseStream() override;

  // Subscribes to `channel`, recovering from `last_event_id` (an offset of
  // the channel's current epoch, which the broker is asked for first), and
  // answers 200 when the broker has answered the join (at once on the Bus,
  // after a Redis round trip or two on the Redis broker): recovered events
  // first, then live ones. A refused channel is answered 400, a broker that
  // is unavailable 503; the stream then ends.
  void start(heartwheel::pubsub::Hub& hub, const std::string& channel,
             std::optional<std::uint64_t> last_event_id);

  // Ends the stream at `when` (the token's exp): see "Token expiry" above.
  // Call before start(); the deadline is set when the stream begins.
  void expire_at(heartwheel::TimePoint when);

  // Ends the response now (the server drains); the owner then destroys it.
  void end() noexcept;

  heartwheel::pubsub::DeliveryOutcome on_publication(
      const heartwheel::pubsub::Publication& p, const heartwheel::pubsub::Frame& frame) override;
  heartwheel::pubsub::DeliveryOutcome on_presence(const heartwheel::pubsub::PresenceEvent&,
                                                  const heartwheel::pubsub::Frame&) override {
    return heartwheel::pubsub::DeliveryOutcome::skipped;  // SSE carries publications only
  }

 private:
  void subscribe(heartwheel::pubsub::Hub& hub, const std::string& channel,
                 std::optional<std::uint64_t> last_event_id, const std::string& epoch);
  void on_subscribed(const heartwheel::pubsub::SubscribeResult& r, const std::string& channel,
                     std::optional<std::uint64_t> last_event_id);
  static void on_tick(heartwheel::TimerEntry& e);
  void arm_expiry();
  heartwheel::net::DeadlineAction on_token_expired();
  bool send(std::string_view bytes);
  void finish() noexcept;  // over: released on the next wheel expiry

  heartwheel::http::Responder responder_;
  heartwheel::TimerService& timers_;
  const SseOptions& options_;
  SseStats& stats_;
  std::function<void(SseStream&)> release_;
  bool over_ = false;
  heartwheel::TimePoint expires_at_ = heartwheel::kNever;
  // The broker's answers come later: they hold a weak reference.
  std::shared_ptr<SseStream*> self_ = std::make_shared<SseStream*>(this);
};

// "id: N\ndata: <publication JSON>\n\n"
std::string sse_event(const heartwheel::pubsub::Publication& p);

}  // namespace pushsrv
