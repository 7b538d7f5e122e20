// The handler's calls, as the Responder passes them on: answers checked
// (status, header bytes), bounded (answers held behind the head) and told
// when they can be written (writability). See responder.h for the contract.
#include <heartwheel/http/session.h>

#include "exchange.h"
#include "serialize.h"
#include "session_call.h"

namespace heartwheel::http {

using detail::Exchange;

namespace {
// Marks a streamed response complete (with the last chunk when it has a body).
void close_stream(Exchange& ex) {
  if (ex.chunked && !ex.head_only && detail::status_has_body(ex.status))
    ex.out += detail::kLastChunk;
  ex.finished = true;
}
}  // namespace

bool Session::respond(Exchange& ex, Response response) {
  const Call call(*this);
  const bool both = response.shared_body && !response.body.empty();
  if (refused(ex, response.status, response.headers,
              both ? "both body and shared_body are set (set one)" : nullptr))
    return false;
  // A shared body held behind the head costs this session a reference, not
  // its bytes.
  if (!may_hold(ex, response.body.size())) return false;
  ex.answered_by_handler = true;
  answer(ex, std::move(response), false);
  flush();
  return true;
}

bool Session::begin_stream(Exchange& ex, int status, Headers headers) {
  const Call call(*this);
  if (refused(ex, status, headers)) return false;
  ex.answered = true;
  ex.answered_by_handler = true;
  ex.streaming = true;
  const Request& req = ex.request;
  // HTTP/1.0 has no chunked coding: the body ends when the connection does.
  ex.chunked = req.version_major > 1 || (req.version_major == 1 && req.version_minor >= 1);
  ex.status = status;
  ex.headers = std::move(headers);
  flush();
  return true;
}

bool Session::write_stream(Exchange& ex, std::string_view piece) {
  const Call call(*this);
  if (ex.head_only || !detail::status_has_body(ex.status)) return true;
  if (!may_hold(ex, piece.size())) return false;
  if (ex.chunked)
    detail::append_chunk(ex.out, piece);
  else
    ex.out.append(piece);
  flush();
  return true;
}

bool Session::end_stream(Exchange& ex) {
  const Call call(*this);
  close_stream(ex);
  flush();
  return true;
}

void Session::drop_responder(Exchange& ex) {
  const Call call(*this);
  // Dropped without a complete answer: finish it so the pipeline moves on.
  ++stats_->handler_errors;
  if (!ex.answered) {
    answer(ex, Response::text(500, "Internal Server Error\n"), false);
  } else {
    // A stream left open cannot get a new status: end it, then close.
    close_stream(ex);
    ex.close_after = true;
  }
  flush();
}

// Switching protocols: a 101 with the handler's headers, written in request
// order like any answer; finish_upgrade() takes over when it is out.
bool Session::upgrade(Exchange& ex, Headers headers, UpgradeHandler next) {
  const Call call(*this);
  if (!ex.upgrade) {
    ex.error =
        "upgrade refused: the request did not ask to switch protocols (it needs Upgrade and "
        "Connection: upgrade headers)";
    return false;
  }
  if (!next) {
    ex.error = "upgrade refused: no handler to take the connection over";
    return false;
  }
  if (draining_) {
    ex.error = "upgrade refused: the server is draining (answer 503)";
    return false;
  }
  if (refused(ex, 101, headers)) return false;
  ex.answered = true;
  ex.answered_by_handler = true;
  ex.finished = true;
  ex.status = 101;
  ex.headers = std::move(headers);
  ex.content_length = 0;
  ex.close_after = false;  // set for every Upgrade request; this one switches instead
  ex.upgrade->next = std::move(next);
  flush();
  return true;
}

// A status or header that would corrupt the response (response splitting):
// nothing of it is written, the request gets a 500 instead, and the handler
// reads why from Responder::error().
bool Session::refused(Exchange& ex, int status, const Headers& headers, const char* also_wrong) {
  std::string why = also_wrong != nullptr ? also_wrong : detail::check_response(status, headers);
  if (why.empty()) return false;
  ex.error = std::move(why);
  ++stats_->invalid_responses;
  ex.answered_by_handler = true;  // the handler did answer: no on_abandon
  answer(ex, Response::text(500, "Internal Server Error\n"), false);
  flush();
  return true;
}

// The answer on the wire goes straight to the transport (bounded there by the
// connection's WritePolicy); answers behind it wait here, up to
// max_buffered_bytes in all. Over that: refused, nothing held, and the
// handler may retry from on_writable (when its answer reaches the wire).
bool Session::may_hold(Exchange& ex, std::size_t bytes) {
  if (!queue_.empty() && queue_.front().get() == &ex) return true;
  const std::size_t held = buffered_bytes();
  if (held + bytes <= options_->max_buffered_bytes) return true;
  ++stats_->answers_refused;
  ex.error = "answer refused: " + std::to_string(held) + " bytes already wait behind an " +
             "earlier answer and max_buffered_bytes is " +
             std::to_string(options_->max_buffered_bytes) + "; retry from on_writable";
  return false;
}

std::size_t Session::buffered_bytes() const noexcept {
  std::size_t n = 0;
  for (std::size_t i = 1; i < queue_.size(); ++i) n += queue_[i]->out.size();
  return n;
}

bool Session::writable(const Exchange& ex) const noexcept {
  return !closed() && !queue_.empty() && queue_.front().get() == &ex && transport_->writable();
}

void Session::on_writable(bool now_writable) {
  const Call call(*this);
  // Only the way back matters: going unwritable is checked where it counts
  // (before each new request, in Responder::writable), and the transport
  // reports it from inside send(), where the session must not act.
  if (!now_writable || closed()) return;
  maybe_resume_reading();
  sync_deadlines();
  notify_writable();
}

void Session::notify_writable() {
  if (queue_.empty() || in_flush_ > 0) return;
  std::shared_ptr<Exchange> head = queue_.front();  // the callback may finish it
  if (!head->on_writable || !writable(*head)) return;
  auto callback = std::move(head->on_writable);
  head->on_writable = nullptr;
  callback();
}

}  // namespace heartwheel::http
