// heartwheel/rpc/call_table.h - the client's outstanding calls and their
// deadlines, one timer entry per call in the loop's timing wheel.
//
// What it is
//   start() registers a call, arms its deadline on the TimerService and
//   returns the id to put in the REQUEST frame. Exactly one completion is then
//   reported to the CallListener for that call, whichever comes first:
//     ok / error  the RESPONSE / ERROR frame arrived (complete())
//     timed_out   the deadline passed (the wheel fired the call's entry)
//     failed      the caller gave up on it (fail(), fail_all(): connection lost)
//   A reply that arrives after its call timed out is NOT delivered: complete()
//   returns ReplyDisposition::late and counts it in stats().late_replies.
//   Calls whose deadlines fall on the same tick of the wheel report
//   timed_out in no particular order (not the order they were started: the
//   wheel runs one tick's entries way by way, timing_wheel.h,
//   SameTickOrder); replies are reported in the order they arrive.
//
// Groups (the calls of one connection)
//   A reply can only come on the connection its request went out on, so when
//   a connection closes its calls must fail, and only its calls. start() may
//   put a call in a CallGroup (one per connection, owned by the caller, e.g.
//   rpc::NetHandler's per-connection state); fail_group() then fails exactly
//   those, in O(calls in the group), complete() can insist that a reply
//   belongs to the group it arrived on, and a completion names its group.
//
// Why each call keeps its own wheel entry
//   The rule "protocols own no per-connection wheel entries" (net/deadline.h)
//   is about the connection's deadlines. A call's deadline belongs to the
//   call: a connection carries any number of calls at once, each with its own
//   timeout, and the connection's single request slot holds ONE deadline.
//   Multiplexing N call deadlines behind that slot would need an ordered
//   structure per connection (a heap: O(log n) per call; a FIFO is only right
//   while every call has the same timeout) that re-implements what the wheel
//   already does in O(1). The wheel is the loop's structure for many
//   independent deadlines, so each call keeps its intrusive entry
//   (tools/rpc-calls-bench compares it with a hash map and a uv_timer_t per
//   call, up to 1M calls in flight: docs/BENCHMARKS.md).
//
// Why ids carry the slot (instead of a hash map id -> call)
//   Call records live in a pool of fixed chunks (their TimerEntry must not
//   move). An id is (generation << 32 | slot): the reply's id indexes the pool
//   directly and the generation tells a live call from an earlier use of the
//   same record. Lookup is an array index and a compare, with no hashing and
//   no allocation per call; the pool only grows (by a chunk) when more calls
//   are in flight than ever before. Freed records are reused oldest-first, so
//   a record keeps the outcome of its last call as long as possible: a reply
//   to that call is then classified exactly (late after a timeout, duplicate
//   after an answer). A reply for an older generation is counted as late.
//
// Cost: start, complete, fail and the expiry of one call are O(1); fail_all is
//   O(calls in flight), fail_group O(calls in the group). Memory: about 120
//   bytes per record, records = the peak number of calls in flight (rounded
//   up to a chunk of 256).
// Threads: the TimerService's thread only.
// Re-entrancy: the listener may start, complete or fail any call, including
//   from inside fail_all / fail_group (calls started then are not failed by
//   it). The completion's payload is valid only during the callback.
#pragma once

#include <heartwheel/common/stat_fields.h>
#include <heartwheel/common/time.h>
#include <heartwheel/timer/timer_entry.h>
#include <heartwheel/timer/timer_service.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <system_error>
#include <vector>

namespace heartwheel::rpc {

enum class CallStatus : std::uint8_t { ok, error, timed_out, failed };
const char* to_string(CallStatus status) noexcept;

namespace detail {
struct CallRecord;                    // one pooled call (call_table.cpp)
enum class CallState : std::uint8_t;  // pending, answered, timed out, failed
}  // namespace detail

// The calls of one connection (see "Groups" above). Starts empty; must be
// empty (CallTable::fail_group) before it is destroyed while its table lives.
// Not copyable: the calls point at it.
class CallGroup {
 public:
  CallGroup() = default;
  CallGroup(const CallGroup&) = delete;
  CallGroup& operator=(const CallGroup&) = delete;
  std::size_t size() const noexcept { return size_; }

 private:
  friend class CallTable;
  detail::CallRecord* head_ = nullptr;
  std::size_t size_ = 0;
};

struct CallCompletion {
  std::uint64_t id;
  CallStatus status;
  std::string_view payload;    // ok / error: the reply; otherwise empty
  void* context;               // what start() was given
  Duration elapsed;            // start to completion, on the table's clock
  std::error_code reason;      // timed_out: errc::timed_out; failed: what fail() was given
  CallGroup* group = nullptr;  // the group start() put it in (it has left it by now)
};

class CallListener {
 public:
  // One call per started call, on the TimerService's thread.
  virtual void on_call_done(const CallCompletion& done) = 0;

