// Heap libuv handles for the net layer's own timers (the server's drain,
// accept-resume and memory-sampling timers) and its end-of-turn check: libuv
// needs a handle until its close callback, which may come after the owner is
// gone.
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

// A heap uv_check_t or uv_idle_t with `data` set, unreferenced (it never
// keeps the loop running by itself), or nullptr when libuv refuses it.
template <class Handle, int (*Init)(uv_loop_t*, Handle*)>
Handle* new_unref_handle(uv_loop_t* loop, void* data) {
  auto* h = new Handle;
  if (Init(loop, h) < 0) {
    delete h;
    return nullptr;
  }
  h->data = data;
  uv_unref(reinterpret_cast<uv_handle_t*>(h));
  return h;
}
inline uv_check_t* new_check(uv_loop_t* loop, void* data) {
  return new_unref_handle<uv_check_t, &uv_check_init>(loop, data);
}
inline uv_idle_t* new_idle(uv_loop_t* loop, void* data) {
  return new_unref_handle<uv_idle_t, &uv_idle_init>(loop, data);
}

// Closes and frees `handle` (a heap uv_timer_t, uv_check_t or uv_idle_t, if any) and
// clears the pointer.
template <class Handle>
void close_handle(Handle*& handle) {
  if (!handle) return;
  uv_close(reinterpret_cast<uv_handle_t*>(handle),
           [](uv_handle_t* h) { delete reinterpret_cast<Handle*>(h); });
  handle = nullptr;
}

inline void close_timer(uv_timer_t*& timer) { close_handle(timer); }

}  // namespace heartwheel::net::detail
