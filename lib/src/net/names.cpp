// The names of deadline kinds and close reasons: net's own, spelled here,
// and the layers' registered ones (heartwheel/net/names.h).
//
// The registry is two arrays of atomic pointers, constant-initialized (all
// null before any static initializer runs), so a layer's registrar may run
// in any order with any other; readers load one pointer, writers hold a
// mutex only to keep the duplicate-name check and the store together.
#include <heartwheel/common/log.h>
#include <heartwheel/net/names.h>

#include <array>
#include <atomic>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace heartwheel::net {

namespace {

constinit std::array<std::atomic<const CloseReasonName*>, kCloseReasonCapacity> g_reasons{};
constinit std::array<std::atomic<const DeadlineName*>, kDeadlineCapacity> g_kinds{};
constinit std::mutex g_register;

const char* own_name(CloseReason reason) noexcept {
  switch (reason) {
    case CloseReason::read_idle:
      return "read_idle";
    case CloseReason::write_idle:
      return "write_idle";
    case CloseReason::all_idle:
      return "all_idle";
    case CloseReason::request_timeout:
      return "request_timeout";
    case CloseReason::max_age:
      return "max_age";
    case CloseReason::write_stall:
      return "write_stall";
    case CloseReason::pong_timeout:
      return "pong_timeout";
    case CloseReason::peer_closed:
      return "peer_closed";
    case CloseReason::protocol_close:
      return "protocol_close";
    case CloseReason::protocol_error:
      return "protocol_error";
    case CloseReason::error:
      return "error";
    case CloseReason::slow_consumer:
      return "slow_consumer";
    case CloseReason::limit:
      return "limit";
    case CloseReason::ip_limit:
      return "ip_limit";
    case CloseReason::overload:
      return "overload";
    case CloseReason::proxy_header_timeout:
      return "proxy_header_timeout";
    case CloseReason::proxy_header_invalid:
      return "proxy_header_invalid";
    case CloseReason::drain:
      return "drain";
    case CloseReason::local:
      return "local";
    case CloseReason::proxy_untrusted:
      return "proxy_untrusted";
  }
  return nullptr;
}

// net's own kinds and what they close with; ping has no failure meaning.
CloseReason own_reason(Deadline kind) noexcept {
  switch (kind) {
    case Deadline::read_idle:
      return CloseReason::read_idle;
    case Deadline::write_idle:
      return CloseReason::write_idle;
    case Deadline::all_idle:
      return CloseReason::all_idle;
    case Deadline::request_timeout:
      return CloseReason::request_timeout;
    case Deadline::max_age:
      return CloseReason::max_age;
    case Deadline::write_stall:
      return CloseReason::write_stall;
    case Deadline::proxy_header_timeout:
      return CloseReason::proxy_header_timeout;
    case Deadline::ping:
      return CloseReason::local;
    case Deadline::pong_timeout:
      return CloseReason::pong_timeout;
  }
  return CloseReason::local;
}

bool own(CloseReason r) noexcept { return static_cast<std::size_t>(r) < kNetCloseReasons; }
bool own(Deadline k) noexcept { return static_cast<std::size_t>(k) < kNetDeadlines; }

const CloseReasonName* layer_name(CloseReason r) noexcept {
  const auto i = static_cast<std::size_t>(r);
  return i < kCloseReasonCapacity ? g_reasons[i].load(std::memory_order_acquire) : nullptr;
}
const DeadlineName* layer_name(Deadline k) noexcept {
  const auto i = static_cast<std::size_t>(k);
  return i < kDeadlineCapacity ? g_kinds[i].load(std::memory_order_acquire) : nullptr;
}

bool valid_name(const char* name) noexcept {
  if (name == nullptr || *name == '\0') return false;
  for (const char* p = name; *p != '\0'; ++p)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return false;
  return true;
}

bool same(const char* a, const char* b) noexcept { return std::strcmp(a, b) == 0; }

// The checks and the store shared by both sorts: `Number` is CloseReason or
// Deadline, `Entry` its registration. `equal` says whether a registration
// already there is this one; `name_of(i)` is number i's name (or null).
template <class Entry, std::size_t N, class Equal, class NameOf>
NameStatus add(std::array<std::atomic<const Entry*>, N>& table, std::size_t number,
               std::size_t first, const Entry& entry, const char* name, Equal equal,
               NameOf name_of) noexcept {
  if (number >= N) return NameStatus::out_of_range;
  if (number < first) return NameStatus::reserved;
  if (!valid_name(name)) return NameStatus::bad_name;
  const std::lock_guard lock(g_register);
  if (const Entry* there = table[number].load(std::memory_order_relaxed))
    return equal(*there) ? NameStatus::already : NameStatus::number_taken;
  for (std::size_t i = 0; i < N; ++i) {
    const char* other = name_of(i);
    if (i != number && other != nullptr && same(other, name)) return NameStatus::name_taken;
  }
  table[number].store(&entry, std::memory_order_release);
  return NameStatus::added;
}

}  // namespace

