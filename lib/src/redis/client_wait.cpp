// Durable writes (CommandOptions::durable with ClientOptions::wait_replicas
// > 0): group commit with WAIT. A durable write goes out at once like any
// command; WAIT numreplicas timeout, sent after it on the same connection,
// answers how many replicas have every write of this connection so far. So
// one WAIT covers every durable write sent before it, and there is at most
// one in flight: writes sent while one is out wait for the next, sent when
// it answers. Why not a WAIT after each write: WAIT blocks the connection
// until enough replicas acknowledge or its timeout passes, so with a
// replica down a WAIT per write would cost wait_timeout per write, and a
// steady stream of writes would back up without end; with one in flight,
// the cost is one wait_timeout per round, whatever the rate.
//
// A durable write's reply, when it comes, is held (held_) with its
// callback until the WAIT covering it answers: then it gets its reply, with
// errc::not_replicated if WAIT counted too few replicas. The WAIT's deadline
// is the earliest of the writes it covers; when it passes they fail with
// timed_out (writes sent after it wait for the next WAIT, at most one more
// round). A connection lost fails the held ones with disconnected.
#include <heartwheel/common/error.h>

#include <algorithm>

#include "client_core.h"

namespace heartwheel::redis::detail {

void ClientCore::sent_durable(const Pending& p) {
  last_durable_ = p.seq + 1;
  uncovered_due_ = std::min(uncovered_due_, p.deadline);
  if (!wait_in_flight_) send_wait();
}

void ClientCore::send_wait() {
  Pending w;
  w.wait = true;
  w.deadline = uncovered_due_;
  uncovered_due_ = kNever;
  wait_in_flight_ = true;
  transmit(std::move(w), Command(wait_command_));
  last_wait_ = in_flight_.back().seq;
}

void ClientCore::hold(Pending&& p, Reply&& reply) {
  held_.push_back(Held{p.seq, std::move(p.done), std::move(reply)});
}

void ClientCore::deliver_wait(Pending&& p, Reply&& reply) {
  wait_in_flight_ = false;
  std::vector<Outcome> outcomes;
  if (!p.expired) {
    // reply: the number of replicas that have every write before it.
    const bool enough = !reply.is_error() && reply.integer() >= options_.wait_replicas;
    const auto before = outcomes.size();
    settle(p.seq, enough ? std::error_code() : errc::not_replicated, outcomes);
    (enough ? stats_.replies_ok : stats_.not_replicated) += outcomes.size() - before;
  }
  // Durable writes sent after it: the next WAIT.
  if (last_durable_ > p.seq + 1 && connection()) {
    send_wait();
    update_request_slot();
  }
  run(outcomes);
}

void ClientCore::settle(std::uint64_t seq, std::error_code ec, std::vector<Outcome>& outcomes) {
  while (!held_.empty() && held_.front().seq < seq) {
    Held& h = held_.front();
    outcomes.push_back({std::move(h.done), ec, std::move(h.reply)});
    held_.pop_front();
  }
}

void ClientCore::fail_held(std::error_code ec, std::vector<Outcome>& outcomes) {
  for (Held& h : held_) outcomes.push_back({std::move(h.done), ec, Reply()});
  held_.clear();
}

}  // namespace heartwheel::redis::detail
