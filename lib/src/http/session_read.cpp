// The reading half of a session: the parse loop, request events from the
// llhttp glue, the read-phase deadlines (first byte, keep-alive, header, body)
// and the reading pause (pipeline depth, backpressure). The writing half is in
// session_write.cpp, the handler's calls in session_answer.cpp.
#include <heartwheel/http/session.h>

#include "exchange.h"
#include "parser.h"
#include "session_call.h"

namespace heartwheel::http {

namespace {
// A connection waiting for its turn keeps being read (stopping and starting
// the transport costs system calls every turn) until this many unparsed
// bytes wait: then TCP pushes back as for any pause.
constexpr std::size_t kTurnReadAhead = 64 * 1024;
}  // namespace

using detail::Exchange;
using net::CloseReason;
using net::Deadline;
namespace reason = http::close_reason;

// The slot each read phase keeps its deadline in. The phases are exclusive,
// so at most one of the three slots is set at a time.
Deadline Session::slot_of(ReadPhase phase) noexcept {
  switch (phase) {
    case ReadPhase::kHeaders:
      return deadline::header_timeout;
    case ReadPhase::kBody:
      return deadline::body_timeout;
    default:
      return deadline::keepalive_timeout;  // first byte, keep-alive
  }
}

void Session::on_data(std::string_view bytes) {
  const Call call(*this);
  if (awaiting_upgrade_ && !closed()) {
    // Read before the transport paused: the new protocol's bytes, kept for it.
    if (!queue_.empty() && queue_.back()->upgrade) queue_.back()->upgrade->rest.append(bytes);
    return;
  }
  if (closed() || stop_reading_ || bytes.empty()) return;
  if (reading_paused_) {
    // The transport may deliver a read already in flight after set_reading(false),
    // and a connection waiting for its turn reads on (kTurnReadAhead).
    pending().append(bytes);
    if (read_ahead_full()) transport_->set_reading(false);
    return;
  }
  parse(bytes);
  sync_deadlines();
}

void Session::parse(std::string_view bytes) {
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  llhttp_t& state = parser_->state;
  std::size_t started = 0;  // requests dispatched from these bytes
  const auto began = std::chrono::steady_clock::now();
  while (p < end) {
    if (closed() || stop_reading_) return;  // the rest is never answered
    if (!receiving_) {
      if (draining_) {
        stop_reading_ = true;
        return;
      }
      if (started > 0 && turn_used(started, began) && yield_turn(p, end)) return;
      if (!may_start_request()) {
        keep_rest(p, end);
        return;
      }
    }
    const llhttp_errno_t err = llhttp_execute(&state, p, static_cast<std::size_t>(end - p));
    if (err == HPE_OK) return;
    if (err == HPE_PAUSED) {
      // Paused by on_message_complete: dispatch, then continue after the message.
      p = llhttp_get_error_pos(&state);
      // Upgrade + Connection: upgrade (llhttp's upgrade flag; CONNECT is not
      // ours to switch): what follows is another protocol's.
      const bool switching = state.upgrade == 1 && state.method != HTTP_CONNECT;
      llhttp_resume(&state);
      if (!queue_.empty()) {
        // The completed request is the newest one in the queue.
        std::shared_ptr<Exchange> done = queue_.back();
        if (switching) begin_upgrade(std::string_view(p, static_cast<std::size_t>(end - p)));
        dispatch(done);
        detail::recycle(std::move(done));  // answered at once: the last holder
        ++started;
      }
      continue;
    }
    if (err == HPE_PAUSED_UPGRADE) {
      // A CONNECT: we do not tunnel. It was answered as plain HTTP and its
      // connection ends (its exchange carries close_after).
      stop_reading_ = true;
      return;
    }
    const int status = parser_->error_status != 0 ? parser_->error_status : 400;
    if (status == 400) ++stats_->parse_errors;
    if (status == 413) ++stats_->body_too_large;
    if (status == 431 || status == 414) ++stats_->header_too_large;
    fail(status, CloseReason::protocol_error);
    return;
  }
}

// A new request may start unless the pipeline is full, the connection is
// above its high watermark, or answers wait in user space beyond
// pipeline_queue_limit: answering more while the peer does not read would
// only buffer (nginx reads the next request only after the answer, too).
// Otherwise reading pauses until answers go out.
bool Session::may_start_request() {
  const bool full = queue_.size() >= options_->max_pipelined;
  const bool backed_up = !transport_->writable();
  // Answers still in user space: wait until the kernel took them
  // (SessionOptions::pipeline_queue_limit), told by on_writable(true).
  const bool queued = !backed_up && transport_->queued_bytes() > options_->pipeline_queue_limit;
  if (!full && !backed_up && !queued) return true;
  if (backed_up || queued) ++stats_->backpressure_pauses;
  if (queued) transport_->notify_when_drained();
  pause_with_request_waiting();
  return false;
}

// SessionOptions::pipeline_burst / pipeline_slice: this read had its share.
bool Session::turn_used(std::size_t started, std::chrono::steady_clock::time_point began) const {
  if (started >= options_->pipeline_burst) return true;
  const Duration slice = options_->pipeline_slice;
  return slice.count() > 0 && std::chrono::steady_clock::now() - began >= slice;
}

// The read had its share of the loop (turn_used) and more requests wait
// in [rest, end): let the loop's other connections have a turn first.
bool Session::yield_turn(const char* rest, const char* end) {
  if (!transport_->yield_turn()) return false;
  ++stats_->pipeline_yields;
  keep_rest(rest, end);
  pause_with_request_waiting(read_ahead_full());
  return true;
}

// [rest, end) waits for the session to read again. When it lies in
// pending_input_ already (a resumed parse), only the offset moves.
void Session::keep_rest(const char* rest, const char* end) {
  if (pending_input_) {
    const auto at = reinterpret_cast<std::uintptr_t>(rest);
    const auto base = reinterpret_cast<std::uintptr_t>(pending_input_->data());
    if (at >= base && at <= base + pending_input_->size()) {
      pending_pos_ = static_cast<std::uint32_t>(at - base);
      return;
    }
  }
  pending().assign(rest, end);
  pending_pos_ = 0;
}

std::string& Session::pending() {
  if (!pending_input_) pending_input_ = std::make_unique<std::string>();
  return *pending_input_;
}

bool Session::read_ahead_full() const noexcept {
  return pending_input_ && pending_input_->size() - pending_pos_ > kTurnReadAhead;
}

// Frees the buffer, not only empties it: a connection that once waited with
// a long pipeline must not keep that capacity for the rest of its life.
void Session::drop_pending() noexcept {
  pending_input_.reset();
  pending_pos_ = 0;
}

void Session::pause_with_request_waiting(bool stop_transport) {
  reading_paused_ = true;
  if (stop_transport) transport_->set_reading(false);
  // The next request is here, unread because the peer does not read ours
  // (or it waits for its turn): that is not idleness, so no keep-alive close
  // (the write-stall rule bounds the wait).
  if (read_phase_ == ReadPhase::kKeepalive || read_phase_ == ReadPhase::kFirstByte)
    enter_phase(ReadPhase::kNone, Duration{0});
}

void Session::maybe_resume_reading() {
  if (!reading_paused_ || closed() || queue_.size() >= options_->max_pipelined ||
      !transport_->writable())
    return;
  if (transport_->queued_bytes() > options_->pipeline_queue_limit) {
    transport_->notify_when_drained();
    return;
  }
  reading_paused_ = false;
  transport_->set_reading(true);
  // Parsed in place: a yield or pause inside only moves pending_pos_ (no
  // bytes arrive meanwhile: on_data is never called from inside parse).
  if (pending_input_) parse(std::string_view(*pending_input_).substr(pending_pos_));
  if (!reading_paused_) drop_pending();
  if (peer_eof_ && !reading_paused_) on_eof();
}

void Session::dispatch(const std::shared_ptr<Exchange>& exchange) {
  if (closed() || exchange->session != this || exchange->answered) return;
  try {
    (*handler_)(exchange->request, Responder(exchange));
  } catch (...) {
    // No exception crosses the loop: a throwing handler answers 500 (usually
    // already done, and counted, by its Responder's destructor on unwinding).
    if (exchange->session == this && !exchange->answered) {
      ++stats_->handler_errors;
      answer(*exchange, Response::text(500, "Internal Server Error\n"), false);
      flush();
    }
  }
}

void Session::on_eof() {
  const Call call(*this);
  if (closed()) return;
  peer_eof_ = true;
  if (reading_paused_) return;  // the buffered requests are parsed first
  stop_reading_ = true;
  if (receiving_) {
    // A request cut short cannot be answered: forget it.
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (*it == receiving_) {
        queue_.erase(it);
        break;
      }
    }
    receiving_->session = nullptr;
    receiving_.reset();
    enter_phase(ReadPhase::kNone, Duration{0});
  }
  if (queue_.empty())
    close(Transport::CloseMode::kAfterFlush, CloseReason::peer_closed);
  else
    sync_deadlines();
}

