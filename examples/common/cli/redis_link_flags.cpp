// See redis_link_flags.h.
#include "redis_link_flags.h"

#include <heartwheel/tls/context.h>
#include <heartwheel/tls/net_transport.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <utility>

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
                             const std::string& program) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::invalid_argument(flag + ": cannot read " + path + ": " + std::strerror(errno));
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) throw std::invalid_argument(flag + ": " + path + " is empty (its first line)");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
    std::fprintf(stderr, "%s: warning: %s %s is readable by group or others (chmod 600 it)\n",
                 program.c_str(), flag.c_str(), path.c_str());
  return line;
}

namespace {

std::shared_ptr<const tls::Context> make_redis_tls(const RedisLinkFlags& f) {
  if (f.tls_cert.empty() != f.tls_key.empty())
    throw std::invalid_argument(f.tls_cert.empty() ? "--redis-tls-key needs --redis-tls-cert"
                                                   : "--redis-tls-cert needs --redis-tls-key");
  if (f.tls_insecure && !f.tls_ca.empty())
    throw std::invalid_argument("--redis-tls-insecure and --redis-tls-ca exclude each other");
  tls::ContextOptions o;
  o.role = tls::Role::client;
  o.ca_file = f.tls_ca;
  o.insecure = f.tls_insecure;
  o.alpn.clear();  // Redis selects no ALPN protocol
  if (!f.tls_cert.empty()) o.certificates.push_back({f.tls_cert, f.tls_key});
  return std::make_shared<tls::Context>(std::move(o));
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
    o.connector.transport = tls::client_transport(context, o.connector.host);
    o.node_transport = [context](const std::string& host) {
      return tls::client_transport(context, host);
    };
  }
  o.on_error = [program, user = std::move(o.on_error)](std::error_code ec,
                                                       std::string_view detail) {
    if (user) user(ec, detail);
    const std::string line =
        program + ": redis: " + (detail.empty() ? ec.message() : std::string(detail)) + "\n";
    std::fputs(line.c_str(), stderr);
  };
}

}  // namespace heartwheel::cli
