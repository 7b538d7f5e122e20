// heartwheel/net/detail/ip_limiter.h - open connections per client address, with a
// cap (nginx's `limit_conn $binary_remote_addr`).
//
// What it is
//   A counter per source address, shared by every Server that holds a
//   pointer to it (ServerOptions::ip_limiter). A Server asks acquire() once it
//   knows a connection's client address (at accept, or once its PROXY header
//   came: that address is the one counted) and release()s the handle when the
//   connection is gone. Over the cap, acquire() refuses and the Server closes
//   the connection at once (reset, CloseReason::ip_limit).
//
// Scope (why this shape)
//   - Worker threads: ONE count per process. runtime::Workers gives all its
//     servers one limiter, so a client cannot get N connections per worker
//     loop by landing on each of them (SO_REUSEPORT spreads a client's
//     connections over the loops). The table is split into kShards shards by
//     a hash of the address, each a hash map under its own mutex: one lock per
//     accept and per close, held for a hash lookup, and two threads contend
//     only when their clients hash to the same shard.
//   - Pre-forked processes (run_prefork, heartwheel-echo --processes): one
//     limiter PER PROCESS, not shared memory. The kernel spreads one client's
//     connections over the P processes by 4-tuple hash, so a client can hold
//     up to P x N connections in the worst case and about N on average per
//     process. A shared table would need a fixed-size map in shared memory
//     with cross-process locking (or a counting sketch that over-limits
//     innocent addresses on collisions); not done.
//   Addresses: IPv4 and IPv6; an IPv4-mapped IPv6 address counts as its IPv4
//   address. Other families (AF_UNIX from a PROXY header) are not counted.
//
// Cost: O(1) expected per call; memory ~100 bytes per address with open
//   connections (an entry is freed when its count drops to zero).
// Threads: any thread; every method is thread-safe.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace heartwheel::net::detail {

class IpLimiter {
 public:
  static constexpr std::size_t kShards = 32;

  // `max_per_address` >= 1 (throws std::invalid_argument otherwise).
  explicit IpLimiter(std::size_t max_per_address);
  ~IpLimiter();
  IpLimiter(const IpLimiter&) = delete;
  IpLimiter& operator=(const IpLimiter&) = delete;

  struct Admission {
    bool admitted = true;
    // Give back with release() when the connection is gone; 0 = nothing to
    // give back (refused, or an address family that is not counted).
    std::uint32_t handle = 0;
  };
  // Counts one more connection from `address` unless that address already
  // has max_per_address() (then admitted == false, nothing counted).
  // Throws std::bad_alloc only.
  Admission acquire(const sockaddr& address);
  // Counts one connection less. `handle` from acquire(); 0 is ignored.
  void release(std::uint32_t handle) noexcept;

  std::size_t max_per_address() const noexcept { return max_; }
  // Connections counted now for `address` (0 when not counted).
  std::size_t count(const sockaddr& address) const;
  // Addresses with at least one connection.
  std::size_t addresses() const;

 private:
  struct Shard;
  std::size_t max_;
  std::array<std::unique_ptr<Shard>, kShards> shards_;
};

}  // namespace heartwheel::net::detail
