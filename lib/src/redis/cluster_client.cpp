// redis::Client in cluster mode: accepting commands, sending each to its
// slot's master, following what the cluster answers (MOVED, ASK,
// CLUSTERDOWN, TRYAGAIN, a lost connection), and the one outcome each
// command gets. Nodes, the slot map and the waiting room:
// cluster_routing.cpp. See cluster_core.h and lib/src/redis/README.md.
#include <heartwheel/common/error.h>

#include <algorithm>

#include "cluster_core.h"

namespace heartwheel::redis::detail {

namespace {
const ClientOptions& validated(const ClientOptions& o) {
  o.validate();
  return o;
}

// The fields that count what the application asked for, once per command
// whatever it took; the node links count each attempt, so these come from
// the cluster's own counts. The rest (connections, batches, pings) is the
// sum over the links.
constexpr std::uint64_t LinkStats::*kCommandFields[] = {
    &LinkStats::commands,
    &LinkStats::replies_ok,
    &LinkStats::replies_error,
    &LinkStats::timed_out,
    &LinkStats::failed_disconnected,
    &LinkStats::failed_stopped,
    &LinkStats::retried,
    &LinkStats::refused_not_connected,
    &LinkStats::refused_buffer_full,
    &LinkStats::refused_queue_full,
    &LinkStats::buffered_total,
    &LinkStats::not_replicated,
    &LinkStats::redirects_moved,
    &LinkStats::redirects_ask,
    &LinkStats::redirect_errors,
    &LinkStats::cluster_retries,
    &LinkStats::slots_moved,
    &LinkStats::failovers,
};
}  // namespace

std::unique_ptr<ClientImpl> make_cluster_client(LoopWheel& wheel, ClientOptions options) {
  return std::make_unique<ClusterCore>(wheel, std::move(options));
}

ClusterCore::ClusterCore(LoopWheel& wheel, ClientOptions options)
    : wheel_(wheel),
      options_(validated(options)),
      wake_(wheel, [this] { pump(); }),
      graveyard_(wheel),
      source_(std::make_shared<SlotMapSource>(wheel, options_)),
      member_(source_->join([this](const SlotMap& map) { apply(SlotMap(map)); })),
      counts_(counters_only(LinkStats{})) {}

// The source may outlive this client (a Subscriber follows it).
ClusterCore::~ClusterCore() { source_->leave(member_); }

void ClusterCore::start() {
  if (started_) return;
  started_ = true;
  for (auto& n : table_.nodes())
    if (n->link) n->link->start();
  source_->run(member_, true);
}

void ClusterCore::stop() {
  started_ = false;
  wake_.cancel();
  source_->run(member_, false);
  std::deque<RequestPtr> waiting;
  waiting.swap(waiting_);
  for (auto& r : waiting) unwait(*r);
  // In flight on the links: each fails with `stopped` through on_reply.
  for (auto& n : table_.nodes())
    if (n->link) n->link->stop();
  for (auto& r : waiting) finish(r, errc::stopped, Reply());
}

std::error_code ClusterCore::command(Command command, Callback done, CommandOptions o) {
  if (!started_) return errc::stopped;
  if (command.breaks_reply_order()) return errc::not_allowed;
  const Duration timeout = o.timeout.count() < 0 ? options_.command_timeout : o.timeout;
  auto r = std::make_shared<Request>(std::move(command));
  r->done = std::move(done);
  r->deadline = deadline_after(wheel_.now(), timeout);
  r->retry = o.retry;
  r->durable = o.durable;
  r->bytes = r->command.size();
  Node* n = target(*r);
  if (ready(n) && n->waiting == 0) {
    if (const std::error_code refused = send_to(*n, r)) {
      ++counts_.refused_queue_full;  // connected: only the write queue's cap refuses
      return refused;
    }
    ++counts_.commands;
    return {};
  }
  if (options_.max_buffered == 0) {
    ++counts_.refused_not_connected;
    return errc::not_connected;
  }
  if (waiting_.size() >= options_.max_buffered ||
      waiting_bytes_ + r->bytes > options_.max_buffered_bytes) {
    ++counts_.refused_buffer_full;
    return errc::buffer_full;
  }
  ++counts_.commands;
  ++counts_.buffered_total;
  wait(r);
  if (!table_.known()) source_->request();
  return {};
}

// Where `r` goes now: its ASK target, its slot's master, or (no key) a
// master with an open connection, else the first master; null when the map
// does not say yet.
ClusterCore::Node* ClusterCore::target(const Request& r) {
  if (!r.ask.empty()) return &table_.node(r.ask);
  if (!table_.known()) return nullptr;
  const int slot = r.command.slot();
  if (slot >= 0) return table_.owner(static_cast<std::uint16_t>(slot));
  Node* first = nullptr;
  for (auto& n : table_.nodes()) {
    if (!n->master || n->slots == 0) continue;
    if (ready(n.get())) return n.get();
    if (first == nullptr) first = n.get();
  }
  return first;
}

bool ClusterCore::ready(const Node* n) const noexcept {
  return n != nullptr && n->link && n->link->connected();
}

// Hands `r` to `n`'s link with what is left of its deadline (ASKING first
// after an ASK: the two are adjacent on the wire). Refused: nothing sent.
std::error_code ClusterCore::send_to(Node& n, const RequestPtr& r) {
  Duration timeout{0};
  if (r->deadline != kNever) timeout = std::max(r->deadline - wheel_.now(), Duration{1});
  if (!r->ask.empty())
    if (const std::error_code refused = n.link->command(Command{"ASKING"}, {}, {.timeout = timeout}))
      return refused;
  return n.link->command(
      Command(r->command),
      [this, r, node = &n](std::error_code ec, Reply reply) {
        on_reply(r, *node, ec, std::move(reply));
      },
      {.timeout = timeout, .durable = r->durable});
}

// Sends `r` again (a redirect): now if its node can take it in order, else
// through the waiting room (past its bounds: it was accepted).
void ClusterCore::forward(const RequestPtr& r) {
  Node* n = target(*r);
  if (ready(n) && n->waiting == 0 && !send_to(*n, r)) return;
  wait(r);
}

void ClusterCore::on_reply(const RequestPtr& r, Node& from, std::error_code ec, Reply reply) {
  r->ask.clear();  // an ASK holds for one attempt
  if (!from.master) retire_idle_links();
  if (ec == heartwheel::errc::timed_out)
    suspect(from, true);
  else if (ec != errc::disconnected && ec != errc::stopped)
    suspect(from, false);  // it answered
  if (ec == errc::server_error) {
    if (auto redirect = parse_redirect(reply.str())) {
      if (redirect->address.front() == ':') redirect->address = host_of(from.address) + redirect->address;
      if (redirect->ask) {
        ++counts_.redirects_ask;
      } else {
        // The slot has a new master: route it there from now on, and read
        // the whole map again (a migration or failover moves many slots).
        ++counts_.redirects_moved;
        table_.moved(redirect->slot, table_.node(redirect->address));
        source_->request();
      }
      if (++r->redirects > options_.cluster.max_redirects)
        return finish(r, errc::too_many_redirects, std::move(reply));
      if (redirect->ask) r->ask = redirect->address;
      return forward(r);
    }
    if (is_transient(reply.str())) {
      ++counts_.cluster_retries;
      source_->request();
      return retry_later(r, ec, std::move(reply));
    }
  } else if (ec == errc::disconnected) {
    source_->request();  // its master may be gone: a replica may take over
    if (r->retry) {
      ++counts_.retried;
      return retry_later(r, ec, std::move(reply));
    }
  }
  finish(r, ec, std::move(reply));
}

void ClusterCore::retry_later(const RequestPtr& r, std::error_code ec, Reply reply) {
  if (r->deadline == kNever && ++r->retries > options_.cluster.max_retries)
    return finish(r, ec, std::move(reply));
  r->not_before = wheel_.now() + options_.cluster.retry_delay;
  wait(r);
}

void ClusterCore::finish(const RequestPtr& r, std::error_code ec, Reply reply) {
  count(ec);
  if (!r->done) return;
  try {
    r->done(ec, std::move(reply));
  } catch (...) {
    ++counts_.callback_exceptions;
  }
}

void ClusterCore::count(std::error_code ec) noexcept {
  if (!ec)
    ++counts_.replies_ok;
  else if (ec == errc::not_replicated)
    ++counts_.not_replicated;
  else if (ec == heartwheel::errc::timed_out)
    ++counts_.timed_out;
  else if (ec == errc::disconnected)
    ++counts_.failed_disconnected;
  else if (ec == errc::stopped)
    ++counts_.failed_stopped;
  else if (ec == errc::too_many_redirects)
    ++counts_.redirect_errors;
  else
    ++counts_.replies_error;
}

bool ClusterCore::connected() const noexcept {
  if (!table_.known()) return false;
  for (const auto& n : table_.nodes())
    if (n->master && n->slots > 0 && n->link && !n->link->connected()) return false;
  return true;
}

std::size_t ClusterCore::in_flight() const noexcept {
  std::size_t total = 0;
  for (const auto& n : table_.nodes())
    if (n->link) total += n->link->in_flight();
  return total;
}

void ClusterCore::flush() {
  for (auto& n : table_.nodes())
    if (n->link) n->link->flush();
}

LinkStats ClusterCore::stats() const noexcept {
  LinkStats s = source_->stats();
  for (const auto& n : table_.nodes()) {
    s.merge(n->past);
    if (n->link) s.merge(n->link->stats());
  }
  for (const auto field : kCommandFields) s.*field = counts_.*field;
  s.callback_exceptions += counts_.callback_exceptions;
  s.links = 1;
  s.buffered = waiting_.size();
  s.buffered_bytes = waiting_bytes_;
  s.cluster_masters = table_.masters();
  return s;
}

std::vector<MasterStats> ClusterCore::masters() const {
  return master_stats(table_,
                      [](const Node& n) { return n.waiting + (n.link ? n.link->in_flight() : 0); });
}

}  // namespace heartwheel::redis::detail
