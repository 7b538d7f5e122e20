// A handler's own deadline on its answer (Responder::set_deadline): one slot
// of the connection's deadline set, like the session's own timeouts, so a
// long answer (an event stream) that must end at a given time (a token's
// expiry) needs no wheel entry of its own. The slot belongs to the exchange:
// set through the transport, cleared when the answer completes or the
// session switches protocols, found again by its kind when it passes.
#include <heartwheel/http/session.h>

#include "exchange.h"

namespace heartwheel::http {

using detail::Exchange;

bool Session::set_handler_deadline(Exchange& ex, net::Deadline slot, TimePoint when,
                                   std::function<net::DeadlineAction()> on_passed) {
  if (closed()) return false;
  // One kind per connection at a time: another answer's (pipelined) is
  // replaced, so a passing slot never finds two owners.
  for (const std::shared_ptr<Exchange>& other : queue_)
    if (other.get() != &ex && other->handler_deadline && other->handler_deadline->slot == slot)
      other->handler_deadline.reset();
  if (ex.handler_deadline && ex.handler_deadline->slot != slot)
    transport_->set_deadline(ex.handler_deadline->slot, kNever);
  if (when == kNever || !on_passed) {
    ex.handler_deadline.reset();
    transport_->set_deadline(slot, kNever);
    return true;
  }
  if (!ex.handler_deadline) ex.handler_deadline = std::make_unique<detail::HandlerDeadline>();
  ex.handler_deadline->slot = slot;
  ex.handler_deadline->on_passed = std::move(on_passed);
  transport_->set_deadline(slot, when);
  return true;
}

void Session::clear_handler_deadline(Exchange& ex) noexcept {
  if (!ex.handler_deadline) return;
  if (!closed()) transport_->set_deadline(ex.handler_deadline->slot, kNever);
  ex.handler_deadline.reset();
}

std::optional<net::DeadlineAction> Session::handler_deadline_passed(net::Deadline slot) {
  for (const std::shared_ptr<Exchange>& ex : queue_) {
    if (!ex->handler_deadline || ex->handler_deadline->slot != slot) continue;
    // The slot cleared itself as it passed (net/deadline.h): only ours to forget.
    const auto on_passed = std::move(ex->handler_deadline->on_passed);
    ex->handler_deadline.reset();
    if (ex->session == nullptr || (ex->answered && ex->finished)) return net::DeadlineAction::keep;
    const std::shared_ptr<Exchange> keep = ex;  // the callback may finish it
    // An answer that ends its connection anyway (HTTP/1.0's close-delimited
    // stream) and is ended inside the callback closes for the slot's reason,
    // not protocol_close; one the callback leaves open keeps its own.
    const net::CloseReason before = keep->close_reason;
    keep->close_reason = net::close_reason_for(slot);
    const net::DeadlineAction action = on_passed();
    if (action == net::DeadlineAction::keep) keep->close_reason = before;
    return action;
  }
  return std::nullopt;
}

}  // namespace heartwheel::http
