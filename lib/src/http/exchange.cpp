// The per-thread pool of exchanges (see exchange.h). Every keep-alive request
// used to pay a make_shared for its exchange plus a vector for its headers;
// a finished exchange that nobody else holds now goes back to its thread's
// pool with those buffers and serves the next request.
#include "exchange.h"

#include <vector>

namespace heartwheel::http::detail {

namespace {

// Enough for every request in flight on a busy loop between two reads
// (the pool only refills from finished exchanges); beyond it, freed.
constexpr std::size_t kPoolSize = 64;
// A request body or target grown past this is not kept for the next request.
constexpr std::size_t kMaxKeptBuffer = 4 * 1024;
// More header slots than a typical request needs are not kept either.
constexpr std::size_t kMaxKeptHeaders = 32;

using Pool = std::vector<std::shared_ptr<Exchange>>;

// The pool is reached through a plain pointer that its owner clears when the
// thread's destructors run: a Responder released after that (held by another
// thread-local or static) frees its exchange instead of touching a dead pool.
thread_local Pool* live_pool = nullptr;

struct PoolOwner {
  Pool items;
  PoolOwner() noexcept { live_pool = &items; }
  ~PoolOwner() { live_pool = nullptr; }
};

Pool* pool() {
  thread_local PoolOwner owner;  // constructed at the thread's first exchange
  return live_pool;
}

// Empties `s`, keeping its buffer unless it grew past kMaxKeptBuffer.
void clear_keeping(std::string& s) noexcept {
  if (s.capacity() > kMaxKeptBuffer)
    std::string().swap(s);
  else
    s.clear();
}
void clear_keeping(Headers& h) noexcept {
  if (h.capacity() > kMaxKeptHeaders)
    Headers().swap(h);
  else
    h.clear();
}

}  // namespace

// Field by field: assigning a fresh Exchange{} (a temporary built, every
// member moved over, the temporary destroyed) cost as much as the rest of a
// small keep-alive request's bookkeeping. A new field must be reset here too;
// the size check below is the reminder.
#if defined(__GLIBCXX__) && defined(__x86_64__)  // the size with libstdc++ on x86-64
static_assert(sizeof(Exchange) == 392,
              "Exchange changed: reset the new field in Exchange::reset, then update this size");
#endif
void Exchange::reset() noexcept {
  session = nullptr;
  seq = 0;
  clear_keeping(request.method);
  clear_keeping(request.target);
  request.version_major = 1;
  request.version_minor = 1;
  clear_keeping(request.headers);
  clear_keeping(request.body);
  request.keep_alive = true;
  request.started = {};
  request.deadline = kNever;
  received = false;
  expect_continue = false;
  header_bytes = 0;
  last_was_value = false;
  answered = false;
  answered_by_handler = false;
  streaming = false;
  chunked = false;
  finished = false;
  head_written = false;
  close_after = false;
  head_only = false;
  close_reason = net::CloseReason::protocol_close;
  status = 0;
  clear_keeping(headers);
  clear_keeping(out);
  shared_out.reset();
  content_length = 0;
  on_abandon = nullptr;
  on_writable = nullptr;
  clear_keeping(error);
  upgrade.reset();
  handler_deadline.reset();
}

std::shared_ptr<Exchange> new_exchange() {
  Pool* p = pool();
  if (p == nullptr || p->empty()) return std::make_shared<Exchange>();
  std::shared_ptr<Exchange> ex = std::move(p->back());
  p->pop_back();
  return ex;
}

void recycle(std::shared_ptr<Exchange>&& ex) noexcept {
  std::shared_ptr<Exchange> mine = std::move(ex);
  if (!mine || mine.use_count() != 1) return;
  Pool* p = live_pool;  // no pool yet (or any more) on this thread: freed
  if (p == nullptr || p->size() >= kPoolSize) return;
  // Reset here, not at reuse: the handler's callbacks (on_abandon, ...) and
  // the response's bytes go now, as they would with the exchange.
  mine->reset();
  try {
    if (p->capacity() == 0) p->reserve(kPoolSize);
    p->push_back(std::move(mine));
  } catch (...) {
    // No memory for the pool: the exchange is simply freed.
  }
}

}  // namespace heartwheel::http::detail
