// See heartwheel/net/detail/ip_limiter.h. Each shard: a map from address to an
// entry index, entries in a vector with a free list, so a handle (shard,
// index) stays valid until its count drops to zero.
#include <heartwheel/net/detail/ip_limiter.h>
#include <netinet/in.h>

#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace heartwheel::net::detail {

namespace {

// 4 or 16 address bytes; IPv4-mapped IPv6 folded to IPv4.
struct Key {
  std::array<unsigned char, 16> bytes{};
  std::uint8_t length = 0;
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  std::size_t operator()(const Key& k) const noexcept {
    return std::hash<std::string_view>()(
        std::string_view(reinterpret_cast<const char*>(k.bytes.data()), k.length));
  }
};

// False for families that are not counted.
bool key_of(const sockaddr& address, Key& key) {
  if (address.sa_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(address);
    std::memcpy(key.bytes.data(), &a.sin_addr, 4);
    key.length = 4;
    return true;
  }
  if (address.sa_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(address);
    if (IN6_IS_ADDR_V4MAPPED(&a.sin6_addr)) {
      std::memcpy(key.bytes.data(), a.sin6_addr.s6_addr + 12, 4);
      key.length = 4;
    } else {
      std::memcpy(key.bytes.data(), a.sin6_addr.s6_addr, 16);
      key.length = 16;
    }
    return true;
  }
  return false;
}

// handle = index * kShards + shard + 1 (0 means "nothing").
constexpr std::uint32_t kShardCount = IpLimiter::kShards;

}  // namespace

struct IpLimiter::Shard {
  struct Entry {
    Key key;
    std::uint32_t count = 0;
    std::uint32_t next_free = 0;
  };
  mutable std::mutex mu;
  std::unordered_map<Key, std::uint32_t, KeyHash> index;
  std::vector<Entry> entries;
  std::uint32_t free_head = UINT32_MAX;
};

IpLimiter::IpLimiter(std::size_t max_per_address) : max_(max_per_address) {
  if (max_ == 0) throw std::invalid_argument("ip limiter: max_per_address must be at least 1");
  for (auto& s : shards_) s = std::make_unique<Shard>();
}

IpLimiter::~IpLimiter() = default;

IpLimiter::Admission IpLimiter::acquire(const sockaddr& address) {
  Key key;
  if (!key_of(address, key)) return {};
  const std::size_t h = KeyHash()(key);
  const auto shard_no = static_cast<std::uint32_t>(h % kShardCount);
  Shard& s = *shards_[shard_no];
  std::lock_guard lock(s.mu);
  auto [it, inserted] = s.index.try_emplace(key, 0);
  if (inserted) {
    std::uint32_t i;
    if (s.free_head != UINT32_MAX) {
      i = s.free_head;
      s.free_head = s.entries[i].next_free;
    } else {
      try {
        s.entries.emplace_back();
      } catch (...) {
        s.index.erase(it);
        throw;
      }
      i = static_cast<std::uint32_t>(s.entries.size() - 1);
    }
    s.entries[i] = Shard::Entry{key, 0, 0};
    it->second = i;
  }
  Shard::Entry& e = s.entries[it->second];
  if (e.count >= max_) return {false, 0};
  ++e.count;
  return {true, it->second * kShardCount + shard_no + 1};
}

void IpLimiter::release(std::uint32_t handle) noexcept {
  if (handle == 0) return;
  const std::uint32_t shard_no = (handle - 1) % kShardCount;
  const std::uint32_t i = (handle - 1) / kShardCount;
  Shard& s = *shards_[shard_no];
  std::lock_guard lock(s.mu);
  Shard::Entry& e = s.entries[i];
  if (e.count == 0) return;  // a double release would be a bug; never underflow
  if (--e.count > 0) return;
  s.index.erase(e.key);
  e.next_free = s.free_head;
  s.free_head = i;
}

std::size_t IpLimiter::count(const sockaddr& address) const {
  Key key;
  if (!key_of(address, key)) return 0;
  const Shard& s = *shards_[KeyHash()(key) % kShardCount];
  std::lock_guard lock(s.mu);
  const auto it = s.index.find(key);
  return it == s.index.end() ? 0 : s.entries[it->second].count;
}

std::size_t IpLimiter::addresses() const {
  std::size_t n = 0;
  for (const auto& s : shards_) {
    std::lock_guard lock(s->mu);
    n += s->index.size();
  }
  return n;
}

}  // namespace heartwheel::net::detail
