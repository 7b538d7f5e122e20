// The counters of heartwheel-chat: each worker's, copied to the main thread.
// A worker keeps its counters on its loop thread and publishes a copy here
// every --stats-interval and when it ends; the main thread merges the copies
// for --stats-json.
// Threads: publish() from worker threads, total() from any thread.
// Prometheus: the limits as heartwheel_chat_limits_total (both programs'
// /metrics).
#pragma once

#include <heartwheel/common/stat_fields.h>
#include <heartwheel/metrics/text_writer.h>
#include <heartwheel/pubsub/stats.h>
#include <heartwheel/ws/stats.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace chat {

// What the chat protocol itself counts (one worker's, or merged).
struct ChatStats {
  std::uint64_t chat_connections = 0;  // /ws connections opened
  std::uint64_t echo_connections = 0;  // /echo connections opened
  std::uint64_t bad_json = 0;          // frames that were not JSON (answered, not closed)
  std::uint64_t binary_frames = 0;     // binary frames on /ws (closed with 1003)
  std::map<std::string, std::uint64_t> requests;  // by op (unknown ops as "unknown")
  std::map<std::string, std::uint64_t> errors;    // error replies by code
  std::uint64_t publications = 0;                 // publish requests that succeeded
  // Budgets applied, by kLimitNames (reply_limits.h, rate_limits.h).
  std::map<std::string, std::uint64_t> limits;

  // The counters' table (heartwheel/common/stat_fields.h: JSON keys, no
  // Prometheus families); the three maps are merged and written by hand.
  static heartwheel::StatTable<ChatStats> fields() noexcept;
  void merge(const ChatStats& o);
};

// heartwheel-chat's "chat" object of --stats-json: the counters by their
// table's keys, then requests, errors and limits as objects.
std::string to_json(const ChatStats& stats);

// Every key of ChatStats::limits: a request refused (requests_in_flight,
// rate_OP: over its --rate-limit), a reply cut to --max-reply-bytes
// (reply_truncated, recovery_cut), a reply that met the slow-consumer rule
// (reply_slow_consumer).
inline constexpr std::string_view kLimitNames[] = {
    "requests_in_flight", "rate_publish",    "rate_subscribe", "rate_history",
    "rate_presence",      "reply_truncated", "recovery_cut",   "reply_slow_consumer"};

// heartwheel_chat_limits_total{limit=NAME}, every kLimitNames entry (zeros
// included: the series exist from the first scrape).
void write_limits_metrics(heartwheel::metrics::TextWriter& out, const ChatStats& stats);

struct WorkerStats {
  bool has_hub = false;  // false until the worker's first connection
  heartwheel::ws::Stats ws;
  heartwheel::pubsub::HubStats hub;
  ChatStats chat;
};

class StatsBoard {
 public:
  explicit StatsBoard(unsigned workers) : slots_(workers) {}
  void publish(unsigned worker, const WorkerStats& stats) {
    std::lock_guard lock(mu_);
    slots_.at(worker) = stats;
  }
  // Every worker's copy merged.
  WorkerStats total() const;

 private:
  mutable std::mutex mu_;
  std::vector<WorkerStats> slots_;
};

}  // namespace chat
