// cli/redis_link_flags.h - the flags every program with a Redis link shares
// (issues 21 and 23): credentials and TLS on the link.
//
//   --redis-password-file FILE  AUTH with the file's first line (its trailing
//                               newline stripped). Never a flag value: a
//                               command line is visible to every user (ps).
//   --redis-user NAME           an ACL user (Redis 6+: AUTH NAME PASSWORD);
//                               needs --redis-password-file
//   --redis-tls                 speak TLS to Redis (verified against the
//                               system's store unless --redis-tls-ca)
//   --redis-tls-ca FILE         trust these CA certificates (PEM)
//   --redis-tls-cert FILE       present this client certificate (PEM), with
//   --redis-tls-key FILE        its key: redis-server's tls-auth-clients is
//                               on by default
//   --redis-tls-insecure        do not verify Redis's certificate (tests only)
// Any --redis-tls-* flag implies --redis-tls.
//
//   cli::RedisLinkFlags rl;
//   cli::add_redis_link_flags(app, rl);
//   ... parse; set the target (connector.host/port or cluster.seeds) ...
//   cli::apply_redis_link_flags(rl, client_options, "heartwheel-chat");
//
// apply_redis_link_flags writes user and password, the TLS transport
// (connector.transport naming connector.host; on a cluster, node_transport:
// each node's transport names that node), and an on_error that logs what the
// link reports in the log (common/log.h), one line each:
//   "NAME: redis: AUTH refused by 127.0.0.1:6379 for user chat: WRONGPASS ..."
// (after any on_error already set). With TLS, a refused handshake (a wrong
// CA, a name that does not match, no client certificate) is a warning naming
// the node, once per node and reason, not once per retry (the same line
// again within 60 s is counted and the count printed with it later):
//   "NAME: warning: redis link 127.0.0.1:6380: tls handshake failed:
//    certificate verify failed: self-signed certificate in certificate chain"
// It warns in the log when the password
// file is readable by its group or by others:
//   "NAME: warning: --redis-password-file FILE is readable by group or others (chmod 600 it)"
// The password is kept only in the options (and the AUTH command's bytes).
//
// Errors (std::invalid_argument, a usage error naming the flag): the
// password file unreadable (its reason) or empty, --redis-user without
// --redis-password-file, one of --redis-tls-cert / --redis-tls-key without
// the other, --redis-tls-insecure with --redis-tls-ca; tls::ContextError
// names a TLS file and its reason.
//
// Threads: from main() only; the on_error it installs runs on the link's
// loop thread (log lines are written whole).
#pragma once

#include <heartwheel/redis/link_options.h>

#include <string>

namespace CLI {
class App;
}

namespace heartwheel::cli {

struct RedisLinkFlags {
  std::string password_file;
  std::string user;
  bool tls = false;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  bool tls_insecure = false;
};

// Registers the flags above.
void add_redis_link_flags(CLI::App& app, RedisLinkFlags& flags);

// Writes the flags into `options` (after its target is set: TLS names
// connector.host). `program` prefixes the log lines.
void apply_redis_link_flags(const RedisLinkFlags& flags, redis::LinkOptions& options,
                            const std::string& program);

// The first line of `path`, its trailing "\n" or "\r\n" stripped. Throws
// std::invalid_argument naming `flag` and the file: unreadable (why), empty.
// Warns in the log ("PROGRAM: warning: ...") if group or others may read it.
std::string read_secret_file(const std::string& flag, const std::string& path,
                             const std::string& program);

}  // namespace heartwheel::cli
