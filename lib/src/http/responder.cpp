// The handler's side of an exchange. Every call checks that the exchange still
// belongs to a live session and is in the right state, so a late answer (after
// a timeout or close) is a harmless false, never a write to a dead connection.
#include <heartwheel/http/responder.h>

#include <heartwheel/http/session.h>

#include "exchange.h"
#include "serialize.h"

namespace heartwheel::http {

namespace {
// Marks a streamed response complete (with the last chunk when it has a body).
void end_stream(detail::Exchange& ex) {
  if (ex.chunked && !ex.head_only && detail::status_has_body(ex.status))
    ex.out += detail::kLastChunk;
  ex.finished = true;
}
}  // namespace

Responder::Responder(std::shared_ptr<detail::Exchange> exchange) noexcept
    : exchange_(std::move(exchange)) {}

Responder& Responder::operator=(Responder&& other) noexcept {
  if (this != &other) {
    release();
    exchange_ = std::move(other.exchange_);
  }
  return *this;
}

Responder::~Responder() { release(); }

void Responder::release() noexcept {
  if (!exchange_) return;
  std::shared_ptr<detail::Exchange> ex = std::move(exchange_);
  Session* s = ex->session;
  if (s == nullptr || (ex->answered && ex->finished)) return;
  // Dropped without a complete answer: finish it so the pipeline moves on.
  ++s->stats_->handler_errors;
  try {
    if (!ex->answered) {
      s->answer(*ex, Response::text(500, "Internal Server Error\n"), false);
    } else {
      // A stream left open cannot get a new status: end it, then close.
      end_stream(*ex);
      ex->close_after = true;
    }
    s->flush();
  } catch (...) {
    // Out of memory while building the answer: nothing better to do here.
  }
}

bool Responder::active() const noexcept {
  return exchange_ && exchange_->session != nullptr &&
         !(exchange_->answered && exchange_->finished);
}

TimePoint Responder::deadline() const noexcept {
  return exchange_ ? exchange_->request.deadline : TimePoint::max();
}

void Responder::on_abandon(std::function<void()> callback) {
  if (active()) exchange_->on_abandon = std::move(callback);
}

TimerService* Responder::timers() const noexcept {
  return active() ? exchange_->session->timers_ : nullptr;
}

bool Responder::respond(Response response) {
  if (!active() || exchange_->answered) return false;
  exchange_->answered_by_handler = true;
  Session& s = *exchange_->session;
  s.answer(*exchange_, std::move(response), false);
  s.flush();
  return true;
}

bool Responder::begin(int status, Headers headers) {
  if (!active() || exchange_->answered) return false;
  detail::Exchange& ex = *exchange_;
  ex.answered = true;
  ex.answered_by_handler = true;
  ex.streaming = true;
  const Request& req = ex.request;
  // HTTP/1.0 has no chunked coding: the body ends when the connection does.
  ex.chunked = req.version_major > 1 || (req.version_major == 1 && req.version_minor >= 1);
  ex.status = status;
  ex.headers = std::move(headers);
  ex.session->flush();
  return true;
}

bool Responder::write(std::string_view piece) {
  if (!active() || !exchange_->streaming) return false;
  detail::Exchange& ex = *exchange_;
  if (ex.head_only || !detail::status_has_body(ex.status)) return true;
  if (ex.chunked) detail::append_chunk(ex.out, piece);
  else ex.out.append(piece);
  ex.session->flush();
  return true;
}

bool Responder::end() {
  if (!active() || !exchange_->streaming) return false;
  end_stream(*exchange_);
  exchange_->session->flush();
  return true;
}

}  // namespace heartwheel::http
