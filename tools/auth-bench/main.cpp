// heartwheel-auth-bench: what verifying a connection token costs, per
// algorithm, on one thread.
//
// A reconnect storm (100k clients coming back at once) is one token
// verification per connection, on the workers' loops, with no backend call:
// this measures that verification alone. Tokens are the ones PyJWT made for
// the tests (tests/unit/auth_vectors.json): a realistic connection token
// (sub, exp, iat, info, channels) per algorithm, and a minimal one ({"sub"})
// for HS256. One TokenVerifier and one reused ConnectionClaims per algorithm,
// as a worker keeps them. Also counted per verification, in the steady state:
// allocations through operator new (the claims and nlohmann-json's parser)
// and through OpenSSL's allocator (CRYPTO_set_mem_functions), and a channel
// permission check for comparison.
#include <heartwheel/auth/channel_policy.h>
#include <heartwheel/auth/token_verifier.h>

#include <openssl/crypto.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "alloc_count.h"
#include "bench_clock.h"
#include "cli_program.h"

namespace {

std::atomic<std::uint64_t> g_openssl_calls{0};

void* openssl_malloc(std::size_t n, const char*, int) {
  g_openssl_calls.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n);
}
void* openssl_realloc(void* p, std::size_t n, const char*, int) {
  if (n != 0) g_openssl_calls.fetch_add(1, std::memory_order_relaxed);
  return std::realloc(p, n);
}
void openssl_free(void* p, const char*, int) { std::free(p); }

using namespace heartwheel;
using heartwheel::bench::wall_ns;

std::uint64_t thread_cpu_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

struct Case {
  std::string name;    // "hs256", ...
  std::string vector;  // the vector's name in the file
};

struct Result {
  double per_second = 0;      // per second of this thread's CPU time
  double ns_each = 0;         // CPU time
  double wall_per_second = 0; // per wall-clock second (lower on a busy machine)
  double new_calls_each = 0;
  double openssl_calls_each = 0;
  std::size_t token_bytes = 0;
};

auth::TokenKey key_for(const nlohmann::json& keys, const std::string& name) {
  const std::string text = keys.at(name).get<std::string>();
  if (name == "hmac") return auth::TokenKey::hmac_secret(text);
  if (name == "rsa") return auth::TokenKey::rsa_public_key_pem(text);
  return auth::TokenKey::ecdsa_public_key_pem(text);
}

