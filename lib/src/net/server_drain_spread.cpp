// Server::drain with a spread (heartwheel/net/server.h): the handlers are
// told in equal parts over the window instead of at once.
//
// Why: a restart hands the listeners to a successor and closes the old
// process's connections; told all at once, 100,000 clients reconnect in the
// same second (a storm on the successor, on the TLS handshakes, on Redis for
// their recovery). Spread over --drain-timeout, the successor sees a steady
// stream it can take.
#include <heartwheel/common/time.h>
#include <heartwheel/net/server.h>

#include <algorithm>
#include <unordered_set>
#include <vector>

namespace heartwheel::net {

namespace {
constexpr std::uint64_t kStepMs = 10;  // fine enough for any window of seconds
}

struct Server::DrainSpread {
  uv_timer_t timer{};
  std::vector<Connection*> order;  // the list when the drain began
  // Those of `order` not told yet and still open: a connection that closed
  // meanwhile leaves it (forget_spread), so `order` is never dereferenced
  // for a connection that is gone.
  std::unordered_set<Connection*> pending;
  std::size_t next = 0;
  std::uint64_t start_ms = 0;
  std::uint64_t span_ms = 1;
};

void Server::start_spread(Duration spread) {
  auto* d = new DrainSpread{};
  for (Connection* c = list_.front(); c; c = list_.next(*c)) d->order.push_back(c);
  d->pending.insert(d->order.begin(), d->order.end());
  d->start_ms = uv_now(loop());
  d->span_ms = std::max<std::uint64_t>(1, to_uv_millis_ceil(spread));
  if (uv_timer_init(loop(), &d->timer) < 0) {
    // No timer: everyone now, as a drain without a spread.
    delete d;
    std::vector<Connection*> all;
    for (Connection* c = list_.front(); c; c = list_.next(*c)) all.push_back(c);
    for (Connection* c : all) drain_connection(*c);
    return;
  }
  d->timer.data = this;
  spread_ = d;
  uv_timer_start(&d->timer, &on_spread_timer, 0, kStepMs);
}

void Server::on_spread_timer(uv_timer_t* timer) {
  static_cast<Server*>(timer->data)->spread_step();
}

void Server::spread_step() noexcept {
  DrainSpread* d = spread_;
  if (!d) return;
  const std::uint64_t elapsed = uv_now(loop()) - d->start_ms;
  const std::size_t total = d->order.size();
  const std::size_t due = elapsed >= d->span_ms
                              ? total
                              : static_cast<std::size_t>(
                                    (std::uint64_t{total} * elapsed + d->span_ms - 1) / d->span_ms);
  while (d->next < due && spread_ == d) {
    Connection* c = d->order[d->next++];
    // Taken out first: drain_connection may close it at once.
    if (d->pending.erase(c) != 0) drain_connection(*c);
  }
  if (spread_ == d && d->next >= total) end_spread();
}

void Server::forget_spread(Connection& conn) noexcept { spread_->pending.erase(&conn); }

void Server::end_spread() noexcept {
  DrainSpread* d = spread_;
  if (!d) return;
  spread_ = nullptr;
  uv_timer_stop(&d->timer);
  d->timer.data = d;
  uv_close(reinterpret_cast<uv_handle_t*>(&d->timer),
           [](uv_handle_t* h) { delete static_cast<DrainSpread*>(h->data); });
}

}  // namespace heartwheel::net