void Session::enter_phase(ReadPhase phase, Duration timeout, TimePoint from) {
  read_phase_ = phase;
  phase_deadline_ = phase != ReadPhase::kNone ? deadline_after(from, timeout) : kNever;
  phase_dirty_ = true;
  deadlines_changed();
}

void Session::commit_phase() {
  phase_dirty_ = false;
  // Clear the old phase's slot when the new one lives elsewhere or there is
  // none (kNone shares the keep-alive slot in slot_of): a store.
  const ReadPhase old = committed_phase_;
  if (old != ReadPhase::kNone &&
      (read_phase_ == ReadPhase::kNone || slot_of(old) != slot_of(read_phase_)))
    transport_->set_deadline(slot_of(old), kNever);
  committed_phase_ = read_phase_;
  if (read_phase_ != ReadPhase::kNone)
    transport_->set_deadline(slot_of(read_phase_), phase_deadline_);
}

void Session::enter_phase(ReadPhase phase, Duration timeout) {
  enter_phase(phase, timeout, timeout.count() > 0 ? now() : kNever);
}

void Session::begin_request() {
  if (requests_ != UINT32_MAX) ++requests_;
  ++stats_->requests;
  std::shared_ptr<Exchange> ex = detail::new_exchange();  // recycled: its buffers too
  ex->session = this;
  ex->seq = next_seq_++;
  const TimePoint started = now();
  ex->request.started = started;
  ex->request.headers.reserve(8);  // one allocation for typical requests (none once recycled)
  ex->request.deadline = deadline_after(started, options_->request_timeout);
  parser_->error_status = 0;
  receiving_ = ex;
  queue_.push_back(std::move(ex));
  // The header timeout runs from the first byte and is NOT pushed back by
  // later bytes, so a client trickling its headers cannot hold us forever.
  enter_phase(ReadPhase::kHeaders, options_->header_timeout, started);
  if (queue_.size() == 1) {
    // The oldest request in flight: the request deadline starts now.
    time_request(queue_.front()->seq, queue_.front()->request.deadline);
  }
}

