// The handler's side of an exchange. Every call checks that the exchange still
// belongs to a live session and is in the right state, so a late answer (after
// a timeout or close) is a harmless false, never a write to a dead connection;
// the session does the rest (session_answer.cpp).
#include <heartwheel/http/deadlines.h>
#include <heartwheel/http/responder.h>
#include <heartwheel/http/session.h>

#include "exchange.h"

namespace heartwheel::http {

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
  if (s == nullptr || (ex->answered && ex->finished)) {
    detail::recycle(std::move(ex));  // the last holder of a finished exchange: reused
    return;
  }
  try {
    s->drop_responder(*ex);
  } catch (...) {
    // Out of memory while building the answer: nothing better to do here.
  }
}

bool Responder::active() const noexcept {
  return exchange_ && exchange_->session != nullptr &&
         !(exchange_->answered && exchange_->finished);
}

TimePoint Responder::deadline() const noexcept {
  return exchange_ ? exchange_->request.deadline : kNever;
}

void Responder::clear_deadline() noexcept {
  if (!active()) return;
  exchange_->request.deadline = kNever;
  Session& s = *exchange_->session;
  // The one request slot is set for the oldest exchange: if that is this one,
  // set it again without a deadline (a second begin_request replaces it).
  if (s.timed_seq_ == exchange_->seq) s.time_request(exchange_->seq, kNever);
}

bool Responder::set_deadline(net::Deadline slot, TimePoint when,
                             std::function<net::DeadlineAction()> on_passed) {
  if (!active() || static_cast<std::uint8_t>(slot) < net::kLayerDeadlineFirst ||
      slot == deadline::header_timeout || slot == deadline::body_timeout ||
      slot == deadline::keepalive_timeout)
    return false;
  return exchange_->session->set_handler_deadline(*exchange_, slot, when, std::move(on_passed));
}

const std::string& Responder::error() const noexcept {
  static const std::string none;
  return exchange_ ? exchange_->error : none;
}

void Responder::on_abandon(std::function<void()> callback) {
  if (active()) exchange_->on_abandon = std::move(callback);
}

TimerService* Responder::timers() const noexcept {
  return active() ? &exchange_->session->transport_->timers() : nullptr;
}

bool Responder::writable() const noexcept {
  return active() && exchange_->session->writable(*exchange_);
}

void Responder::on_writable(std::function<void()> callback) {
  if (!active()) return;
  if (writable()) {
    callback();
    return;
  }
  exchange_->on_writable = std::move(callback);
}

bool Responder::respond(Response response) {
  if (!active() || exchange_->answered) return false;
  return exchange_->session->respond(*exchange_, std::move(response));
}

bool Responder::upgrade(Headers headers, UpgradeHandler next) {
  if (!active() || exchange_->answered) return false;
  return exchange_->session->upgrade(*exchange_, std::move(headers), std::move(next));
}

bool Responder::begin(int status, Headers headers) {
  if (!active() || exchange_->answered) return false;
  return exchange_->session->begin_stream(*exchange_, status, std::move(headers));
}

bool Responder::write(std::string_view piece) {
  if (!active() || !exchange_->streaming) return false;
  return exchange_->session->write_stream(*exchange_, piece);
}

bool Responder::end() {
  if (!active() || !exchange_->streaming) return false;
  return exchange_->session->end_stream(*exchange_);
}

}  // namespace heartwheel::http
