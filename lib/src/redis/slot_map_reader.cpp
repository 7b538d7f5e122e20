// Reading a Redis Cluster's slot map (slot_map_reader.h).
#include "slot_map_reader.h"

#include <heartwheel/net/address.h>

#include <algorithm>
#include <cctype>

namespace heartwheel::redis::detail {

LinkStats counters_only(LinkStats s) noexcept {
  for (const StatField<LinkStats>& f : LinkStats::fields())
    if (f.kind == StatKind::gauge) s.*f.member = 0;
  // A link given up closes its connection on a later loop turn, once it is
  // buried and no longer read: that close is counted here, so that every
  // connection opened is closed once in the figures.
  if (s.disconnects < s.connects) s.disconnects = s.connects;
  return s;
}

SlotMapReader::SlotMapReader(LoopWheel& wheel, const LinkOptions& base,
                             std::function<void(SlotMap&&)> on_map)
    : wheel_(wheel),
      on_map_(std::move(on_map)),
      candidates_(base.cluster.seeds),
      graveyard_(wheel),
      timer_(wheel, [this] { read(); }),
      past_(counters_only(LinkStats{})) {
  static_cast<LinkOptions&>(options_) = base;
  options_.cluster.seeds.clear();  // the link itself talks to one node
  options_.command_timeout = base.cluster.refresh_timeout;
  options_.max_buffered = 4;  // a read waits for the connection, up to its deadline
  options_.on_disconnect = [this, user = base.on_disconnect](net::CloseReason r, std::error_code e) {
    lost_ = true;
    if (user) user(r, e);
  };
}

SlotMapReader::~SlotMapReader() = default;

void SlotMapReader::start() {
  if (started_) return;
  started_ = true;
  if (link_) link_->start();
  wanted_ = true;
  read();
}

void SlotMapReader::stop() {
  started_ = false;
  timer_.cancel();
  ++generation_;
  in_flight_ = false;
  if (link_) link_->stop();
}

void SlotMapReader::request() {
  wanted_ = true;
  schedule();
}

void SlotMapReader::keep_reading(bool on) {
  keep_ = on;
  schedule();
}

void SlotMapReader::learn(const std::vector<std::string>& nodes) {
  // The map's nodes (masters first), then whatever else was known (the
  // seeds); the current node keeps its place as the one in use.
  const std::string current = candidates_.empty() ? std::string() : candidates_[next_];
  std::vector<std::string> all;
  for (const auto& n : nodes)
    if (std::find(all.begin(), all.end(), n) == all.end()) all.push_back(n);
  for (const auto& c : candidates_)
    if (std::find(all.begin(), all.end(), c) == all.end()) all.push_back(c);
  candidates_ = std::move(all);
  const auto at = std::find(candidates_.begin(), candidates_.end(), current);
  next_ = at == candidates_.end() ? 0 : static_cast<std::size_t>(at - candidates_.begin());
}

void SlotMapReader::schedule() {
  if (!started_ || in_flight_ || !(wanted_ || keep_)) return;
  timer_.no_later_than(last_read_ + options_.cluster.refresh_interval);
}

void SlotMapReader::read() {
  timer_.cancel();
  if (!started_ || in_flight_ || candidates_.empty()) return;
  if (lost_) next_node();
  if (!link_) {
    ClientOptions o = options_;
    try {
      aim_at(o, candidates_[next_]);
      link_ = std::make_unique<ClientCore>(wheel_, std::move(o));
    } catch (const std::invalid_argument&) {  // an address the connector cannot take
      ++errors_;
      next_node();
      wanted_ = true;
      return schedule();
    }
    link_->start();
  }
  wanted_ = false;
  in_flight_ = true;
  last_read_ = wheel_.now();
  const std::uint64_t generation = generation_;
  const std::error_code refused = link_->command(
      use_slots_ ? Command{"CLUSTER", "SLOTS"} : Command{"CLUSTER", "SHARDS"},
      [this, generation](std::error_code ec, Reply reply) {
        on_reply(generation, ec, std::move(reply));
      },
      {});
  if (refused) {
    in_flight_ = false;
    failed();
  }
}

void SlotMapReader::on_reply(std::uint64_t generation, std::error_code ec, Reply reply) {
  if (generation != generation_) return;  // from a link given up
  in_flight_ = false;
  if (ec == errc::server_error && !use_slots_) {
    // Before Redis 7.0: "ERR unknown subcommand 'SHARDS'..." - CLUSTER SLOTS
    // at once. Any other error (the node is not in cluster mode, loading...)
    // is a failed read.
    std::string text(reply.str());
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) {
      return static_cast<char>(std::tolower(c));
    });
    if (text.find("unknown subcommand") != std::string::npos) {
      use_slots_ = true;
      return read();
    }
  }
  if (!ec) {
    auto map = use_slots_ ? parse_cluster_slots(reply) : parse_cluster_shards(reply);
    if (map && !map->shards.empty()) {  // empty: the cluster is not made yet
      ++refreshes_;
      on_map_(std::move(*map));
      return schedule();
    }
  }
  failed();
}

void SlotMapReader::failed() {
  ++errors_;
  next_node();
  wanted_ = true;
  schedule();
}

// Gives the current link up (it may be the one whose callback is running:
// the graveyard destroys it later) and moves to the next candidate.
void SlotMapReader::next_node() {
  lost_ = false;
  ++generation_;
  if (link_) {
    link_->stop();
    past_.merge(counters_only(link_->stats()));
    graveyard_.bury(std::move(link_));
  }
  if (!candidates_.empty()) next_ = (next_ + 1) % candidates_.size();
}

LinkStats SlotMapReader::stats() const noexcept {
  LinkStats all = past_;
  if (link_) all.merge(link_->stats());
  LinkStats s = counters_only(LinkStats{});
  for (const auto field :
       {&LinkStats::connected, &LinkStats::connects, &LinkStats::reconnects,
        &LinkStats::disconnects, &LinkStats::connect_failures, &LinkStats::pings_sent,
        &LinkStats::pong_timeouts, &LinkStats::protocol_errors, &LinkStats::setup_errors,
        &LinkStats::auth_failures, &LinkStats::writes, &LinkStats::callback_exceptions})
    s.*field = all.*field;
  s.slot_map_refreshes = refreshes_;
  s.slot_map_errors = errors_;
  return s;
}

}  // namespace heartwheel::redis::detail
