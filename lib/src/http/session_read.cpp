// The reading half of a session: the parse loop, request events from the
// llhttp glue, the read-phase timeouts (first byte, keep-alive, header, body)
// and the pipeline-depth pause. The writing half is in session_write.cpp.
#include <heartwheel/http/session.h>

#include "exchange.h"
#include "parser.h"

namespace heartwheel::http {

using detail::Exchange;

void Session::on_data(std::string_view bytes) {
  if (closed() || stop_reading_ || bytes.empty()) return;
  if (reading_paused_) {
    // The transport may deliver a read already in flight after set_reading(false).
    pending_input_.append(bytes);
    return;
  }
  parse(bytes);
  update_timers();
}

void Session::parse(std::string_view bytes) {
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  llhttp_t& state = parser_->state;
  while (p < end) {
    if (closed() || stop_reading_) return;  // the rest is never answered
    if (!receiving_) {
      if (draining_ || drain_signalled()) {
        draining_ = true;
        stop_reading_ = true;
        return;
      }
      if (queue_.size() >= options_->max_pipelined) {
        pending_input_.assign(p, end);
        reading_paused_ = true;
        transport_->set_reading(false);
        return;
      }
    }
    const llhttp_errno_t err = llhttp_execute(&state, p, static_cast<std::size_t>(end - p));
    if (err == HPE_OK) return;
    if (err == HPE_PAUSED) {
      // Paused by on_message_complete: dispatch, then continue after the message.
      p = llhttp_get_error_pos(&state);
      llhttp_resume(&state);
      if (!queue_.empty()) {
        // The completed request is the newest one in the queue.
        std::shared_ptr<Exchange> done = queue_.back();
        dispatch(done);
      }
      continue;
    }
    if (err == HPE_PAUSED_UPGRADE) {
      // We do not switch protocols: the upgrade request was answered as plain
      // HTTP and its connection ends (its exchange carries close_after).
      stop_reading_ = true;
      return;
    }
    const int status = parser_->error_status != 0 ? parser_->error_status : 400;
    if (status == 400) ++stats_->parse_errors;
    if (status == 413) ++stats_->body_too_large;
    if (status == 431 || status == 414) ++stats_->header_too_large;
    fail(status, CloseReason::kBadRequest);
    return;
  }
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

void Session::resume_reading() {
  reading_paused_ = false;
  transport_->set_reading(true);
  std::string input = std::move(pending_input_);
  pending_input_.clear();
  parse(input);
  if (peer_eof_ && !reading_paused_) on_eof();
}

void Session::on_eof() {
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
  }
  if (queue_.empty()) close(Transport::CloseMode::kAfterFlush, CloseReason::kPeerClosed);
  else update_timers();
}

void Session::begin_request() {
  ++requests_;
  ++stats_->requests;
  auto ex = std::make_shared<Exchange>();
  ex->session = this;
  ex->seq = next_seq_++;
  ex->request.started = timers_->now();
  ex->request.headers.reserve(8);  // one allocation for typical requests, not three
  if (options_->request_timeout.count() > 0)
    ex->request.deadline = ex->request.started + options_->request_timeout;
  parser_->error_status = 0;
  receiving_ = ex;
  queue_.push_back(std::move(ex));
  if (queue_.size() == 1) transport_->set_busy(true);
  // The header timeout runs from the first byte and is NOT pushed back by
  // later bytes, so a client trickling its headers cannot hold us forever.
  read_phase_ = ReadPhase::kHeaders;
  if (options_->header_timeout.count() > 0) timers_->schedule(read_timer_, options_->header_timeout);
  else timers_->cancel(read_timer_);
  if (queue_.size() == 1) update_timers();  // the request deadline starts now
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
  read_phase_ = has_body ? ReadPhase::kBody : ReadPhase::kNone;
  timers_->cancel(read_timer_);
  if (ex.expect_continue && queue_.front().get() == &ex) send_continue(ex);
  // While 100 Continue is owed the client waits for us: no body timeout yet.
  if (has_body && !ex.expect_continue && options_->body_timeout.count() > 0)
    timers_->schedule(read_timer_, options_->body_timeout);
  return HPE_OK;
}

int Session::body_piece(std::string_view piece) {
  Exchange& ex = *receiving_;
  if (ex.request.body.size() + piece.size() > options_->max_body_bytes) {
    parser_->error_status = 413;
    return HPE_USER;
  }
  ex.request.body.append(piece);
  if (options_->body_timeout.count() > 0) timers_->schedule(read_timer_, options_->body_timeout);
  return HPE_OK;
}

void Session::request_complete() {
  Exchange& ex = *receiving_;
  ex.received = true;
  ex.expect_continue = false;
  if (!ex.request.keep_alive) ex.close_after = true;
  if (options_->max_requests_per_connection != 0 &&
      requests_ >= options_->max_requests_per_connection) {
    ex.close_after = true;
    ex.close_reason = CloseReason::kRequestLimit;
  }
  if (ex.close_after) stop_reading_ = true;
  receiving_.reset();
  read_phase_ = ReadPhase::kNone;
  timers_->cancel(read_timer_);
}

void Session::enter_idle() {
  if (read_phase_ == ReadPhase::kFirstByte || read_phase_ == ReadPhase::kKeepalive) return;
  if (draining_) {
    close(Transport::CloseMode::kAfterFlush, CloseReason::kDrained);
    return;
  }
  // Before the first request nginx-style: the header timeout bounds the wait
  // for the first byte, but expiry closes quietly (a browser's pre-connect is
  // not an error and must not see a 408).
  Duration wait = options_->keepalive_timeout;
  if (requests_ == 0) {
    read_phase_ = ReadPhase::kFirstByte;
    if (options_->header_timeout.count() > 0) wait = options_->header_timeout;
  } else {
    read_phase_ = ReadPhase::kKeepalive;
  }
  if (wait.count() > 0) timers_->schedule(read_timer_, wait);
  else timers_->cancel(read_timer_);
}

void Session::on_read_timeout(TimerEntry& e) {
  Session& s = *static_cast<Timer&>(e).owner;
  switch (s.read_phase_) {
    case ReadPhase::kFirstByte:
      ++s.stats_->first_byte_timeouts;
      s.close(Transport::CloseMode::kAfterFlush, CloseReason::kFirstByteTimeout);
      break;
    case ReadPhase::kKeepalive:
      ++s.stats_->keepalive_timeouts;
      s.close(Transport::CloseMode::kAfterFlush, CloseReason::kKeepaliveTimeout);
      break;
    case ReadPhase::kHeaders:
      ++s.stats_->header_timeouts;
      s.fail(408, CloseReason::kHeaderTimeout);
      break;
    case ReadPhase::kBody:
      ++s.stats_->body_timeouts;
      s.fail(408, CloseReason::kBodyTimeout);
      break;
    case ReadPhase::kNone:
      break;
  }
}

}  // namespace heartwheel::http
