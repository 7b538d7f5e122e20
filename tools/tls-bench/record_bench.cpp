// heartwheel-tls-record-bench: the server's CPU per TLS 1.3 record with
// OpenSSL's record layer (the SSL object kept: ContextOptions::
// free_ssl_after_handshake = false) and with the tls layer's own (the SSL
// object freed after the handshake, the default), in one run.
//
// C established pairs of tls::Session in memory (no sockets); messages go
// round-robin over the pairs, so consecutive records belong to different
// connections, as a server's do (the own layer re-keys its per-thread AEAD
// context then: the case it pays for). For each message the client
// encrypts M bytes, the server decrypts them (feed) and encrypts them back
// (write), the client decrypts the answer. Only the server's two calls are
// timed (thread CPU time). Each mode runs twice, alternating, and the second
// run of each is kept. Also prints the heap bytes an idle server session
// holds in each mode (glibc's mallinfo2), and the server's CPU per full and
// resumed handshake in each mode (--handshakes; alternating rounds): the
// switch's price (OpenSSL's key log lines, the keys' derivation).
#include <heartwheel/tls/context.h>
#include <heartwheel/tls/session.h>
#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli_program.h"

namespace tls = heartwheel::tls;

namespace {

std::uint64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(t.tv_nsec);
}

struct End {
  tls::Session session;
  std::string out;  // ciphertext to deliver to the other end
};

// Feeds `bytes` to `to`; returns the plaintext. Throws on a failure.
std::string feed_all(End& to, std::string_view bytes) {
  static std::array<char, 64 * 1024> plain;
  std::string got;
  for (;;) {
    const tls::FeedResult r = to.session.feed(bytes, plain, to.out);
    if (r.failed) throw std::runtime_error("tls: " + to.session.message());
    got.append(plain.data(), r.plaintext);
    bytes.remove_prefix(r.consumed);
    if (!r.plaintext_out_full && bytes.empty()) return got;
  }
}

struct Pair {
  End client;
  End server;
};

Pair handshake(const tls::Context& client, const tls::Context& server) {
  Pair p{End{tls::Session::client(client, "localhost"), {}}, End{tls::Session::server(server), {}}};
  if (!p.client.session.start(p.client.out)) throw std::runtime_error("tls: no ClientHello");
  for (int i = 0; i < 16 && (!p.client.out.empty() || !p.server.out.empty()); ++i) {
    const std::string c = std::exchange(p.client.out, {});
    feed_all(p.server, c);
    const std::string s = std::exchange(p.server.out, {});
    feed_all(p.client, s);
  }
  if (!p.server.session.established() || !p.client.session.established())
    throw std::runtime_error("tls: handshake did not complete");
  return p;
}

// The server's tickets per full handshake (--session-tickets).
struct Tickets {
  std::uint8_t per_handshake = tls::ContextOptions{}.session_tickets;
};

tls::ContextOptions server_options(bool own_records, const std::string& cert,
                                   const std::string& key, Tickets tickets) {
  tls::ContextOptions o;
  o.role = tls::Role::server;
  o.certificates.push_back({cert, key});
  o.free_ssl_after_handshake = own_records;
  o.session_tickets = tickets.per_handshake;
  return o;
}

tls::ContextOptions client_options(bool resume) {
  tls::ContextOptions o;
  o.role = tls::Role::client;
  o.insecure = true;
  o.client_session_cache = resume;
  return o;
}

struct Result {
  double read_ns = 0;   // server feed() per record
  double write_ns = 0;  // server write() per record
  double idle_heap_bytes = 0;
};

