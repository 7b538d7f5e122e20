// redis::Client: accepting commands, matching replies, the connection's
// life (client.h). Deadlines: client_deadlines.cpp; the buffer used while
// disconnected: client_buffer.cpp.
#include <heartwheel/common/error.h>
#include <heartwheel/net/connection.h>

#include <chrono>
#include <string>

#include "client_core.h"

namespace heartwheel::redis {

// ---- Client: the public face -------------------------------------------------

Client::Client(LoopWheel& wheel, ClientOptions options)
    : core_(detail::make_client(wheel, std::move(options))) {}
Client::~Client() = default;
void Client::start() { core_->start(); }
void Client::stop() { core_->stop(); }
bool Client::started() const noexcept { return core_->started(); }
std::error_code Client::command(Command command, Callback done, CommandOptions options) {
  return core_->command(std::move(command), std::move(done), options);
}
bool Client::connected() const noexcept { return core_->connected(); }
std::size_t Client::in_flight() const noexcept { return core_->in_flight(); }
std::size_t Client::buffered() const noexcept { return core_->buffered(); }
void Client::flush() { core_->flush(); }
LinkStats Client::stats() const noexcept { return core_->stats(); }
std::vector<MasterStats> Client::masters() const { return core_->masters(); }
const ClientOptions& Client::options() const noexcept { return core_->options(); }

namespace detail {

namespace {
constexpr std::string_view kPing = "*1\r\n$4\r\nPING\r\n";

const ClientOptions& validated(const ClientOptions& o) {
  o.validate();
  return o;
}

Command make_wait_command(const ClientOptions& o) {
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(o.wait_timeout).count();
  return Command{"WAIT", std::to_string(o.wait_replicas), std::to_string(ms)};
}
}  // namespace

std::unique_ptr<ClientImpl> make_client(LoopWheel& wheel, ClientOptions options) {
  if (options.cluster.enabled()) return make_cluster_client(wheel, std::move(options));
  return std::make_unique<ClientCore>(wheel, std::move(options));
}

ClientCore::ClientCore(LoopWheel& wheel, ClientOptions options)
    : Link(wheel, validated(options)),
      options_(std::move(options)),
      wait_command_(make_wait_command(options_)) {
  buffer_timer_.owner = this;
}

ClientCore::~ClientCore() {
  // Pending callbacks are dropped without running (client.h, "Lifetime").
  wheel().cancel(buffer_timer_);
}

void ClientCore::start() {
  if (started_) return;
  started_ = true;
  start_link();
}

void ClientCore::stop() {
  started_ = false;
  std::vector<Outcome> outcomes;
  auto fail = [&](Pending& p) {
    if (internal(p) || p.expired) return;
    ++stats_.failed_stopped;
    outcomes.push_back({std::move(p.done), errc::stopped, Reply()});
  };
  for (Pending& p : in_flight_) fail(p);
  for (Pending& p : buffer_) fail(p);
  stats_.failed_stopped += held_.size();
  fail_held(errc::stopped, outcomes);
  forget_connection();
  buffer_.clear();
  buffer_bytes_ = 0;
  wheel().cancel(buffer_timer_);
  buffer_due_ = kNever;
  if (net::Connection* conn = connection()) conn->end_request();
  stop_link();
  run(outcomes);
}

std::error_code ClientCore::command(Command command, Callback done, CommandOptions o) {
  if (!started_) return errc::stopped;
  if (command.breaks_reply_order()) return errc::not_allowed;
  const Duration timeout = o.timeout.count() < 0 ? options_.command_timeout : o.timeout;
  Pending p;
  p.done = std::move(done);
  p.deadline = deadline_after(wheel().now(), timeout);
  p.retry = o.retry;
  p.durable = o.durable && options_.wait_replicas > 0;
  if (net::Connection* conn = connection()) {
    const std::size_t cap = conn->write_policy().max_queued_bytes;
    if (cap > 0 && unsent_bytes() + command.size() > cap) {
      ++stats_.refused_queue_full;
      return heartwheel::errc::limit_reached;
    }
    ++stats_.commands;
    transmit(std::move(p), std::move(command));
    update_request_slot();
    return {};
  }
  if (options_.max_buffered == 0) {
    ++stats_.refused_not_connected;
    return errc::not_connected;
  }
  if (buffer_.size() >= options_.max_buffered ||
      buffer_bytes_ + command.size() > options_.max_buffered_bytes) {
    ++stats_.refused_buffer_full;
    return errc::buffer_full;
  }
  ++stats_.commands;
  ++stats_.buffered_total;
  p.keep.emplace(std::move(command));
  push_buffer(std::move(p));
  return {};
}

// What belongs to one connection: what is in flight on it, its WAIT
// bookkeeping and the scripts loaded on it (a new connection may be to a
// server without them). After its pending commands were answered or moved.
void ClientCore::forget_connection() noexcept {
  wait_in_flight_ = false;
  last_durable_ = last_wait_ = 0;
  uncovered_due_ = kNever;
  in_flight_.clear();
  marks_.clear();
  scripts_loaded_.clear();
}

// Puts `command` in the batch and `p` in flight. Precondition: connected.
void ClientCore::transmit(Pending&& p, Command&& command) {
  if (const auto& source = command.script_source()) load_script(source);
  send(command.bytes());
  if (p.wait)
    ++stats_.waits;
  else
    ++stats_.sent;
  if (p.retry || command.script_source()) {
    p.keep.emplace(std::move(command));
  } else {
    p.keep.reset();
  }
  const bool durable = p.durable;
  push_in_flight(std::move(p));
  if (durable) sent_durable(in_flight_.back());
}

// A script's first call on a connection goes behind a SCRIPT LOAD of it:
// Redis runs a connection's commands in order, so the EVALSHA finds the
// script cached. Without it every call sent before the first NOSCRIPT
// answer would fall back to EVAL one by one, and a call made meanwhile
// could run before an earlier one's fallback: a node's writes out of the
// order it made them (deliver() keeps the fallback for a cache lost while
// connected: SCRIPT FLUSH).
void ClientCore::load_script(const std::shared_ptr<const std::string>& source) {
  for (const auto& loaded : scripts_loaded_)
    if (loaded == source) return;
  scripts_loaded_.push_back(source);
  Pending p;
  p.script_load = true;
  send(Command{"SCRIPT", "LOAD", *source}.bytes());
  push_in_flight(std::move(p));
}

void ClientCore::send_ping(net::Connection&) {
  Pending p;
  p.ping = true;
  send(kPing);
  push_in_flight(std::move(p));
}

void ClientCore::link_opened(net::Connection&) {
  send_buffer();
  update_request_slot();
}

void ClientCore::link_reply(net::Connection& conn, Reply&& reply) {
  if (in_flight_.empty()) {
    ++stats_.protocol_errors;
    report_error(heartwheel::errc::protocol_error, "a reply to no command");
    conn.close(net::CloseReason::protocol_error, heartwheel::errc::protocol_error);
    return;
  }
  deliver(pop_in_flight(), std::move(reply));
  if (connection() == &conn) update_request_slot();
}

void ClientCore::deliver(Pending&& p, Reply&& reply) {
  if (p.ping) return;  // any byte was life already (note_read)
  if (p.script_load) return;  // an error shows in the call behind it (NOSCRIPT, then EVAL's)
  if (p.wait) return deliver_wait(std::move(p), std::move(reply));
  if (p.expired) {
    ++stats_.late_replies;
    return;
  }
  if (reply.is_error() && p.keep && p.keep->script_source() &&
      reply.str().substr(0, 8) == "NOSCRIPT" && connection()) {
    // Redis lost its script cache (restart, failover, SCRIPT FLUSH): the
    // same call once more as EVAL, which caches it again. Same callback and
    // deadline; it goes behind what was sent since (a durable one is
    // covered by a later WAIT).
    ++stats_.script_fallbacks;
    Command eval = p.keep->as_eval();
    transmit(std::move(p), std::move(eval));
    return;
  }
  if (!reply.is_error() && p.durable) return hold(std::move(p), std::move(reply));
  std::error_code ec;
  if (reply.is_error()) {
    ++stats_.replies_error;
    ec = errc::server_error;
  } else {
    ++stats_.replies_ok;
  }
  if (p.done) guard([&] { p.done(ec, std::move(reply)); });
}

void ClientCore::link_closed(net::CloseReason, std::error_code) {
  // Commands in flight may or may not have run: they fail, or go back to the
  // front of the buffer (retry), ahead of anything buffered since. A durable
  // write's WAIT goes back with it; a WAIT whose write already answered
  // fails (WAIT on another connection would prove nothing about it).
  std::vector<Outcome> outcomes;
  std::deque<Pending> again;
  for (Pending& p : in_flight_) {
    if (internal(p) || p.expired) continue;
    if (p.retry && p.keep) {
      ++stats_.retried;
      again.push_back(std::move(p));
    } else {
      ++stats_.failed_disconnected;
      outcomes.push_back({std::move(p.done), errc::disconnected, Reply()});
    }
  }
  // Durable writes that ran but whose WAIT is lost: not known to be
  // replicated. They are not sent again (they ran).
  stats_.failed_disconnected += held_.size();
  fail_held(errc::disconnected, outcomes);
  forget_connection();
  for (auto it = again.rbegin(); it != again.rend(); ++it) push_buffer(std::move(*it), true);
  run(outcomes);
}

void ClientCore::run(std::vector<Outcome>& outcomes) noexcept {
  for (Outcome& o : outcomes)
    if (o.done) guard([&] { o.done(o.error, std::move(o.reply)); });
}

LinkStats ClientCore::stats() const noexcept {
  LinkStats s = link_stats();
  s.in_flight = in_flight_.size() + held_.size();
  s.buffered = buffer_.size();
  s.buffered_bytes = buffer_bytes_;
  return s;
}

}  // namespace detail
}  // namespace heartwheel::redis
