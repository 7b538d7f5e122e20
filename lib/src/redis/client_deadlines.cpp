// The deadlines of the commands in flight, on the connection's
// request_timeout slot (heartwheel/redis/client.h, "Deadlines").
//
// Replies come in the order commands were sent, so the commands leave
// in_flight_ from the front and join at the back: a sliding window. marks_
// keeps the window's suffix minima (each mark's deadline is earlier than
// every later command's), so its front is the earliest deadline in flight.
// Push: drop the marks at the back that are not earlier than the new
// deadline, append it. Pop: drop the front mark if it is the reply's
// command. Both O(1) amortized. With one timeout for every command the
// deadlines come in increasing order, nothing is dropped on push, and the
// front mark is simply the oldest command's deadline.
#include <heartwheel/common/error.h>
#include <heartwheel/net/connection.h>

#include <algorithm>

#include "client_core.h"

namespace heartwheel::redis::detail {

void ClientCore::push_in_flight(Pending&& p) {
  p.seq = next_seq_++;
  if (p.deadline != kNever) {
    while (!marks_.empty() && marks_.back().deadline >= p.deadline) marks_.pop_back();
    marks_.push_back({p.seq, p.deadline});
  }
  in_flight_.push_back(std::move(p));
}

Pending ClientCore::pop_in_flight() {
  Pending p = std::move(in_flight_.front());
  in_flight_.pop_front();
  if (!marks_.empty() && marks_.front().seq == p.seq) marks_.pop_front();
  return p;
}

// The slot holds the earliest deadline in flight; in flight without one
// (PINGs, commands without a timeout) is still a request in flight.
void ClientCore::update_request_slot() {
  net::Connection* conn = connection();
  if (!conn) return;
  if (in_flight_.empty()) {
    if (conn->in_request()) conn->end_request();
    return;
  }
  if (marks_.empty()) {
    conn->begin_request(Duration{0});
    return;
  }
  // begin_request takes a timeout from now; a deadline already passed
  // becomes the smallest one, due at the wheel's next expiry.
  const Duration left = marks_.front().deadline - conn->timers().now();
  conn->begin_request(std::max(left, Duration{1}));
}

net::DeadlineAction ClientCore::link_deadline(net::Connection& conn, net::DeadlineEvent event) {
  if (event.kind != net::Deadline::request_timeout) return net::DeadlineAction::close;
  expire_in_flight(conn.timers().now());
  return net::DeadlineAction::keep;  // the connection stays: late replies are discarded
}

// Every command due fails with timed_out and stays in flight, expired, until
// its reply comes. O(n) over the commands in flight, only when one is due.
void ClientCore::expire_in_flight(TimePoint now) {
  std::vector<Outcome> outcomes;
  for (Pending& p : in_flight_) {
    if (p.ping || p.expired || p.deadline > now) continue;
    p.expired = true;
    p.keep.reset();
    if (p.wait) {
      // The durable writes it covers fail with it (they ran; unconfirmed).
      const auto before = outcomes.size();
      settle(p.seq, heartwheel::errc::timed_out, outcomes);
      stats_.timed_out += outcomes.size() - before;
      continue;
    }
    ++stats_.timed_out;
    outcomes.push_back({std::move(p.done), heartwheel::errc::timed_out, Reply()});
  }
  rebuild_marks();
  update_request_slot();
  run(outcomes);
}

void ClientCore::rebuild_marks() {
  marks_.clear();
  for (const Pending& p : in_flight_) {
    if (p.expired || p.deadline == kNever) continue;
    while (!marks_.empty() && marks_.back().deadline >= p.deadline) marks_.pop_back();
    marks_.push_back({p.seq, p.deadline});
  }
}

}  // namespace heartwheel::redis::detail