Result run(bool own_records, const std::string& cert, const std::string& key, int pairs,
           std::uint64_t messages, std::size_t size, Tickets tickets) {
  tls::Context server(server_options(own_records, cert, key, tickets));
  tls::Context client(client_options(false));
  std::vector<Pair> all;
  all.reserve(static_cast<std::size_t>(pairs));
  for (int i = 0; i < pairs; ++i) all.push_back(handshake(client, server));
  const std::string message(size, 'm');
  Result r;
  std::uint64_t read_ns = 0, write_ns = 0;
  for (std::uint64_t k = 0; k < messages; ++k) {
    Pair& p = all[k % all.size()];
    if (p.client.session.write(message, p.client.out)) throw std::runtime_error("client write");
    const std::string up = std::exchange(p.client.out, {});
    std::uint64_t t0 = thread_cpu_ns();
    const std::string got = feed_all(p.server, up);
    const std::uint64_t t1 = thread_cpu_ns();
    if (p.server.session.write(got, p.server.out)) throw std::runtime_error("server write");
    const std::uint64_t t2 = thread_cpu_ns();
    read_ns += t1 - t0;
    write_ns += t2 - t1;
    if (got.size() != size) throw std::runtime_error("a message arrived cut");
    const std::string down = std::exchange(p.server.out, {});
    feed_all(p.client, down);
  }
  r.read_ns = static_cast<double>(read_ns) / static_cast<double>(messages);
  r.write_ns = static_cast<double>(write_ns) / static_cast<double>(messages);
  // The heap the server sessions give back (each idle, after its traffic).
  const std::size_t before = mallinfo2().uordblks;
  for (Pair& p : all) p.server.session = tls::Session();
  r.idle_heap_bytes = static_cast<double>(before - mallinfo2().uordblks) / pairs;
  return r;
}

double load_average_1m() {
  double load[1] = {0};
  return getloadavg(load, 1) == 1 ? load[0] : -1;
}

// Server CPU per handshake (full or resumed by a ticket), the server's
// session destroyed included (the SSL object's free is the switch's in the
// own mode, the connection's end's otherwise): `count` handshakes, each then
// one request and answer.
double handshake_ns(bool own_records, bool resumed, const std::string& cert, const std::string& key,
                    int count, Tickets tickets) {
  tls::Context server(server_options(own_records, cert, key, tickets));
  tls::Context client(client_options(resumed));
  std::uint64_t ns = 0;
  for (int i = 0; i <= count; ++i) {  // the first one leaves the ticket to resume with
    End c{tls::Session::client(client, "localhost"), {}};
    End s{tls::Session::server(server), {}};
    if (!c.session.start(c.out)) throw std::runtime_error("tls: no ClientHello");
    std::uint64_t server_ns = 0;
    for (int k = 0; k < 16 && (!c.out.empty() || !s.out.empty()); ++k) {
      const std::string up = std::exchange(c.out, {});
      const std::uint64_t t0 = thread_cpu_ns();
      feed_all(s, up);
      server_ns += thread_cpu_ns() - t0;
      const std::string down = std::exchange(s.out, {});
      feed_all(c, down);
    }
    if (c.session.write("GET / HTTP/1.1\r\n\r\n", c.out)) throw std::runtime_error("write");
    const std::string request = std::exchange(c.out, {});
    const std::uint64_t t0 = thread_cpu_ns();
    feed_all(s, request);
    if (s.session.write("HTTP/1.1 200 OK\r\n\r\n", s.out)) throw std::runtime_error("write");
    if (resumed && i > 0 && !s.session.resumed()) throw std::runtime_error("tls: not resumed");
    s.session = tls::Session();
    server_ns += thread_cpu_ns() - t0;
    if (i > 0) ns += server_ns;
  }
  return static_cast<double>(ns) / count;
}

}  // namespace

