// The writing half of a session: answers in request order, response framing,
// the request slot, drain, closing. See session_read.cpp for the reading half,
// session_answer.cpp for the handler's calls and serialize.cpp for the bytes
// of a response head.
#include <heartwheel/http/session.h>

#include <algorithm>

#include "exchange.h"
#include "parser.h"
#include "serialize.h"
#include "session_call.h"

namespace heartwheel::http {

using detail::Exchange;
using net::CloseReason;

namespace {
// A head buffer grown by a handler's huge headers is not kept for good.
constexpr std::size_t kMaxKeptHead = 64 * 1024;
}  // namespace

Session::Session(const SessionOptions& options, const Handler& handler, Transport& transport,
                 SessionStats& stats)
    : options_(&options),
      handler_(&handler),
      transport_(&transport),
      stats_(&stats),
      parser_(std::make_unique<detail::Parser>(this)) {
  options.validate();
}

Session::~Session() { abandon_all(); }

void Session::abandon_all() {
  // Detach everything first, then run the handlers' callbacks: they may not
  // call into the session, and the session must be consistent if they do.
  std::vector<std::shared_ptr<Exchange>> gone;
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
  const Call call(*this);
  if (closed() || draining_) return;
  draining_ = true;
  if (queue_.empty() && !receiving_) {
    close(Transport::CloseMode::kAfterFlush, CloseReason::drain);
    return;
  }
  // Bytes of requests not yet begun are dropped; the last response in flight
  // will carry Connection: close (write_head checks draining_).
  drop_pending();
  if (reading_paused_) {
    reading_paused_ = false;
    stop_reading_ = true;
  }
  flush();
}

void Session::send(std::string_view bytes) {
  if (!bytes.empty()) transport_->send(bytes, {});
}

void Session::answer(Exchange& ex, Response response, bool close_after) {
  ex.answered = true;
  ex.finished = true;
  ex.streaming = false;
  ex.status = response.status;
  ex.headers = std::move(response.headers);
  ex.content_length = response.body_size();
  if (!ex.head_only && detail::status_has_body(response.status)) {
    if (response.shared_body)
      ex.shared_out = std::move(response.shared_body);
    else
      ex.out = std::move(response.body);
  }
  ex.close_after = ex.close_after || close_after;
}

void Session::fail(int status, CloseReason reason) {
  stop_reading_ = true;
  drop_pending();
  std::shared_ptr<Exchange> ex = std::move(receiving_);
  if (!ex) {
    // Between requests (e.g. bytes after a complete request were garbage).
    ex = detail::new_exchange();
    ex->session = this;
    ex->seq = next_seq_++;
    ex->request.started = now();
    queue_.push_back(ex);
  }
  ex->received = true;
  ex->expect_continue = false;
  ex->close_reason = reason;
  std::string body(reason_phrase(status));
  body += '\n';
  answer(*ex, Response::text(status, std::move(body)), true);
  enter_phase(ReadPhase::kNone, Duration{0});
  flush();
}

void Session::send_continue(Exchange& ex) {
  ex.expect_continue = false;
  ++stats_->responses[1];
  send(detail::kContinue);
  if (&ex == receiving_.get() && read_phase_ == ReadPhase::kBody)
    enter_phase(ReadPhase::kBody, options_->body_timeout);
}

void Session::write_head(Exchange& ex) {
  // Decided as late as possible: only now do we know whether this is the
  // last response of a draining connection.
  if (draining_ && queue_.size() == 1 && !ex.switching()) {
    ex.close_after = true;
    ex.close_reason = CloseReason::drain;
  }
  // A streamed body without chunked coding (HTTP/1.0 peer) ends with the connection.
  if (ex.streaming && !ex.chunked && !ex.head_only && detail::status_has_body(ex.status))
    ex.close_after = true;
  ++stats_->responses[static_cast<std::size_t>(std::clamp(ex.status / 100, 1, 5))];
  // The head is built in a buffer reused by every response of this thread
  // (no allocation per response) and goes out with the body in one write
  // (writev on a connection): the body is never copied behind the head.
  thread_local std::string head;
  detail::serialize_head(ex, *options_, head);
  if (ex.shared_out)
    transport_->send_shared(head, std::move(ex.shared_out));
  else
    transport_->send(head, ex.out);
  if (head.capacity() > kMaxKeptHead) std::string().swap(head);
  ex.out.clear();  // (a shared_out went to the transport above, moved)
  ex.head_written = true;
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
        send(ex.out);
        ex.out.clear();
      }
      if (!ex.finished) break;
      finish_exchange();
    }
    maybe_resume_reading();
  } while (flush_again_ && !closed());
  --in_flush_;
  sync_deadlines();
  notify_writable();
}

void Session::finish_exchange() {
  if (queue_.front()->switching()) {
    finish_upgrade();
    return;
  }
  std::shared_ptr<Exchange> ex = std::move(queue_.front());
  queue_.erase(queue_.begin());
  clear_handler_deadline(*ex);
  stats_->request_duration.record(now() - ex->request.started);
  ex->session = nullptr;
  ex->on_writable = nullptr;
  if (ex->close_after) {
    close(Transport::CloseMode::kAfterFlush, ex->close_reason);
    return;
  }
  detail::recycle(std::move(ex));  // when the handler's Responder is gone already
  if (queue_.empty() && !receiving_) {
    if (draining_)
      close(Transport::CloseMode::kAfterFlush, CloseReason::drain);
    else if (peer_eof_ && !reading_paused_)
      close(Transport::CloseMode::kAfterFlush, CloseReason::peer_closed);
  }
}

