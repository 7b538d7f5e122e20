// What an idle established TLS session holds, counted in OpenSSL's own
// allocations: its own test binary, because CRYPTO_set_mem_functions must
// come before OpenSSL's first allocation. Run with -s to see the figures.
#include <heartwheel/tls/context.h>
#include <heartwheel/tls/session.h>
#include <malloc.h>
#include <openssl/crypto.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <vector>

#include "own_records.h"  // lib/src/tls (private)
#include "tls_support.h"

using namespace tls_test;

namespace {

std::atomic<long long> g_live_bytes{0};
std::atomic<long long> g_live_blocks{0};

void* counted_malloc(std::size_t n, const char*, int) {
  void* p = std::malloc(n);
  if (p) {
    g_live_bytes += static_cast<long long>(malloc_usable_size(p));
    ++g_live_blocks;
  }
  return p;
}

void* counted_realloc(void* old, std::size_t n, const char*, int) {
  const long long before = old ? static_cast<long long>(malloc_usable_size(old)) : 0;
  void* p = std::realloc(old, n);
  if (!p) return nullptr;  // the old block stays as it was (or n == 0 freed it: not used by OpenSSL)
  g_live_bytes += static_cast<long long>(malloc_usable_size(p)) - before;
  if (!old) ++g_live_blocks;
  return p;
}

void counted_free(void* p, const char*, int) {
  if (!p) return;
  g_live_bytes -= static_cast<long long>(malloc_usable_size(p));
  --g_live_blocks;
  std::free(p);
}

// Before main, hence before OpenSSL's first allocation.
const bool g_counting = CRYPTO_set_mem_functions(counted_malloc, counted_realloc, counted_free) == 1;

struct Held {
  double bytes;
  double blocks;
};

// Bytes and blocks OpenSSL frees when `sessions` (idle, established) are
// destroyed, per session.
Held released_per_session(std::vector<tls::Session>& sessions) {
  const long long bytes = g_live_bytes, blocks = g_live_blocks;
  const auto n = static_cast<double>(sessions.size());
  sessions.clear();
  return {static_cast<double>(bytes - g_live_bytes) / n,
          static_cast<double>(blocks - g_live_blocks) / n};
}

// `n` established pairs, each after one request and a 20,000-byte answer
// (both sides have read and written records), then idle.
void idle_pairs(const tls::Context& client, const tls::Context& server, int n,
                std::vector<tls::Session>& servers, std::vector<tls::Session>& clients) {
  for (int i = 0; i < n; ++i) {
    Pair p = connect(client, server);
    REQUIRE(p.server.session.established());
    REQUIRE_FALSE(p.client.session.write("GET / HTTP/1.1\r\n\r\n", p.client.out));
    pump(p.client, p.server);
    REQUIRE_FALSE(p.server.session.write(std::string(20000, 'x'), p.server.out));
    pump(p.client, p.server);
    REQUIRE(p.client.received.size() == 20000);
    servers.push_back(std::move(p.server.session));
    clients.push_back(std::move(p.client.session));
  }
}

}  // namespace

TEST_CASE("An idle established session holds no record buffers", "[tls][memory]") {
  REQUIRE(g_counting);
  // The SSL object kept (as under TLS 1.2): what OpenSSL itself holds.
  tls::ContextOptions so = server_options(certs().ec_one);
  so.free_ssl_after_handshake = false;
  tls::Context server(so);
  auto version = GENERATE(tls::Version::tls1_3, tls::Version::tls1_2);
  tls::ContextOptions co = client_options();
  co.max_version = version;
  tls::Context client(co);
  constexpr int kSessions = 200;
  std::vector<tls::Session> servers, clients;
  idle_pairs(client, server, kSessions, servers, clients);
  const Held server_held = released_per_session(servers);
  const Held client_held = released_per_session(clients);
  INFO((version == tls::Version::tls1_3 ? "TLS 1.3" : "TLS 1.2")
       << ", ECDSA P-256: an idle server session holds " << server_held.bytes << " bytes in "
       << server_held.blocks << " OpenSSL blocks; a client session " << client_held.bytes
       << " bytes in " << client_held.blocks << " blocks; sizeof(tls::Session) = "
       << sizeof(tls::Session));
  // OpenSSL's own floor is ~13 KiB (the SSL object alone is ~7.5 KiB, the
  // two AES-GCM contexts ~1 KiB each, the SSL_SESSION ~1 KiB). A record
  // buffer is over 16 KiB (read 16,712, write 16,584 bytes in OpenSSL
  // 3.0): an idle session that kept either would be above 29 KiB.
  CHECK(server_held.bytes < 20 * 1024);
  CHECK(sizeof(tls::Session) == 24);
}

