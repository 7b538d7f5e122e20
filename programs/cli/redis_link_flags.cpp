// See redis_link_flags.h.
#include "redis_link_flags.h"

#include <heartwheel/common/log.h>
#include <heartwheel/common/log_repeats.h>
#include <heartwheel/tls/context.h>
#include <heartwheel/tls/net_transport.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "tls_flags.h"

namespace heartwheel::cli {

void add_redis_link_flags(CLI::App& app, RedisLinkFlags& f) {
  app.add_option("--redis-password-file", f.password_file,
                 "AUTH to Redis with the first line of FILE (keep it mode 600; a password is never "
                 "taken on the command line, where ps shows it)");
  app.add_option("--redis-user", f.user,
                 "with --redis-password-file: AUTH as this Redis ACL user (Redis 6+) instead of "
                 "the default user");
  app.add_flag("--redis-tls", f.tls,
               "speak TLS to Redis (its certificate verified against the system's CAs, or "
               "--redis-tls-ca)");
  app.add_option("--redis-tls-ca", f.tls_ca,
                 "trust these CA certificates (PEM) for Redis's certificate; implies --redis-tls");
  app.add_option("--redis-tls-cert", f.tls_cert,
                 "present this client certificate (PEM) to Redis (redis-server's "
                 "tls-auth-clients); needs --redis-tls-key; implies --redis-tls");
  app.add_option("--redis-tls-key", f.tls_key,
                 "the private key of --redis-tls-cert (PEM, unencrypted)");
  app.add_flag("--redis-tls-insecure", f.tls_insecure,
               "do not verify Redis's certificate (tests only: anyone in the path can read and "
               "change the link); implies --redis-tls");
}

std::string read_secret_file(const std::string& flag, const std::string& path,
                             const std::string& /*program: the log names it*/) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::invalid_argument(flag + ": cannot read " + path + ": " + std::strerror(errno));
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) throw std::invalid_argument(flag + ": " + path + " is empty (its first line)");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
    log::warning(flag + " " + path + " is readable by group or others (chmod 600 it)");
  return line;
}

namespace {

std::shared_ptr<const tls::Context> make_redis_tls(const RedisLinkFlags& f) {
  if (f.tls_cert.empty() != f.tls_key.empty())
    throw std::invalid_argument(f.tls_cert.empty() ? "--redis-tls-key needs --redis-tls-cert"
                                                   : "--redis-tls-cert needs --redis-tls-key");
  if (f.tls_insecure && !f.tls_ca.empty())
    throw std::invalid_argument("--redis-tls-insecure and --redis-tls-ca exclude each other");
  ClientContextFlags c;
  c.ca = f.tls_ca;
  c.insecure = f.tls_insecure;
  c.cert = f.tls_cert;
  c.key = f.tls_key;
  c.alpn.clear();  // Redis selects no ALPN protocol
  return client_context(c);
}

// Why a node's TLS handshake failed, one line per node and reason, not one
// per retry: the connector retries with backoff (attempts at most 5 s apart,
// per link), so a wrong CA would otherwise print a line every few seconds from
// each link of the program for as long as it runs. The same line again
// within kRepeatEvery is counted; the first one after that prints with the
// count. Shared by every link and node of a program, whose loops may be
// several threads: a mutex.
class HandshakeFailureLog {
 public:
  static constexpr std::chrono::seconds kRepeatEvery{60};

  void report(const std::string& address, const std::string& message) {
    const auto held = repeats_.admit(address + ": " + message);
    if (!held) return;
    std::string line = "redis link " + address + ": tls handshake failed: " + message;
    if (*held > 0) line += " (" + std::to_string(*held) + " more like it since the last such line)";
    log::warning(line, {log::field("node", address), log::field("repeats", *held)});
  }

 private:
  log::Repeats repeats_{kRepeatEvery};
};

std::shared_ptr<net::ByteStageFactory> redis_tls_transport(
    std::shared_ptr<const tls::Context> context, const std::string& host, int port,
    const std::shared_ptr<HandshakeFailureLog>& log) {
  const std::string address = host + ":" + std::to_string(port);
  return tls::client_transport(
      std::move(context), host, {},
      {.handshake_timeout = tls::TransportOptions{}.handshake_timeout,
       .on_failure = [log, address](tls::FailureCause, const std::string& message) {
         log->report(address, message);
       }});
}

}  // namespace

void apply_redis_link_flags(const RedisLinkFlags& f, redis::LinkOptions& o,
                            const std::string& program) {
  if (!f.user.empty() && f.password_file.empty())
    throw std::invalid_argument("--redis-user needs --redis-password-file");
  if (!f.password_file.empty()) {
    o.password = read_secret_file("--redis-password-file", f.password_file, program);
    o.user = f.user;
  }
  if (f.tls || f.tls_insecure || !f.tls_ca.empty() || !f.tls_cert.empty() ||
      !f.tls_key.empty()) {
    std::shared_ptr<const tls::Context> context = make_redis_tls(f);
    auto log = std::make_shared<HandshakeFailureLog>();
    o.connector.transport = redis_tls_transport(context, o.connector.host, o.connector.port, log);
    o.node_transport = [context, log](const std::string& host, int port) {
      return redis_tls_transport(context, host, port, log);
    };
  }
  o.on_error = [user = std::move(o.on_error)](std::error_code ec, std::string_view detail) {
    if (user) user(ec, detail);
    log::warning("redis: " + (detail.empty() ? ec.message() : std::string(detail)));
  };
}

}  // namespace heartwheel::cli
