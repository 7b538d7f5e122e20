// The writing half of a session: answers in request order, response framing,
// the request deadline, write progress, closing. See session_read.cpp for the
// reading half and serialize.cpp for the bytes of a response head.
#include <heartwheel/http/session.h>

#include <algorithm>

#include "exchange.h"
#include "parser.h"
#include "serialize.h"

namespace heartwheel::http {

using detail::Exchange;

Session::Session(TimerService& timers, const SessionOptions& options, const Handler& handler,
                 Transport& transport, SessionStats& stats)
    : timers_(&timers),
      options_(&options),
      handler_(&handler),
      transport_(&transport),
      stats_(&stats),
      parser_(std::make_unique<detail::Parser>(this)) {
  options.validate();
}

Session::~Session() {
  timers_->cancel(read_timer_);
  timers_->cancel(request_timer_);
  timers_->cancel(send_timer_);
  abandon_all();
}

void Session::abandon_all() {
  // Detach everything first, then run the handlers' callbacks: they may not
  // call into the session, and the session must be consistent if they do.
  std::deque<std::shared_ptr<Exchange>> gone;
  gone.swap(queue_);
  for (auto& ex : gone) ex->session = nullptr;
  receiving_.reset();
  for (auto& ex : gone) ex->abandon();
}

void Session::start() {
  ++stats_->sessions;
  enter_idle();
}

void Session::drain() {
  if (closed() || draining_) return;
  draining_ = true;
  if (queue_.empty() && !receiving_) {
    close(Transport::CloseMode::kAfterFlush, CloseReason::kDrained);
    return;
  }
  // Bytes of requests not yet begun are dropped; the last response in flight
  // will carry Connection: close (write_head checks draining_).
  pending_input_.clear();
  if (reading_paused_) {
    reading_paused_ = false;
    stop_reading_ = true;
  }
  flush();
}

void Session::on_sent(std::size_t bytes) {
  unacked_ -= std::min(bytes, unacked_);
  if (unacked_ == 0) {
    timers_->cancel(send_timer_);
  } else if (options_->send_timeout.count() > 0) {
    timers_->schedule(send_timer_, options_->send_timeout);  // progress: start over
  }
}

void Session::send(std::string bytes) {
  if (bytes.empty()) return;
  unacked_ += bytes.size();
  if (options_->send_timeout.count() > 0 && !send_timer_.armed())
    timers_->schedule(send_timer_, options_->send_timeout);
  transport_->send(std::move(bytes));
}

void Session::answer(Exchange& ex, Response response, bool close_after) {
  ex.answered = true;
  ex.finished = true;
  ex.streaming = false;
  ex.status = response.status;
  ex.headers = std::move(response.headers);
  ex.content_length = response.body.size();
  if (!ex.head_only && detail::status_has_body(response.status)) ex.out = std::move(response.body);
  ex.close_after = ex.close_after || close_after;
}

void Session::fail(int status, CloseReason reason) {
  stop_reading_ = true;
  pending_input_.clear();
  std::shared_ptr<Exchange> ex = std::move(receiving_);
  if (!ex) {
    // Between requests (e.g. bytes after a complete request were garbage).
    ex = std::make_shared<Exchange>();
    ex->session = this;
    ex->seq = next_seq_++;
    ex->request.started = timers_->now();
    queue_.push_back(ex);
    if (queue_.size() == 1) transport_->set_busy(true);
  }
  ex->received = true;
  ex->expect_continue = false;
  ex->close_reason = reason;
  std::string body(reason_phrase(status));
  body += '\n';
  answer(*ex, Response::text(status, std::move(body)), true);
  read_phase_ = ReadPhase::kNone;
  timers_->cancel(read_timer_);
  flush();
}

void Session::send_continue(Exchange& ex) {
  ex.expect_continue = false;
  ++stats_->responses[1];
  send(std::string(detail::kContinue));
  if (&ex == receiving_.get() && read_phase_ == ReadPhase::kBody &&
      options_->body_timeout.count() > 0)
    timers_->schedule(read_timer_, options_->body_timeout);
}

void Session::write_head(Exchange& ex) {
  // Decided as late as possible: only now do we know whether this is the
  // last response of a draining connection.
  if (drain_signalled()) draining_ = true;
  if (draining_ && queue_.size() == 1) {
    ex.close_after = true;
    ex.close_reason = CloseReason::kDrained;
  }
  // A streamed body without chunked coding (HTTP/1.0 peer) ends with the connection.
  if (ex.streaming && !ex.chunked && !ex.head_only && detail::status_has_body(ex.status))
    ex.close_after = true;
  ++stats_->responses[std::clamp(ex.status / 100, 1, 5)];
  std::string bytes = detail::serialize_head(ex, *options_);
  bytes += ex.out;
  ex.out.clear();
  ex.head_written = true;
  send(std::move(bytes));
}

void Session::flush() {
  if (in_flush_ > 0) {
    flush_again_ = true;
    return;
  }
  ++in_flush_;
  do {
    flush_again_ = false;
    while (!queue_.empty() && !closed()) {
      Exchange& ex = *queue_.front();
      if (ex.expect_continue && !ex.answered) send_continue(ex);
      if (!ex.answered) break;
      if (!ex.head_written) {
        write_head(ex);
      } else if (!ex.out.empty()) {
        send(std::move(ex.out));
        ex.out.clear();
      }
      if (!ex.finished) break;
      finish_exchange();
    }
    if (reading_paused_ && !closed() && queue_.size() < options_->max_pipelined) resume_reading();
  } while (flush_again_ && !closed());
  --in_flush_;
  update_timers();
}

void Session::finish_exchange() {
  std::shared_ptr<Exchange> ex = std::move(queue_.front());
  queue_.pop_front();
  ex->session = nullptr;
  if (ex->close_after) {
    close(Transport::CloseMode::kAfterFlush, ex->close_reason);
    return;
  }
  if (queue_.empty()) transport_->set_busy(false);
  if (queue_.empty() && !receiving_) {
    if (draining_) close(Transport::CloseMode::kAfterFlush, CloseReason::kDrained);
    else if (peer_eof_ && !reading_paused_)
      close(Transport::CloseMode::kAfterFlush, CloseReason::kPeerClosed);
  }
}

void Session::update_timers() {
  if (closed()) return;
  if (queue_.empty() || options_->request_timeout.count() <= 0) {
    timers_->cancel(request_timer_);
    timed_seq_ = 0;
  } else if (timed_seq_ != queue_.front()->seq) {
    // Requests start in order and share one timeout, so the oldest one has the
    // earliest deadline: one entry covers the whole pipeline.
    timed_seq_ = queue_.front()->seq;
    timers_->schedule_at(request_timer_, queue_.front()->request.deadline);
  }
  if (!queue_.empty() || receiving_) return;
  if (!stop_reading_) {
    enter_idle();
    return;
  }
  // Nothing in flight and nothing more will be read: the session is done.
  close(Transport::CloseMode::kAfterFlush,
        peer_eof_ ? CloseReason::kPeerClosed
                  : draining_ ? CloseReason::kDrained : CloseReason::kConnectionClose);
}

void Session::close(Transport::CloseMode mode, CloseReason reason) {
  if (closed()) return;
  close_reason_ = reason;
  pending_input_.clear();
  timed_seq_ = 0;
  timers_->cancel(read_timer_);
  timers_->cancel(request_timer_);
  // A graceful close still has to get its last bytes out: keep the send
  // timeout armed so a peer that stops reading cannot keep us half-closed.
  if (mode == Transport::CloseMode::kAbort || unacked_ == 0) timers_->cancel(send_timer_);
  transport_->close(mode);
  abandon_all();
}

void Session::on_request_timeout(TimerEntry& e) {
  Session& s = *static_cast<Timer&>(e).owner;
  if (s.queue_.empty()) return;
  ++s.stats_->request_timeouts;
  s.timed_seq_ = 0;
  Exchange& ex = *s.queue_.front();
  if (ex.head_written) {
    // Too late for a status: the response is half sent.
    s.close(Transport::CloseMode::kAbort, CloseReason::kRequestTimeout);
  } else if (!ex.received) {
    s.fail(408, CloseReason::kRequestTimeout);  // the client is still sending
  } else {
    s.stop_reading_ = true;
    ex.close_reason = CloseReason::kRequestTimeout;
    std::string body(reason_phrase(503));
    body += '\n';
    s.answer(ex, Response::text(503, std::move(body)), true);
    std::shared_ptr<Exchange> keep = s.queue_.front();
    s.flush();
    keep->abandon();
  }
}

void Session::on_send_timeout(TimerEntry& e) {
  Session& s = *static_cast<Timer&>(e).owner;
  ++s.stats_->send_timeouts;
  if (s.closed()) {
    s.transport_->close(Transport::CloseMode::kAbort);  // escalate a stuck graceful close
    return;
  }
  s.close(Transport::CloseMode::kAbort, CloseReason::kSendTimeout);
}

const char* to_string(CloseReason reason) noexcept {
  switch (reason) {
    case CloseReason::kNone: return "none";
    case CloseReason::kPeerClosed: return "peer_closed";
    case CloseReason::kConnectionClose: return "connection_close";
    case CloseReason::kRequestLimit: return "request_limit";
    case CloseReason::kKeepaliveTimeout: return "keepalive_timeout";
    case CloseReason::kFirstByteTimeout: return "first_byte_timeout";
    case CloseReason::kHeaderTimeout: return "header_timeout";
    case CloseReason::kBodyTimeout: return "body_timeout";
    case CloseReason::kRequestTimeout: return "request_timeout";
    case CloseReason::kSendTimeout: return "send_timeout";
    case CloseReason::kBadRequest: return "bad_request";
    case CloseReason::kDrained: return "drained";
  }
  return "unknown";
}

}  // namespace heartwheel::http