 protected:
  ~CallListener() = default;
};

// What complete() did with a reply.
enum class ReplyDisposition : std::uint8_t {
  delivered,  // its call was in flight: completed ok / error
  late,       // its call had already timed out or failed (or the id is an older use of the record)
  duplicate,  // its call had already been answered
  unknown,    // no call ever had this id
};

struct CallTableStats {
  std::uint64_t started = 0;
  std::uint64_t ok = 0;
  std::uint64_t errors = 0;
  std::uint64_t timed_out = 0;
  std::uint64_t failed = 0;
  std::uint64_t refused = 0;  // start() over max_in_flight
  std::uint64_t late_replies = 0;
  std::uint64_t duplicate_replies = 0;
  std::uint64_t unknown_replies = 0;
  std::uint64_t peak_in_flight = 0;

  // The fields' table (heartwheel/common/stat_fields.h): JSON keys and kind
  // (no Prometheus family yet); lib/src/rpc/stats.cpp.
  static StatTable<CallTableStats> fields() noexcept;
};

struct CallTableOptions {
  // start() refuses calls beyond this many in flight; 0 = no limit but the
  // id space (2^32 records).
  std::size_t max_in_flight = 0;
  // Clock for CallCompletion::elapsed. Null = the TimerService's now(), which
  // under LoopWheel is the loop's cached millisecond time; pass a finer clock
  // (e.g. one reading uv_hrtime) to measure round trips in microseconds.
  // Deadlines always use the TimerService.
  TimePoint (*clock)() noexcept = nullptr;
};

class CallTable {
 public:
  CallTable(TimerService& timers, CallListener& listener, CallTableOptions options = {});
  // Disarms every pending deadline; no completion is reported for them.
  ~CallTable();

  CallTable(const CallTable&) = delete;
  CallTable& operator=(const CallTable&) = delete;

  // Registers a call whose deadline is `timeout` from now (zero or negative:
  // no deadline). `context` is handed back in its completion. Returns the
  // call's id (never 0), or 0 with `error` = errc::limit_reached when
  // max_in_flight calls are pending (nothing registered, counted as refused).
  // With a `group`, the call is in it until it completes.
  std::uint64_t start(Duration timeout, void* context, std::error_code& error,
                      CallGroup* group = nullptr);

  // A reply for `id` arrived (an ERROR frame if `is_error`). Completes the
  // call if it is in flight; otherwise counts and reports what it was. With
  // `arrived_on`, a pending call of another group is not completed: the
  // reply counts as unknown (a peer answering another connection's id).
  ReplyDisposition complete(std::uint64_t id, std::string_view payload, bool is_error = false,
                            const CallGroup* arrived_on = nullptr);

  // Gives up on one call: it completes as failed with `reason`. False if `id`
  // is not in flight.
  bool fail(std::uint64_t id, std::error_code reason);
  // Gives up on every call in flight (e.g. errc::closed when the connection
  // is lost). Returns how many completed.
  std::size_t fail_all(std::error_code reason);
  // Gives up on every call of `group` (its connection closed). Returns how
  // many completed; the group is empty afterwards unless the listener started
  // calls in it meanwhile.
  std::size_t fail_group(CallGroup& group, std::error_code reason);

  std::size_t in_flight() const noexcept { return in_flight_; }
  bool pending(std::uint64_t id) const noexcept;
  const CallTableStats& stats() const noexcept { return stats_; }
  // Records allocated so far (the pool's high-water mark).
  std::size_t capacity() const noexcept { return chunks_.size() * kChunk; }

 private:
  static constexpr std::size_t kChunk = 256;
  using Call = detail::CallRecord;
  using State = detail::CallState;
  friend struct detail::CallRecord;
  static void on_deadline(TimerEntry& entry);

  Call* record(std::uint32_t slot) const noexcept;
  Call* find(std::uint64_t id) const noexcept;
  Call* acquire() noexcept;
  void grow();
  // Unlinks `call` from the pending list, records `state`, frees the record
  // and reports the completion.
  void finish(Call& call, State state, CallStatus status, std::string_view payload,
              std::error_code reason);
  std::size_t fail_each(const std::vector<std::uint64_t>& ids, std::error_code reason);
  TimePoint now() const noexcept;

  TimerService& timers_;
  CallListener& listener_;
  CallTableOptions options_;
  std::vector<std::unique_ptr<Call[]>> chunks_;
  Call* pending_head_ = nullptr;  // doubly linked, for fail_all
  Call* free_head_ = nullptr;     // FIFO: freed at the tail, reused from the head
  Call* free_tail_ = nullptr;
  std::size_t in_flight_ = 0;
  CallTableStats stats_;
};

}  // namespace heartwheel::rpc