int Session::headers_complete() {
  Exchange& ex = *receiving_;
  llhttp_t& state = parser_->state;
  Request& req = ex.request;
  req.method = llhttp_method_name(static_cast<llhttp_method_t>(state.method));
  req.version_major = state.http_major;
  req.version_minor = state.http_minor;
  req.keep_alive = llhttp_should_keep_alive(&state) != 0;
  ex.head_only = state.method == HTTP_HEAD;
  if (state.method == HTTP_CONNECT || req.header("Upgrade")) ex.close_after = true;

  const bool has_body = (state.flags & F_CHUNKED) != 0 ||
                        ((state.flags & F_CONTENT_LENGTH) != 0 && state.content_length > 0);
  if ((state.flags & F_CONTENT_LENGTH) != 0 && state.content_length > options_->max_body_bytes) {
    parser_->error_status = 413;  // refuse before reading the body
    return -1;
  }
  if (const std::string* expect = req.header("Expect");
      expect != nullptr && (req.version_major > 1 || req.version_minor >= 1)) {
    if (!iequals(*expect, "100-continue")) {
      parser_->error_status = 417;
      return -1;
    }
    ex.expect_continue = has_body;
  }
  // While 100 Continue is owed the client waits for us: no body deadline
  // until send_continue sets it.
  enter_phase(has_body ? ReadPhase::kBody : ReadPhase::kNone,
              has_body && !ex.expect_continue ? options_->body_timeout : Duration{0});
  if (ex.expect_continue && queue_.front().get() == &ex) send_continue(ex);
  return HPE_OK;
}

