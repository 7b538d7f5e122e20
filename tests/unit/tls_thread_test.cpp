// One server Context shared by worker threads that shake hands while another
// thread reloads it (run under TSan too: label threads).
#include <heartwheel/tls/context.h>
#include <heartwheel/tls/session.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "tls_support.h"

using namespace tls_test;

TEST_CASE("Worker threads shake hands on one Context while another thread reloads it",
          "[tls][context][threads]") {
  const Certs& c = certs();
  const tls::CertificateFiles live = live_copy("threads", c.ec_one);
  tls::Context server(server_options(live));
  tls::Context client(client_options());

  constexpr int kWorkers = 2, kHandshakes = 40, kReloads = 20;
  std::atomic<int> established{0}, bad_names{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&] {
      // No Catch2 macros on these threads (Catch2 v2 is not thread-safe).
      for (int i = 0; i < kHandshakes; ++i) {
        Pair p = try_connect(client, server);
        if (p.client.session.established()) ++established;
        const std::string cn = peer_common_name(p.client.session);
        if (cn != "ec-one" && cn != "ec-two") ++bad_names;
      }
    });
  }
  int reloads_done = 0;
  for (int r = 0; r < kReloads; ++r) {
    const tls::CertificateFiles& next = r % 2 ? c.ec_one : c.ec_two;
    copy_file(next.certificate, live.certificate);
    copy_file(next.key, live.key);
    reloads_done += !server.reload().has_value();
    std::this_thread::yield();
  }
  for (std::thread& t : workers) t.join();
  CHECK(established == kWorkers * kHandshakes);
  CHECK(bad_names == 0);
  CHECK(reloads_done == kReloads);
  CHECK(server.generation() == 1 + kReloads);
}