TEST_CASE("A stalled handshake holds no record buffers, half a ClientHello no SSL object",
          "[tls][memory]") {
  REQUIRE(g_counting);
  tls::Context server(server_options(certs().ec_one));
  tls::Context client(client_options());
  constexpr int kSessions = 200;
  std::vector<End> clients;
  std::vector<std::string> hellos;
  for (int i = 0; i < kSessions; ++i) {
    clients.emplace_back(tls::Session::client(client, "localhost"));
    REQUIRE(clients.back().session.start(clients.back().out));
    hellos.push_back(std::exchange(clients.back().out, {}));
  }
  std::vector<tls::Session> half, waiting;
  const long long before = g_live_bytes;
  for (int i = 0; i < kSessions; ++i) {
    End s(tls::Session::server(server));
    deliver(s, std::string_view(hellos[i]).substr(0, hellos[i].size() / 2));
    REQUIRE(s.session.handshaking());
    half.push_back(std::move(s.session));
  }
  // Half a ClientHello each: OpenSSL has not allocated a byte for them.
  CHECK(g_live_bytes == before);
  for (int i = 0; i < kSessions; ++i) {
    End s(tls::Session::server(server));
    deliver(s, hellos[i]);  // the whole ClientHello: the server answers and waits
    REQUIRE(s.session.handshaking());
    REQUIRE_FALSE(s.out.empty());
    waiting.push_back(std::move(s.session));
  }
  const Held waiting_held = released_per_session(waiting);
  INFO("a server session waiting for the client's Finished holds " << waiting_held.bytes
       << " bytes in " << waiting_held.blocks << " OpenSSL blocks");
  // The handshake's own state (the SSL object, the handshake message
  // buffer, the buffering BIO OpenSSL pushes for the handshake: ~46 KiB),
  // but neither record buffer (~33 KiB more).
  CHECK(waiting_held.bytes < 56 * 1024);
}

TEST_CASE("An idle TLS 1.3 server session that freed its SSL object holds only its keys",
          "[tls][memory]") {
  REQUIRE(g_counting);
  const bool keep = GENERATE(false, true);
  tls::ContextOptions so = server_options(certs().ec_one);
  so.free_ssl_after_handshake = !keep;
  tls::Context server(so);
  tls::Context client(client_options());
  constexpr int kSessions = 200;
  std::vector<tls::Session> servers, clients;
  idle_pairs(client, server, kSessions, servers, clients);
  for (const tls::Session& s : servers) REQUIRE((s.native_handle() == nullptr) == !keep);
  // Everything the server sessions hold, OpenSSL's and ours: the heap's
  // bytes in use that their destruction gives back (glibc's count, chunk
  // headers and rounding included).
  const std::size_t heap_before = mallinfo2().uordblks;
  const long long openssl_before = g_live_bytes;
  servers.clear();
  const double heap = static_cast<double>(heap_before - mallinfo2().uordblks) / kSessions;
  const double openssl = static_cast<double>(openssl_before - g_live_bytes) / kSessions;
  INFO((keep ? "SSL object kept" : "SSL object freed")
       << ": an idle TLS 1.3 server session holds " << heap << " heap bytes, of them " << openssl
       << " in OpenSSL's blocks; sizeof(detail::OwnRecords) = " << sizeof(tls::detail::OwnRecords));
  if (keep) {
    CHECK(heap > 12 * 1024);
  } else {
    CHECK(openssl == 0);
    // One block of the record layer and what the handshake agreed on.
    CHECK(heap <= 320);
  }
}
