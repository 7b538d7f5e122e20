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

}  // namespace

void Exchange::reset() noexcept {
  std::string target = std::move(request.target);
  Headers request_headers = std::move(request.headers);
  target.clear();
  request_headers.clear();
  if (target.capacity() > kMaxKeptBuffer) std::string().swap(target);
  if (request_headers.capacity() > kMaxKeptHeaders) Headers().swap(request_headers);
  *this = Exchange{};
  request.target = std::move(target);
  request.headers = std::move(request_headers);
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