const char* to_string(CloseReason reason) noexcept {
  if (own(reason)) return own_name(reason);
  const CloseReasonName* n = layer_name(reason);
  return n != nullptr ? n->name : "unknown";
}

bool is_named(CloseReason reason) noexcept { return own(reason) || layer_name(reason) != nullptr; }

CloseReason close_reason_for(Deadline kind) noexcept {
  if (own(kind)) return own_reason(kind);
  const DeadlineName* n = layer_name(kind);
  return n != nullptr ? n->reason : CloseReason::local;
}

const char* to_string(Deadline kind) noexcept {
  if (kind == Deadline::ping) return "ping";
  if (own(kind)) return own_name(own_reason(kind));  // every other own kind: its reason's name
  const DeadlineName* n = layer_name(kind);
  return n != nullptr ? n->name : "unknown";
}

bool is_named(Deadline kind) noexcept { return own(kind) || layer_name(kind) != nullptr; }

NameStatus register_name(const CloseReasonName& n) noexcept {
  return add(
      g_reasons, static_cast<std::size_t>(n.reason), kLayerCloseReasonFirst, n, n.name,
      [&](const CloseReasonName& there) { return same(there.name, n.name); },
      [](std::size_t i) -> const char* {
        const auto r = static_cast<CloseReason>(i);
        return is_named(r) ? to_string(r) : nullptr;
      });
}

NameStatus register_name(const DeadlineName& n) noexcept {
  if (!is_named(n.reason)) return NameStatus::reason_unnamed;
  return add(
      g_kinds, static_cast<std::size_t>(n.kind), kLayerDeadlineFirst, n, n.name,
      [&](const DeadlineName& there) {
        return same(there.name, n.name) && there.reason == n.reason;
      },
      [](std::size_t i) -> const char* {
        const auto k = static_cast<Deadline>(i);
        return is_named(k) ? to_string(k) : nullptr;
      });
}

const char* to_string(NameStatus status) noexcept {
  switch (status) {
    case NameStatus::added:
      return "added";
    case NameStatus::already:
      return "already";
    case NameStatus::reserved:
      return "reserved";
    case NameStatus::out_of_range:
      return "out_of_range";
    case NameStatus::number_taken:
      return "number_taken";
    case NameStatus::name_taken:
      return "name_taken";
    case NameStatus::bad_name:
      return "bad_name";
    case NameStatus::reason_unnamed:
      return "reason_unnamed";
  }
  return "unknown";
}

namespace {
[[noreturn]] void refuse(const char* sort, unsigned number, const char* name, NameStatus status,
                         const char* holder) noexcept {
  char line[512];
  std::snprintf(line, sizeof line,
                "heartwheel: cannot register %s %u \"%s\": %s%s%s%s (heartwheel/net/names.h)", sort,
                number, name ? name : "(null)", to_string(status), holder ? " (it is \"" : "",
                holder ? holder : "", holder ? "\")" : "");
  log::error(line);
  std::abort();
}
}  // namespace

NameRegistrar::NameRegistrar(std::span<const CloseReasonName> reasons,
                             std::span<const DeadlineName> kinds) noexcept {
  for (const CloseReasonName& n : reasons) {
    const NameStatus s = register_name(n);
    if (s != NameStatus::added && s != NameStatus::already)
      refuse("close reason", static_cast<unsigned>(n.reason), n.name, s,
             s == NameStatus::number_taken ? to_string(n.reason) : nullptr);
  }
  for (const DeadlineName& n : kinds) {
    const NameStatus s = register_name(n);
    if (s != NameStatus::added && s != NameStatus::already)
      refuse("deadline kind", static_cast<unsigned>(n.kind), n.name, s,
             s == NameStatus::number_taken ? to_string(n.kind) : nullptr);
  }
}

}  // namespace heartwheel::net