int Session::body_piece(std::string_view piece) {
  Exchange& ex = *receiving_;
  if (ex.request.body.size() + piece.size() > options_->max_body_bytes) {
    parser_->error_status = 413;
    return HPE_USER;
  }
  ex.request.body.append(piece);
  // Moved later: a store (the connection's entry stays where it is).
  if (options_->body_timeout.count() > 0) enter_phase(ReadPhase::kBody, options_->body_timeout);
  return HPE_OK;
}

void Session::request_complete() {
  Exchange& ex = *receiving_;
  ex.received = true;
  ex.expect_continue = false;
  if (!ex.request.keep_alive) ex.close_after = true;
  if (options_->max_requests_per_connection != 0 &&
      requests_ >= options_->max_requests_per_connection)
    ex.close_after = true;  // the last allowed request: a normal protocol close
  if (ex.close_after) stop_reading_ = true;
  receiving_.reset();
  enter_phase(ReadPhase::kNone, Duration{0});
}

void Session::enter_idle() {
  if (read_phase_ == ReadPhase::kFirstByte || read_phase_ == ReadPhase::kKeepalive) return;
  if (draining_) {
    close(Transport::CloseMode::kAfterFlush, CloseReason::drain);
    return;
  }
  // Before the first request nginx-style: the header timeout bounds the wait
  // for the first byte, but expiry closes quietly (a browser's pre-connect is
  // not an error and must not see a 408).
  if (requests_ == 0) {
    const Duration header = options_->header_timeout;
    enter_phase(ReadPhase::kFirstByte, header.count() > 0 ? header : options_->keepalive_timeout);
  } else {
    enter_phase(ReadPhase::kKeepalive, options_->keepalive_timeout);
  }
}

net::DeadlineAction Session::on_deadline(Deadline slot) {
  const Call call(*this);
  // An if-chain, not a switch: HTTP's kinds are values beyond net's enumerators.
  if (slot == deadline::keepalive_timeout) {
    if (read_phase_ == ReadPhase::kFirstByte || read_phase_ == ReadPhase::kKeepalive)
      on_read_deadline(read_phase_);
    return net::DeadlineAction::keep;
  }
  if (slot == deadline::header_timeout || slot == deadline::body_timeout) {
    if (read_phase_ != ReadPhase::kNone && slot_of(read_phase_) == slot)
      on_read_deadline(read_phase_);
    return net::DeadlineAction::keep;
  }
  if (slot == Deadline::request_timeout) {
    on_request_timeout();
    return net::DeadlineAction::keep;
  }
  if (const auto handled = handler_deadline_passed(slot)) {
    if (*handled == net::DeadlineAction::close && !closed())
      close(Transport::CloseMode::kAfterFlush, net::close_reason_for(slot));
    return net::DeadlineAction::keep;
  }
  return net::DeadlineAction::close;  // not ours (an IdlePolicy, max age, ...)
}

void Session::on_read_deadline(ReadPhase phase) {
  if (closed()) return;
  // The slot cleared itself when it passed.
  read_phase_ = committed_phase_ = ReadPhase::kNone;
  phase_deadline_ = kNever;
  switch (phase) {
    case ReadPhase::kFirstByte:
      ++stats_->first_byte_timeouts;
      close(Transport::CloseMode::kAfterFlush, reason::keepalive_timeout);
      break;
    case ReadPhase::kKeepalive:
      ++stats_->keepalive_timeouts;
      close(Transport::CloseMode::kAfterFlush, reason::keepalive_timeout);
      break;
    case ReadPhase::kHeaders:
      ++stats_->header_timeouts;
      fail(408, reason::header_timeout);
      break;
    case ReadPhase::kBody:
      ++stats_->body_timeouts;
      fail(408, reason::body_timeout);
      break;
    case ReadPhase::kNone:
      break;
  }
}

}  // namespace heartwheel::http
