// See heartwheel/rpc/call_table.h.
#include <heartwheel/rpc/call_table.h>

#include <limits>

#include <heartwheel/common/error.h>

namespace heartwheel::rpc {

const char* to_string(CallStatus status) noexcept {
  switch (status) {
    case CallStatus::ok: return "ok";
    case CallStatus::error: return "error";
    case CallStatus::timed_out: return "timed_out";
    case CallStatus::failed: return "failed";
  }
  return "unknown";
}

namespace detail {

enum class CallState : std::uint8_t { pending, answered, timed_out, failed };

// One record of the pool. While pending it is on the pending list (prev/next),
// in its group's list if it has one, and its entry may be armed; while free it
// is on the free queue (next only) and keeps the outcome of its last call in
// `state`.
struct CallRecord final : TimerEntry {
  CallRecord() noexcept : TimerEntry(&CallTable::on_deadline) {}
  CallTable* table = nullptr;
  CallRecord* prev = nullptr;
  CallRecord* next = nullptr;
  CallGroup* group = nullptr;
  CallRecord* group_prev = nullptr;
  CallRecord* group_next = nullptr;
  void* context = nullptr;
  TimePoint started_at{};
  std::uint32_t slot = 0;
  std::uint32_t generation = 0;  // 0: never used
  CallState state = CallState::failed;