void Session::sync_deadlines() {
  if (closed()) return;
  sync_request_slot();
  if (!queue_.empty() || receiving_) return;
  if (!stop_reading_) {
    if (!reading_paused_) enter_idle();  // paused: a request waits (may_start_request)
    return;
  }
  // Nothing in flight and nothing more will be read: the session is done.
  close(Transport::CloseMode::kAfterFlush, peer_eof_   ? CloseReason::peer_closed
                                           : draining_ ? CloseReason::drain
                                                       : CloseReason::protocol_close);
}

void Session::sync_request_slot() {
  if (queue_.empty()) {
    if (timed_seq_ != 0) time_request(0, kNever);
    return;
  }
  // Requests start in order and share one timeout, so the oldest one has the
  // earliest deadline: the one request slot covers the whole pipeline.
  const Exchange& oldest = *queue_.front();
  if (timed_seq_ == oldest.seq) return;
  time_request(oldest.seq, oldest.request.deadline);
}

void Session::time_request(std::uint64_t seq, TimePoint deadline) {
  timed_seq_ = seq;
  timed_deadline_ = deadline;
  request_dirty_ = true;
  deadlines_changed();
}

// Inside an entry point the transport hears of a change when the outermost
// Call ends (commit_deadlines there); outside one (the session's start), now.
void Session::deadlines_changed() {
  if (calls_ == 0) commit_deadlines();
}

void Session::commit_deadlines() {
  if (phase_dirty_) commit_phase();
  if (request_dirty_) commit_request();
}

void Session::commit_request() {
  request_dirty_ = false;
  if (timed_seq_ == 0) {
    if (!request_committed_) return;  // begun and ended within one call
    request_committed_ = false;
    transport_->end_request();
    return;
  }
  Duration timeout{0};            // in flight without a deadline
  if (timed_deadline_ != kNever)  // already passed: due at the next expiry
    timeout = std::max(timed_deadline_ - now(), Duration{1});
  request_committed_ = true;
  transport_->begin_request(timeout);  // replaces the one set before
}

void Session::close(Transport::CloseMode mode, CloseReason reason) {
  if (closed()) return;
  close_reason_ = reason;
  ++stats_->closed_by_reason[static_cast<std::size_t>(reason)];
  drop_pending();
  transport_->close(mode, reason);
  // A flush-then-close keeps the connection's deadlines running: clear every
  // slot this session set (stores), after the close so a draining server
  // does not take end_request for a reason of its own.
  enter_phase(ReadPhase::kNone, Duration{0});
  if (timed_seq_ != 0) time_request(0, kNever);
  abandon_all();
}

// Reading paused at a request that asked to switch protocols: the bytes
// after it (and any that still arrive, see on_data) are the new protocol's.
void Session::begin_upgrade(std::string_view rest) {
  Exchange& ex = *queue_.back();
  ex.upgrade = std::make_unique<detail::UpgradeState>();
  ex.upgrade->rest.assign(rest);
  awaiting_upgrade_ = true;
  stop_reading_ = true;
  transport_->set_reading(false);
}

// The 101 is written. The session lets go of the connection: its slots are
// cleared now; the hand-off itself waits for the outermost call to return
// (Session::Call), because the transport may destroy the session in it. The
// exchange stays at the front of the queue until then.
void Session::finish_upgrade() {
  Exchange& ex = *queue_.front();
  ex.on_writable = nullptr;
  awaiting_upgrade_ = false;
  if (peer_eof_) {
    // The client half-closed before the switch: nobody to talk the new protocol to.
    queue_.front()->session = nullptr;
    queue_.erase(queue_.begin());
    close(Transport::CloseMode::kAfterFlush, CloseReason::peer_closed);
    return;
  }
  clear_handler_deadline(ex);  // the new protocol's handler would get it
  upgraded_ = true;
  ++stats_->upgrades;
  drop_pending();
  enter_phase(ReadPhase::kNone, Duration{0});
  if (timed_seq_ != 0) time_request(0, kNever);
}

void Session::hand_off() {
  std::shared_ptr<Exchange> ex = std::move(queue_.front());
  queue_.clear();
  ex->session = nullptr;
  std::unique_ptr<detail::UpgradeState> state = std::move(ex->upgrade);
  ex.reset();
  // The last act of this session: the transport may destroy it in this call.
  transport_->switch_protocols(std::move(state->next), std::move(state->rest));
}

void Transport::switch_protocols(UpgradeHandler /*next*/, std::string /*rest*/) {
  close(CloseMode::kAfterFlush, net::CloseReason::protocol_close);
}

void Session::on_request_timeout() {
  if (closed() || queue_.empty()) return;
  ++stats_->request_timeouts;
  Exchange& ex = *queue_.front();
  if (ex.head_written) {
    // Too late for a status: the response is half sent.
    close(Transport::CloseMode::kAbort, CloseReason::request_timeout);
  } else if (!ex.received) {
    fail(408, CloseReason::request_timeout);  // the client is still sending
  } else {
    stop_reading_ = true;
    ex.close_reason = CloseReason::request_timeout;
    std::string body(reason_phrase(503));
    body += '\n';
    answer(ex, Response::text(503, std::move(body)), true);
    std::shared_ptr<Exchange> keep = queue_.front();
    flush();
    keep->abandon();
  }
}

}  // namespace heartwheel::http
