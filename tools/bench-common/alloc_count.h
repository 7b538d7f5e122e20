// alloc_count.h - counts the program's calls to operator new, for benchmarks
// that report allocations per operation.
//
// alloc_count.cpp replaces the global operator new/delete (plain and array)
// with malloc/free and a relaxed atomic count. It is not in the
// heartwheel_bench_common archive (a static archive's operator new would be
// pulled into every benchmark): a program that counts lists alloc_count.cpp
// among its own sources (as tools/pubsub-bench and tools/auth-bench do).
// Threads: any; the count is shared by all threads.
#pragma once

#include <cstdint>

namespace heartwheel::bench {

// Calls to operator new (and new[]) since the program started.
std::uint64_t new_calls() noexcept;

}  // namespace heartwheel::bench
