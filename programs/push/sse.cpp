// See sse.h.
#include "sse.h"

#include <nlohmann/json.hpp>

#include "auth_gate.h"
#include "protocol.h"

namespace pushsrv {

namespace http = heartwheel::http;
namespace pubsub = heartwheel::pubsub;

void SseStats::merge(const SseStats& o) noexcept {
  opened += o.opened;
  current += o.current;
  events += o.events;
  heartbeats += o.heartbeats;
  resumed += o.resumed;
  resets += o.resets;
  recovery_cut += o.recovery_cut;
  slow_closes += o.slow_closes;
  slow_skips += o.slow_skips;
  token_expired += o.token_expired;
}

std::string sse_event(const pubsub::Publication& p) {
  // publication_json is one line (compact JSON): one data field.
  return "id: " + std::to_string(p.offset) + "\ndata: " + chat::publication_json(p) + "\n\n";
}

SseStream::SseStream(http::Responder responder, heartwheel::TimerService& timers,
                     const SseOptions& options, SseStats& stats,
                     std::function<void(SseStream&)> release)
    : heartwheel::TimerEntry(&SseStream::on_tick),
      responder_(std::move(responder)),
      timers_(timers),
      options_(options),
      stats_(stats),
      release_(std::move(release)) {
  ++stats_.opened;
  ++stats_.current;
}

SseStream::~SseStream() {
  timers_.cancel(*this);
  --stats_.current;
}

void SseStream::start(pubsub::Hub& hub, const std::string& channel,
                      std::optional<std::uint64_t> last_event_id) {
  if (!last_event_id) {
    subscribe(hub, channel, last_event_id, {});
    return;
  }
  // The id is an offset; recovery is asked in the channel's epoch now (a
  // stream whose history was freed has a new epoch, and then no offset of
  // the old one is recoverable: the reset event says so).
  std::weak_ptr<SseStream*> weak = self_;
  hub.history(channel, 0, [weak, &hub, channel, last_event_id](pubsub::HistoryResult top) {
    if (const auto self = weak.lock())
      (*self)->subscribe(hub, channel, last_event_id, top.position.epoch);
  });
}

void SseStream::subscribe(pubsub::Hub& hub, const std::string& channel,
                          std::optional<std::uint64_t> last_event_id, const std::string& epoch) {
  pubsub::SubscribeOptions so;
  if (last_event_id) so.since = pubsub::StreamPosition{*last_event_id, epoch};
  std::weak_ptr<SseStream*> weak = self_;
  hub.subscribe(*this, channel, so, [weak, channel, last_event_id](pubsub::SubscribeResult r) {
    if (const auto self = weak.lock()) (*self)->on_subscribed(r, channel, last_event_id);
  });
}

void SseStream::on_subscribed(const pubsub::SubscribeResult& r, const std::string& channel,
                              std::optional<std::uint64_t> last_event_id) {
  if (r.error) {
    const bool unavailable = r.error == pubsub::errc::unavailable;
    responder_.respond(http::Response::text(
        unavailable ? 503 : 400,
        nlohmann::json{
            {"error", {{"code", chat::error_code_name(r.error)}, {"message", r.error.message()}}}}
                .dump() +
            "\n",
        "application/json"));
    finish();
    return;
  }
  responder_.begin(200, {{"Content-Type", "text/event-stream"},
                         {"Cache-Control", "no-cache"},
                         {"X-Accel-Buffering", "no"}});
  // The missed events, all or nothing within the budget (a partial
  // recovery would be a silent gap): a reader that never reads must not
  // make the server hold the whole history (issue 34).
  std::string missed;
  bool recovered = r.recovered;
  for (const pubsub::PublicationPtr& p : r.publications) {
    if (!recovered) break;
    missed += sse_event(*p);
    if (missed.size() > options_.max_recovery_bytes) {
      ++stats_.recovery_cut;
      recovered = false;
      std::string().swap(missed);
    }
  }
  // The first event says where the stream starts; its id is that offset,
  // so a client that reconnects before any publication resumes from here.
  const nlohmann::json where = {{"channel", channel},
                                {"offset", r.position.offset},
                                {"epoch", r.position.epoch},
                                {"recovered", recovered}};
  std::string head = "retry: 1000\n";
  if (last_event_id && !recovered) {
    // Published events were lost for this client (or are more than one
    // recovery may send): it must reload.
    ++stats_.resets;
    head += "event: reset\ndata: " +
            nlohmann::json{
                {"last_event_id", *last_event_id},
                {"reason", r.recovered ? "the missed events are more than one recovery may send"
                                       : "the history no longer reaches back to Last-Event-ID"},
                {"position", where}}
                .dump() +
            "\n\n";
  } else if (last_event_id) {
    ++stats_.resumed;
    head += missed;
    stats_.events += r.publications.size();
  }
  head += "id: " + std::to_string(r.position.offset) +
          "\nevent: subscribed\ndata: " + where.dump() + "\n\n";
  if (!send(head)) return;
  timers_.schedule(*this, options_.heartbeat);
  arm_expiry();
}

void SseStream::expire_at(heartwheel::TimePoint when) { expires_at_ = when; }

void SseStream::arm_expiry() {
  if (expires_at_ == heartwheel::kNever) return;
  // The stream's connection keeps it (no wheel entry of ours); the kind is
  // chat's, so token_expiry reads the same in every statistic.
  responder_.set_deadline(chat::deadline::token_expiry, expires_at_,
                          [this] { return on_token_expired(); });
}

heartwheel::net::DeadlineAction SseStream::on_token_expired() {
  if (over_) return heartwheel::net::DeadlineAction::keep;
  ++stats_.token_expired;
  (void)responder_.write(
      "event: token_expired\ndata: {\"reason\":\"the token expired: reconnect with a fresh "
      "one\"}\n\n");
  responder_.end();
  finish();  // released on the wheel entry, outside this call
  return heartwheel::net::DeadlineAction::close;  // close reason token_expired
}

pubsub::DeliveryOutcome SseStream::on_publication(const pubsub::Publication& p,
                                                  const pubsub::Frame&) {
  if (over_) return pubsub::DeliveryOutcome::closed;
  if (!responder_.writable() && responder_.active()) {
    if (!options_.close_slow) {
      ++stats_.slow_skips;
      return pubsub::DeliveryOutcome::skipped;
    }
    // Ending the stream is graceful: the client reconnects with its
    // Last-Event-ID and recovers from history.
    ++stats_.slow_closes;
    responder_.end();
    finish();
    return pubsub::DeliveryOutcome::closed;
  }
  if (!send(sse_event(p))) return pubsub::DeliveryOutcome::closed;
  ++stats_.events;
  return pubsub::DeliveryOutcome::delivered;
}

bool SseStream::send(std::string_view bytes) {
  if (over_) return false;
  if (!responder_.active()) {
    finish();
    return false;
  }
  if (responder_.write(bytes)) return true;
  finish();
  return false;
}

void SseStream::end() noexcept {
  if (!over_) responder_.end();
  over_ = true;
}

void SseStream::finish() noexcept {
  if (over_) return;
  over_ = true;
  timers_.schedule_at(*this, timers_.now());  // released outside any hub callback
}

void SseStream::on_tick(heartwheel::TimerEntry& e) {
  auto& s = static_cast<SseStream&>(e);
  if (!s.over_ && s.send(": ping\n\n")) {
    ++s.stats_.heartbeats;
    s.timers_.schedule(s, s.options_.heartbeat);
    return;
  }
  s.over_ = true;
  s.release_(s);  // destroys s
}

}  // namespace pushsrv