int main(int argc, char** argv) {
  int pairs = 1000;
  std::uint64_t messages = 200'000;
  std::size_t size = 64;
  int handshakes = 500;
  int session_tickets = tls::ContextOptions{}.session_tickets;
  bool json = false;
  CLI::App app{
      "heartwheel-tls-record-bench: server CPU per TLS 1.3 record, OpenSSL's record "
      "layer (SSL object kept) against the tls layer's own (SSL object freed after the "
      "handshake), in one run, through memory.\n"
      "Exit status: 0 ok, 1 runtime failure, 2 usage error.",
      "heartwheel-tls-record-bench"};
  app.add_option("--connections", pairs, "established pairs the messages go round (>= 1)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--messages", messages, "messages per run (>= 1000)")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1000}, std::uint64_t{1} << 32));
  app.add_option("--size", size, "bytes per message (1..16384: one record)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{16384}));
  app.add_option("--handshakes", handshakes,
                 "full and resumed handshakes timed per mode and round (0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  app.add_option("--session-tickets", session_tickets,
                 "tickets per full handshake (tls::ContextOptions::session_tickets)")
      ->capture_default_str()
      ->check(CLI::Range(0, int{tls::kMaxSessionTickets}));
  app.add_flag("--json", json, "print one JSON line");
  if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;
  return heartwheel::cli::run(app, [&] {
    // A throwaway ECDSA P-256 certificate, made by the openssl command line.
    char dir_template[] = "/tmp/hw-tls-record-bench-XXXXXX";
    const char* dir = mkdtemp(dir_template);
    if (!dir) throw std::runtime_error("mkdtemp failed");
    const std::string cert = std::string(dir) + "/cert.pem", key = std::string(dir) + "/key.pem";
    const std::string cmd =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
        "-nodes -days 1 -subj /CN=localhost -keyout " +
        key + " -out " + cert + " >/dev/null 2>&1";
    const int made = std::system(cmd.c_str());
    const Tickets tickets{static_cast<std::uint8_t>(session_tickets)};
    Result openssl, own;
    // Per mode (0 OpenSSL's records, 1 own) and kind (0 full, 1 resumed):
    // the handshakes' server CPU summed over the rounds, then per handshake.
    double hs[2][2] = {};
    constexpr int kHandshakeRounds = 4;
    try {
      if (made != 0) throw std::runtime_error("could not make a certificate with openssl req");
      for (int round = 0; round < 2; ++round) {  // the first round warms up
        openssl = run(false, cert, key, pairs, messages, size, tickets);
        own = run(true, cert, key, pairs, messages, size, tickets);
      }
      // Alternating in short rounds: a handshake is ~0.2-0.3 ms and the
      // machine's load drifts.
      for (int round = 0; handshakes > 0 && round < kHandshakeRounds; ++round) {
        for (int kind = 0; kind < 2; ++kind) {
          for (int mode = 0; mode < 2; ++mode) {
            const int m = round % 2 == 0 ? mode : 1 - mode;
            hs[m][kind] +=
                handshake_ns(m == 1, kind == 1, cert, key, handshakes, tickets) / kHandshakeRounds;
          }
        }
      }
    } catch (...) {
      std::filesystem::remove_all(dir);
      throw;
    }
    std::filesystem::remove_all(dir);
    if (json) {
      nlohmann::json j = {
          {"bench", "tls_records"},
          {"connections", pairs},
          {"messages", messages},
          {"size", size},
          {"openssl_read_ns", openssl.read_ns},
          {"openssl_write_ns", openssl.write_ns},
          {"own_read_ns", own.read_ns},
          {"own_write_ns", own.write_ns},
          {"own_to_openssl", (own.read_ns + own.write_ns) / (openssl.read_ns + openssl.write_ns)},
          {"openssl_idle_heap_bytes", openssl.idle_heap_bytes},
          {"own_idle_heap_bytes", own.idle_heap_bytes},
          {"handshakes", handshakes},
          {"session_tickets", session_tickets},
          {"openssl_full_handshake_ns", hs[0][0]},
          {"own_full_handshake_ns", hs[1][0]},
          {"openssl_resumed_handshake_ns", hs[0][1]},
          {"own_resumed_handshake_ns", hs[1][1]},
          {"load_average_1m", load_average_1m()}};
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("%d connections, %zu-byte messages, server CPU per record (read + write):\n",
                  pairs, size);
      std::printf("  OpenSSL's record layer: %.0f + %.0f ns, idle session %.0f heap bytes\n",
                  openssl.read_ns, openssl.write_ns, openssl.idle_heap_bytes);
      std::printf("  own record layer:       %.0f + %.0f ns, idle session %.0f heap bytes\n",
                  own.read_ns, own.write_ns, own.idle_heap_bytes);
      std::printf("  own / OpenSSL: %.2f\n",
                  (own.read_ns + own.write_ns) / (openssl.read_ns + openssl.write_ns));
      if (handshakes > 0) {
        std::printf("server CPU per handshake (full / resumed), %d x %d each:\n", kHandshakeRounds,
                    handshakes);
        std::printf("  SSL object kept:  %.1f / %.1f us\n", hs[0][0] / 1e3, hs[0][1] / 1e3);
        std::printf("  SSL object freed: %.1f / %.1f us (%+.1f / %+.1f us)\n", hs[1][0] / 1e3,
                    hs[1][1] / 1e3, (hs[1][0] - hs[0][0]) / 1e3, (hs[1][1] - hs[0][1]) / 1e3);
      }
    }
    return 0;
  });
}
