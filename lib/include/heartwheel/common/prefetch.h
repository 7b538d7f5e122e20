// heartwheel/common/prefetch.h - start loading an object into the cache.
//
// For code about to touch many objects in turn (a fan-out writing to
// thousands of connections): a hint issued one object ahead lets the loads
// overlap the current object's work (a system call) instead of missing the
// cache one by one. No access, no effect on the program's meaning; an
// instruction per cache line.
#pragma once

#include <cstddef>

namespace heartwheel {

template <class T>
inline void prefetch_object(const T& object) noexcept {
  constexpr std::size_t kLine = 64;
  const char* p = reinterpret_cast<const char*>(&object);
  for (std::size_t at = 0; at < sizeof(T); at += kLine) __builtin_prefetch(p + at);
}

}  // namespace heartwheel