// Runs `one` (returns false on a failure) for at least `duration`, in batches.
template <class F>
Result measure(Duration duration, F&& one) {
  // Warm up: the claims' capacity, OpenSSL's lazily built tables.
  for (int i = 0; i < 50; ++i)
    if (!one()) throw std::runtime_error("a verification failed");
  Result r;
  constexpr std::uint64_t kAllocRuns = 200;
  const std::uint64_t new0 = bench::new_calls(), ssl0 = g_openssl_calls.load();
  for (std::uint64_t i = 0; i < kAllocRuns; ++i) one();
  r.new_calls_each = static_cast<double>(bench::new_calls() - new0) / kAllocRuns;
  r.openssl_calls_each = static_cast<double>(g_openssl_calls.load() - ssl0) / kAllocRuns;

  // CPU time of this thread is the cost; wall time is printed beside it: on
  // a machine shared with other work the two differ by the share we got.
  std::uint64_t runs = 0;
  const std::uint64_t t0 = wall_ns(), cpu0 = thread_cpu_ns();
  const auto budget = static_cast<std::uint64_t>(duration.count());
  std::uint64_t cpu = 0;
  do {
    for (int i = 0; i < 64; ++i)
      if (!one()) throw std::runtime_error("a verification failed");
    runs += 64;
    cpu = thread_cpu_ns() - cpu0;
  } while (cpu < budget);
  const std::uint64_t wall = wall_ns() - t0;
  r.ns_each = static_cast<double>(cpu) / static_cast<double>(runs);
  r.per_second = 1e9 / r.ns_each;
  r.wall_per_second = static_cast<double>(runs) * 1e9 / static_cast<double>(wall);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  // Before OpenSSL allocates anything.
  CRYPTO_set_mem_functions(openssl_malloc, openssl_realloc, openssl_free);

  std::string vectors_path = HEARTWHEEL_AUTH_VECTORS;
  std::string duration_text = "1s";
  bool json = false;
  CLI::App app{"heartwheel-auth-bench: connection-token verifications per second on one thread "
               "(HS256, RS256, ES256 and a minimal HS256 token, tokens made by PyJWT), the "
               "allocations per verification, and a channel permission check.\n"
               "Exit status: 0 ok, 1 runtime failure, 2 usage error.",
               "heartwheel-auth-bench"};
  app.add_option("--vectors", vectors_path, "the token vectors (tests/unit/auth_vectors.json)")
      ->capture_default_str()
      ->check(CLI::ExistingFile);
  app.add_option("--duration", duration_text, "CPU time per measurement (e.g. 500ms, 2s)")
      ->capture_default_str();
  app.add_flag("--json", json, "print one JSON line");
  if (auto status = cli::parse(app, argc, argv)) return *status;
  Duration duration{};
  try {
    duration = cli::parse_duration_flag("--duration", duration_text);
    if (duration.count() <= 0) throw std::invalid_argument("--duration must be more than 0");
  } catch (const std::exception& e) {
    return cli::usage_error(app, e.what());
  }

  return cli::run(app, [&] {
    std::ifstream in(vectors_path);
    const nlohmann::json data = nlohmann::json::parse(in);
    const auth::WallTime now(std::chrono::seconds(data.at("now").get<std::int64_t>()));
    const auto token_of = [&](const std::string& name) -> std::pair<std::string, std::string> {
      for (const auto& v : data.at("vectors"))
        if (v.at("name") == name) return {v.at("token"), v.at("key")};
      throw std::runtime_error("no vector " + name + " in " + vectors_path);
    };

    const std::vector<Case> cases = {{"hs256", "hs256_valid"},
                                     {"hs256_minimal", "hs256_no_exp"},
                                     {"rs256", "rs256_valid"},
                                     {"es256", "es256_valid"}};
    nlohmann::json out = {{"bench", "auth"}, {"duration_s", std::chrono::duration<double>(duration).count()}};
    for (const Case& c : cases) {
      const auto [token, key_name] = token_of(c.vector);
      auth::TokenVerifier verifier(key_for(data.at("keys"), key_name));
      auth::ConnectionClaims claims;
      Result r = measure(duration, [&] {
        return verifier.verify_connection(token, now, claims).ok();
      });
      r.token_bytes = token.size();
      out[c.name] = {{"verifications_per_cpu_second", r.per_second},
                     {"cpu_ns_per_verification", r.ns_each},
                     {"verifications_per_wall_second", r.wall_per_second},
                     {"token_bytes", r.token_bytes},
                     {"new_calls_per_verification", r.new_calls_each},
                     {"openssl_allocations_per_verification", r.openssl_calls_each}};
    }

    const auth::ChannelPolicy policy = auth::ChannelPolicy::from_json(
        R"({"namespaces":[{"name":""},{"name":"chat","subscribe":"any"},)"
        R"({"name":"private","subscribe":"token"},{"name":"dm"}]})");
    const auth::Access who{"alice", false, false};
    const Result p = measure(duration, [&] {
      return policy.can_subscribe("dm:#bob,alice", who).allowed() &&
             policy.can_subscribe("chat:lobby", who).allowed();
    });
    out["policy_check"] = {{"checks_per_cpu_second", 2 * p.per_second},
                           {"new_calls_per_check", p.new_calls_each / 2}};
    out["load_average_1m"] = bench::load_average_1m();

    if (json) {
      std::printf("%s\n", out.dump().c_str());
    } else {
      for (const Case& c : cases) {
        const auto& r = out[c.name];
        std::printf("%-14s %9.0f verifications per CPU second (%7.2f us each; %9.0f per wall "
                    "second)  %4zu-byte token  %.1f new + %.1f OpenSSL allocations each\n",
                    c.name.c_str(), r["verifications_per_cpu_second"].get<double>(),
                    r["cpu_ns_per_verification"].get<double>() / 1000,
                    r["verifications_per_wall_second"].get<double>(),
                    r["token_bytes"].get<std::size_t>(),
                    r["new_calls_per_verification"].get<double>(),
                    r["openssl_allocations_per_verification"].get<double>());
      }
      std::printf("%-14s %9.0f checks per CPU second, %.1f allocations each\n", "policy",
                  out["policy_check"]["checks_per_cpu_second"].get<double>(),
                  out["policy_check"]["new_calls_per_check"].get<double>());
      std::printf("load average (1 min): %.2f\n", out["load_average_1m"].get<double>());
    }
    return 0;
  });
}
