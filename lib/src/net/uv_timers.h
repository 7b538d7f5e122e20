// Heap uv_timer_t helpers for the net layer's own timers (the server's
// drain, accept-resume and memory-sampling timers): libuv needs a handle
// until its close callback, which may come after the owner is gone.
#pragma once

#include <uv.h>

namespace heartwheel::net::detail {

// A heap uv_timer_t with `data` set, or nullptr when libuv refuses it.
inline uv_timer_t* new_timer(uv_loop_t* loop, void* data) {
  auto* t = new uv_timer_t;
  if (uv_timer_init(loop, t) < 0) {
    delete t;
    return nullptr;
  }
  t->data = data;
  return t;
}

// Closes and frees `timer` (if any) and clears the pointer.
inline void close_timer(uv_timer_t*& timer) {
  if (!timer) return;
  uv_close(reinterpret_cast<uv_handle_t*>(timer),
           [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
  timer = nullptr;
}

}  // namespace heartwheel::net::detail
