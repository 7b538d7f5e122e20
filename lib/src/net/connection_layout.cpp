// See detail/connection_host.h, connection_layout(): where a Connection's
// bytes go, computed here so that docs/memory.md and the budget test
// (tests/unit/memory_budget_test.cpp) cannot drift from the code.
#include <heartwheel/net/detail/connection_host.h>

#include <cstddef>

#include "connection_extras.h"
#include "write_queue.h"

namespace heartwheel::net::detail {

// offsetof on Connection (not standard-layout: it has a vtable) is
// conditionally supported; GCC and Clang give the real offsets.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
std::vector<ConnectionHost::LayoutRow> ConnectionHost::connection_layout() {
  using C = Connection;
  constexpr std::size_t timer_end = offsetof(C, host_activity_gen);
  constexpr std::size_t host_end = offsetof(C, tcp_);
  constexpr std::size_t tcp_end = offsetof(C, tcp_) + sizeof(uv_tcp_t);
  constexpr std::size_t links_end = offsetof(C, wq_);
  constexpr std::size_t pointers_end = offsetof(C, bytes_read_lo_);
  constexpr std::size_t counters_end = offsetof(C, id_) + sizeof(C::id_);
  return {
      // DeadlineTimer: vtable pointer, wheel entry, DeadlineSet (the
      // timer's two flags in its flag byte; its tail padding holds the
      // host's two small fields).
      {"DeadlineTimer base (vptr, TimerEntry, detail::DeadlineSet in 32-bit ticks)", 0, timer_end,
       false},
      {"host fields in its tail padding (activity stamp, detail::IpLimiter slot)", timer_end,
       host_end - timer_end, false},
      {"uv_tcp_t (its data pointer holds user_data)", host_end, tcp_end - host_end, false},
      {"host, handler, the host's list links", tcp_end, links_end - tcp_end, false},
      {"write queue and side block pointers", links_end, pointers_end - links_end, false},
      {"bytes read, bytes written (low 32 bits), id (32 bits)", pointers_end,
       counters_end - pointers_end, false},
      {"close reason (6 bits), error (13 bits), flags (13 bits)", counters_end,
       sizeof(C) - counters_end, false},
      {"WriteQueue (only while bytes are queued)", 0, sizeof(C::WriteQueue), true},
      {"Extras (overrides, PROXY info, transport stage, dropped bytes, counters' high halves: only "
       "when used)",
       0, sizeof(C::Extras), true},
      {"Overrides (a per-connection policy)", 0, sizeof(C::Overrides), true},
      {"ProxyHeaderParser (only while a PROXY header is awaited)", 0, sizeof(ProxyHeaderParser),
       true},
  };
}
#pragma GCC diagnostic pop

}  // namespace heartwheel::net::detail