  std::uint64_t id() const noexcept { return (std::uint64_t{generation} << 32) | slot; }
};

}  // namespace detail

namespace {
constexpr std::uint64_t kMaxSlots = std::uint64_t{1} << 32;
}

CallTable::CallTable(TimerService& timers, CallListener& listener, CallTableOptions options)
    : timers_(timers), listener_(listener), options_(options) {}

CallTable::~CallTable() {
  for (Call* c = pending_head_; c; c = c->next) timers_.cancel(*c);
}

TimePoint CallTable::now() const noexcept { return options_.clock ? options_.clock() : timers_.now(); }

CallTable::Call* CallTable::record(std::uint32_t slot) const noexcept {
  const std::size_t chunk = slot / kChunk;
  if (chunk >= chunks_.size()) return nullptr;
  return &chunks_[chunk][slot % kChunk];
}

CallTable::Call* CallTable::find(std::uint64_t id) const noexcept {
  return record(static_cast<std::uint32_t>(id & 0xffffffffu));
}

void CallTable::grow() {
  const std::size_t base = chunks_.size() * kChunk;
  if (base + kChunk > kMaxSlots) return;
  auto chunk = std::make_unique<Call[]>(kChunk);
  for (std::size_t i = 0; i < kChunk; ++i) {
    Call& c = chunk[i];
    c.table = this;
    c.slot = static_cast<std::uint32_t>(base + i);
    c.next = nullptr;
    if (free_tail_) {
      free_tail_->next = &c;
    } else {
      free_head_ = &c;
    }
    free_tail_ = &c;
  }
  chunks_.push_back(std::move(chunk));
}

CallTable::Call* CallTable::acquire() noexcept {
  if (!free_head_) {
    try {
      grow();
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
    if (!free_head_) return nullptr;
  }
  Call* c = free_head_;
  free_head_ = c->next;
  if (!free_head_) free_tail_ = nullptr;
  return c;
}

std::uint64_t CallTable::start(Duration timeout, void* context, std::error_code& error,
                               CallGroup* group) {
  error.clear();
  if (options_.max_in_flight != 0 && in_flight_ >= options_.max_in_flight) {
    ++stats_.refused;
    error = errc::limit_reached;
    return 0;
  }
  Call* c = acquire();
  if (!c) {
    ++stats_.refused;
    error = errc::limit_reached;
    return 0;
  }
  if (++c->generation == 0) c->generation = 1;  // id 0 stays "no call"
  c->state = State::pending;
  c->context = context;
  c->started_at = now();
  c->prev = nullptr;
  c->next = pending_head_;
  if (pending_head_) pending_head_->prev = c;
  pending_head_ = c;
  c->group = group;
  c->group_prev = nullptr;
  c->group_next = nullptr;
  if (group) {
    c->group_next = group->head_;
    if (group->head_) group->head_->group_prev = c;
    group->head_ = c;
    ++group->size_;
  }
  ++in_flight_;
  ++stats_.started;
  if (in_flight_ > stats_.peak_in_flight) stats_.peak_in_flight = in_flight_;
  if (timeout.count() > 0) timers_.schedule(*c, timeout);
  return c->id();
}

void CallTable::finish(Call& c, State state, CallStatus status, std::string_view payload,
                       std::error_code reason) {
  timers_.cancel(c);
  // Off the pending list...
  if (c.prev) {
    c.prev->next = c.next;
  } else {
    pending_head_ = c.next;
  }
  if (c.next) c.next->prev = c.prev;
  CallGroup* const group = c.group;  // ...and out of its group
  if (group) {
    if (c.group_prev) {
      c.group_prev->group_next = c.group_next;
    } else {
      group->head_ = c.group_next;
    }
    if (c.group_next) c.group_next->group_prev = c.group_prev;
    --group->size_;
    c.group = nullptr;
  }
  --in_flight_;
  // ...onto the tail of the free queue, keeping the outcome for late replies.
  c.state = state;
  c.prev = nullptr;
  c.next = nullptr;
  if (free_tail_) {
    free_tail_->next = &c;
  } else {
    free_head_ = &c;
  }
  free_tail_ = &c;
  // Copy out before the listener runs: it may start a call that reuses `c`.
  const CallCompletion done{c.id(), status, payload, c.context, now() - c.started_at,
                            reason, group};
  switch (status) {
    case CallStatus::ok: ++stats_.ok; break;
    case CallStatus::error: ++stats_.errors; break;
    case CallStatus::timed_out: ++stats_.timed_out; break;
    case CallStatus::failed: ++stats_.failed; break;
  }
  listener_.on_call_done(done);
}

void CallTable::on_deadline(TimerEntry& entry) {
  auto& c = static_cast<Call&>(entry);
  c.table->finish(c, State::timed_out, CallStatus::timed_out, {}, make_error_code(errc::timed_out));
}

bool CallTable::pending(std::uint64_t id) const noexcept {
  const Call* c = find(id);
  return c && c->id() == id && c->state == State::pending;
}

ReplyDisposition CallTable::complete(std::uint64_t id, std::string_view payload, bool is_error,
                                     const CallGroup* arrived_on) {
  Call* c = find(id);
  const auto generation = static_cast<std::uint32_t>(id >> 32);
  if (!c || generation == 0 || generation > c->generation) {
    ++stats_.unknown_replies;
    return ReplyDisposition::unknown;
  }
  if (generation < c->generation) {  // an earlier use of this record: long gone
    ++stats_.late_replies;
    return ReplyDisposition::late;
  }
  switch (c->state) {
    case State::pending:
      if (arrived_on && c->group != arrived_on) break;  // another connection's call
      finish(*c, State::answered, is_error ? CallStatus::error : CallStatus::ok, payload, {});
      return ReplyDisposition::delivered;
    case State::answered:
      ++stats_.duplicate_replies;
      return ReplyDisposition::duplicate;
    case State::timed_out:
    case State::failed:
      ++stats_.late_replies;
      return ReplyDisposition::late;
  }
  ++stats_.unknown_replies;
  return ReplyDisposition::unknown;
}

bool CallTable::fail(std::uint64_t id, std::error_code reason) {
  Call* c = find(id);
  if (!c || c->id() != id || c->state != State::pending) return false;
  finish(*c, State::failed, CallStatus::failed, {}, reason);
  return true;
}

std::size_t CallTable::fail_each(const std::vector<std::uint64_t>& ids, std::error_code reason) {
  // By id, from a list taken first: calls the listener starts meanwhile are
  // not in it, and listed ones it completes are skipped by fail().
  std::size_t n = 0;
  for (auto id : ids) n += fail(id, reason) ? 1 : 0;
  return n;
}

std::size_t CallTable::fail_all(std::error_code reason) {
  std::vector<std::uint64_t> ids;
  ids.reserve(in_flight_);
  for (Call* c = pending_head_; c; c = c->next) ids.push_back(c->id());
  return fail_each(ids, reason);
}

std::size_t CallTable::fail_group(CallGroup& group, std::error_code reason) {
  std::vector<std::uint64_t> ids;
  ids.reserve(group.size_);
  for (Call* c = group.head_; c; c = c->group_next) ids.push_back(c->id());
  return fail_each(ids, reason);
}

}  // namespace heartwheel::rpc
