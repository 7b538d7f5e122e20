// Hub: the inbox and its libuv plumbing. Producers (any thread) push onto the
// MPSC queue and wake the loop with uv_async_send only when no wake-up is
// pending, so a burst of publications costs one wake-up (one batch). The
// handles live in a block of their own that outlives the hub until libuv has
// closed them.
#include <heartwheel/common/error.h>
#include <heartwheel/pubsub/hub.h>

namespace heartwheel::pubsub {

struct Hub::LoopHandles {
  uv_async_t async;
  uv_timer_t sweep;
  Hub* hub = nullptr;  // null once the hub is gone; the handles are closing
  int open = 0;

  static void on_async(uv_async_t* a) {
    auto* self = static_cast<LoopHandles*>(a->data);
    if (self->hub) self->hub->on_wakeup();
  }
  static void on_sweep(uv_timer_t* t) {
    auto* self = static_cast<LoopHandles*>(t->data);
    if (self->hub) self->hub->broker_.sweep();
  }
  static void on_closed(uv_handle_t* h) {
    auto* self = static_cast<LoopHandles*>(h->data);
    if (--self->open == 0) delete self;
  }
};

void Hub::open_loop() {
  if (options_.loop == nullptr) return;
  auto* h = new LoopHandles;
  h->hub = this;
  int rc = uv_async_init(options_.loop, &h->async, &LoopHandles::on_async);
  if (rc < 0) {
    delete h;
    check_uv(rc, "pubsub hub: uv_async_init");
  }
  h->async.data = h;
  h->open = 1;
  uv_unref(reinterpret_cast<uv_handle_t*>(&h->async));
  if ((rc = uv_timer_init(options_.loop, &h->sweep)) < 0) {
    h->hub = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(&h->async), &LoopHandles::on_closed);
    check_uv(rc, "pubsub hub: uv_timer_init");
  }
  h->sweep.data = h;
  ++h->open;
  const auto every = std::max<std::uint64_t>(1, to_uv_millis_ceil(broker_.sweep_interval()));
  uv_timer_start(&h->sweep, &LoopHandles::on_sweep, every, every);
  uv_unref(reinterpret_cast<uv_handle_t*>(&h->sweep));
  handles_ = h;
}

void Hub::close_loop() noexcept {
  if (handles_ == nullptr) return;
  handles_->hub = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(&handles_->async), &LoopHandles::on_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&handles_->sweep), &LoopHandles::on_closed);
  handles_ = nullptr;
}

void Hub::post(Envelope* envelope) noexcept {
  inbox_.push(*envelope);
  wake();
}

// Sequentially consistent on both sides (see mpsc_queue.h): a producer that
// finds a wake-up pending pushed before the consumer cleared the flag, so the
// consumer's drain, which starts after the clear, sees its envelope.
void Hub::wake() noexcept {
  if (handles_ != nullptr && !wake_pending_.exchange(true)) uv_async_send(&handles_->async);
}

void Hub::on_wakeup() noexcept {
  wake_pending_.store(false);
  drain(options_.max_events_per_wakeup);
  // Budget spent, or a producer caught between its two push steps: come back
  // on the next iteration rather than spin or sleep on a non-empty inbox.
  if (!inbox_.empty()) wake();
}

}  // namespace heartwheel::pubsub
