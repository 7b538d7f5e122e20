// See redis_server.h.
#include "redis_server.h"

#include <arpa/inet.h>
#include <heartwheel/redis/auth.h>
#include <heartwheel/redis/command.h>
#include <heartwheel/redis/reader.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <map>
#include <optional>
#include <stdexcept>

namespace hwtest {

namespace redis = heartwheel::redis;
using hwproc::Ms;

namespace {

constexpr const char* kRedisServer = "/usr/bin/redis-server";
constexpr const char* kRedisCli = "/usr/bin/redis-cli";

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One command on a blocking socket; nullopt if no full reply within `limit`.
// With a password, AUTH goes first and its reply is skipped (an AUTH
// refused: nullopt).
std::optional<redis::Reply> run_command(int port, std::vector<std::string_view> args, Ms limit,
                                        const RedisServerOptions* creds = nullptr) {
  const int fd = connect_to(port);
  if (fd < 0) return std::nullopt;
  const bool auth = creds != nullptr && !creds->password.empty();
  std::string bytes;
  if (auth) bytes = redis::auth_command(creds->user, creds->password).bytes();
  bytes += redis::Command{std::span<const std::string_view>(args)}.bytes();
  bool ok =
      ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  redis::ReplyReader reader;
  redis::Reply reply;
  int replies_left = auth ? 2 : 1;
  const auto end = hwproc::now() + limit;
  while (ok && replies_left > 0) {
    if (reader.next(reply)) {
      if (--replies_left > 0 && reply.is_error()) ok = false;  // the AUTH refused
      continue;
    }
    const auto left = std::chrono::duration_cast<Ms>(end - hwproc::now()).count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) ok = false;
    char buf[4096];
    const ssize_t n = ok ? ::read(fd, buf, sizeof buf) : -1;
    if (n <= 0 || reader.feed(std::string_view(buf, static_cast<std::size_t>(n)))) ok = false;
  }
  ::close(fd);
  if (!ok) return std::nullopt;
  return reply;
}

// True if 127.0.0.1:`port` can be bound now.
bool port_free(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// A free port for a cluster node: below 55535, its bus port (+10000) free too.
int free_cluster_port() {
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = free_port();
    if (port < 55535 && port_free(port + 10000)) return port;
  }
  FAIL("no free port below 55535 with port + 10000 free");
  return 0;
}

}  // namespace

std::optional<redis::Reply> try_command(int port, std::vector<std::string_view> args, Ms limit) {
  return run_command(port, std::move(args), limit);
}

namespace {
// "cluster_state:ok" in CLUSTER INFO.
bool cluster_ok(int port) {
  const auto info = try_command(port, {"CLUSTER", "INFO"}, Ms(2000));
  return info && info->str().find("cluster_state:ok") != std::string::npos;
}

// (first slot, last slot, master port) per range of CLUSTER SLOTS, sorted.
std::vector<std::array<std::int64_t, 3>> slot_ranges(int port) {
  std::vector<std::array<std::int64_t, 3>> out;
  const auto r = try_command(port, {"CLUSTER", "SLOTS"}, Ms(2000));
  if (!r || !r->is_array()) return out;
  for (const auto& range : r->elements()) {
    if (!range.is_array() || range.size() < 3 || !range[2].is_array() || range[2].size() < 2)
      continue;
    out.push_back({range[0].integer(), range[1].integer(), range[2][1].integer()});
  }
  std::sort(out.begin(), out.end());
  return out;
}

// (first slot, master port, replica ports sorted) per range of CLUSTER
// SLOTS, sorted: one node's view of who can take over each range.
std::vector<std::vector<std::int64_t>> replica_view(int port) {
  std::vector<std::vector<std::int64_t>> out;
  const auto r = try_command(port, {"CLUSTER", "SLOTS"}, Ms(2000));
  if (!r || !r->is_array()) return out;
  for (const auto& range : r->elements()) {
    if (!range.is_array() || range.size() < 3) continue;
    std::vector<std::int64_t> row{range[0].integer()};
    for (std::size_t i = 2; i < range.size(); ++i)
      if (range[i].is_array() && range[i].size() >= 2) row.push_back(range[i][1].integer());
    if (row.size() < 2) continue;  // no master: not a map
    std::sort(row.begin() + 2, row.end());
    out.push_back(std::move(row));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Replicas of the master on `port` that are in sync ("state=online").
std::size_t online_replicas(int port) {
  const auto info = try_command(port, {"INFO", "replication"}, Ms(2000));
  if (!info) return 0;
  std::size_t n = 0;
  for (auto at = info->str().find("state=online"); at != std::string_view::npos;
       at = info->str().find("state=online", at + 1))
    ++n;
  return n;
}
}  // namespace

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

RedisServer::RedisServer(bool durable) : RedisServer(RedisServerOptions{.durable = durable}) {}

RedisServer::RedisServer(const RedisServerOptions& options) : options_(options) {
  for (int attempt = 0; attempt < 5; ++attempt)
    if (start_on(options_.cluster ? free_cluster_port() : free_port())) return;
  FAIL("redis-server did not start (is it installed? tools/install-deps)");
}

RedisServer::~RedisServer() { child_.reset(); }  // SIGKILL (also when frozen) and reap

bool RedisServer::start_on(int port) {
  std::vector<std::string> argv{kRedisServer,  "--port",   std::to_string(port),
                                "--bind",      "127.0.0.1", "--save",
                                "",            "--appendonly", options_.durable ? "yes" : "no",
                                "--appendfsync", "always", "--dir",
                                dir_.file(""), "--loglevel", "warning",
                                "--daemonize", "no"};
  if (options_.cluster)
    argv.insert(argv.end(), {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                             "--cluster-node-timeout",
                             std::to_string(options_.cluster_node_timeout.count()),
                             // replicas in sync at once, not after the 5 s default
                             "--repl-diskless-sync-delay", "0"});
  if (options_.replica_of != 0)
    argv.insert(argv.end(), {"--replicaof", "127.0.0.1", std::to_string(options_.replica_of)});
  if (!options_.tls_cert.empty()) {
    if (tls_port_ == 0) tls_port_ = free_port();  // kept across restart()
    argv.insert(argv.end(), {"--tls-port", std::to_string(tls_port_), "--tls-cert-file",
                             options_.tls_cert, "--tls-key-file", options_.tls_key,
                             "--tls-ca-cert-file", options_.tls_ca});
  }
  if (!options_.password.empty() && options_.user.empty())
    argv.insert(argv.end(), {"--requirepass", options_.password});
  if (!options_.password.empty() && !options_.user.empty())
    argv.insert(argv.end(), {"--user", "default", "off", "--user", options_.user, "on",
                             ">" + options_.password, "~*", "&*", "+@all"});
  child_ = std::make_unique<hwproc::Child>(std::move(argv));
  const auto end = hwproc::now() + Ms(10000);
  while (hwproc::now() < end) {
    if (child_->wait_exit(Ms(0))) break;  // could not bind: the port was taken meanwhile
    const auto pong = run_command(port, {"PING"}, Ms(1000), &options_);
    if (pong && pong->is("PONG")) {
      port_ = port;
      return true;
    }
    hwproc::sleep_for(Ms(20));
  }
  child_.reset();
  return false;
}

void RedisServer::kill() {
  REQUIRE(child_);
  child_->signal(SIGKILL);
  REQUIRE(child_->wait_exit(Ms(5000)));
  child_.reset();
  std::vector<int> ports{port_};
  if (tls_port_ != 0) ports.push_back(tls_port_);
  if (options_.cluster) ports.push_back(port_ + 10000);
  for (int port : ports) {
    try {
      held_.push_back(std::make_unique<heartwheel::test::ClosedPort>(port));
    } catch (const std::runtime_error&) {
      // Taken already, in the moment since the exit: restart() meets that
      // as it would have without a hold.
    }
  }
}

void RedisServer::restart() {
  REQUIRE_FALSE(child_);
  // Redis sets SO_REUSEADDR: the port is free again at once after a kill,
  // and it binds and listens while held_ holds it (also SO_REUSEADDR).
  for (int attempt = 0; attempt < 50 && !start_on(port_); ++attempt) hwproc::sleep_for(Ms(100));
  REQUIRE(child_);
  held_.clear();
}

void RedisServer::freeze() {
  child_->signal(SIGSTOP);
  frozen_ = true;
}
void RedisServer::thaw() {
  child_->signal(SIGCONT);
  frozen_ = false;
}

redis::Reply RedisServer::command(std::vector<std::string_view> args) {
  auto reply = run_command(port_, std::move(args), Ms(5000), &options_);
  REQUIRE(reply);
  return std::move(*reply);
}

// ---- RedisCluster -----------------------------------------------------------------

RedisCluster::RedisCluster(int masters, int replicas) {
  const int count = masters * (1 + replicas);
  for (int i = 0; i < count; ++i)
    nodes_.push_back(std::make_unique<RedisServer>(RedisServerOptions{.cluster = true}));
  std::vector<std::string> argv{kRedisCli, "--cluster", "create"};
  for (const auto& seed : seeds()) argv.push_back(seed);
  argv.insert(argv.end(), {"--cluster-replicas", std::to_string(replicas), "--cluster-yes"});
  hwproc::Child cli(argv, {.capture_stderr = true, .env = {}});
  const auto status = cli.wait_exit(Ms(60000));
  INFO(cli.output() << cli.errors());
  REQUIRE(status == 0);
  REQUIRE(wait_until_ok());
}

RedisCluster::~RedisCluster() = default;

std::vector<std::string> RedisCluster::seeds() const {
  std::vector<std::string> out;
  for (const auto& n : nodes_) out.push_back("127.0.0.1:" + std::to_string(n->port()));
  return out;
}

std::vector<int> RedisCluster::ports() const {
  std::vector<int> out;
  for (const auto& n : nodes_) out.push_back(n->port());
  return out;
}

RedisServer* RedisCluster::server(int port) const {
  for (const auto& n : nodes_)
    if (n->port() == port) return n.get();
  return nullptr;
}

void RedisCluster::freeze(int port) {
  RedisServer* s = server(port);
  REQUIRE(s);
  s->freeze();
}

void RedisCluster::thaw(int port) {
  RedisServer* s = server(port);
  REQUIRE(s);
  s->thaw();
}

bool RedisCluster::alive(int port) const {
  const RedisServer* s = server(port);
  return s != nullptr && s->answering();
}

std::vector<int> RedisCluster::masters() {
  for (const auto& n : nodes_) {
    if (!n->answering()) continue;
    const auto ranges = slot_ranges(n->port());
    if (ranges.empty()) continue;
    std::vector<int> out;
    for (const auto& r : ranges)
      if (std::find(out.begin(), out.end(), r[2]) == out.end())
        out.push_back(static_cast<int>(r[2]));
    return out;
  }
  FAIL("no live cluster node answers CLUSTER SLOTS");
  return {};
}

int RedisCluster::master_of(std::uint16_t slot) {
  for (const auto& n : nodes_) {
    if (!n->answering()) continue;
    for (const auto& r : slot_ranges(n->port()))
      if (r[0] <= slot && slot <= r[1]) return static_cast<int>(r[2]);
  }
  FAIL("no live node names a master for slot " << slot);
  return 0;
}

std::string RedisCluster::id_of(int port) {
  const auto r = try_command(port, {"CLUSTER", "MYID"});
  return r && r->is_string() ? std::string(r->str()) : std::string();
}

void RedisCluster::kill(int port) {
  RedisServer* s = server(port);
  REQUIRE(s);
  s->kill();
}

void RedisCluster::restart(int port) {
  RedisServer* s = server(port);
  REQUIRE(s);
  s->restart();
}

bool RedisCluster::wait_until_ok(Ms limit) {
  const auto end = hwproc::now() + limit;
  while (hwproc::now() < end) {
    bool ok = true;
    std::optional<std::vector<std::array<std::int64_t, 3>>> agreed;
    std::optional<std::vector<std::vector<std::int64_t>>> agreed_replicas;
    for (const auto& n : nodes_) {
      if (!n->answering()) continue;
      const auto ranges = slot_ranges(n->port());
      std::int64_t covered = 0;
      for (const auto& r : ranges) {
        covered += r[1] - r[0] + 1;
        if (!alive(static_cast<int>(r[2]))) ok = false;
      }
      if (!cluster_ok(n->port()) || covered != 16384 || (agreed && *agreed != ranges)) ok = false;
      agreed = ranges;
      // Every node lists the same replicas too: right after `redis-cli
      // --cluster create` most nodes still see the replicas as empty
      // masters (until the replicas' gossip reaches them). A link that read
      // its first map then could not tell a failover from a new master, and
      // a failover test would depend on how fast gossip went.
      const auto replicas = replica_view(n->port());
      if (agreed_replicas && *agreed_replicas != replicas) ok = false;
      agreed_replicas = replicas;
    }
    // Every live node a master of the map or a replica in sync with one
    // (WAIT counts only those), and listed as its replica in the map.
    std::size_t live = 0, placed = 0;
    for (const auto& n : nodes_) live += n->answering() ? 1 : 0;
    if (agreed && agreed_replicas) {
      std::map<int, std::size_t> listed;  // master port -> replicas in the map
      for (const auto& row : *agreed_replicas) listed[static_cast<int>(row[1])] = row.size() - 2;
      for (const auto& [m, count] : listed) {
        const std::size_t online = online_replicas(m);
        if (online != count) ok = false;
        placed += 1 + online;
      }
    }
    if (placed != live) ok = false;
    if (ok) return true;
    hwproc::sleep_for(Ms(50));
  }
  return false;
}

bool RedisCluster::begin_migration(std::uint16_t slot, int from, int to) {
  const std::string s = std::to_string(slot), from_id = id_of(from), to_id = id_of(to);
  const auto a = try_command(to, {"CLUSTER", "SETSLOT", s, "IMPORTING", from_id});
  const auto b = try_command(from, {"CLUSTER", "SETSLOT", s, "MIGRATING", to_id});
  return a && a->is("OK") && b && b->is("OK");
}

bool RedisCluster::move_keys(std::uint16_t slot, int from, int to) {
  const std::string s = std::to_string(slot), port = std::to_string(to);
  for (;;) {
    const auto keys = try_command(from, {"CLUSTER", "GETKEYSINSLOT", s, "100"});
    if (!keys || !keys->is_array()) return false;
    if (keys->size() == 0) return true;
    std::vector<std::string_view> args{"MIGRATE", "127.0.0.1", port, "", "0", "5000", "KEYS"};
    for (const auto& k : keys->elements()) args.push_back(k.str());
    const auto moved = try_command(from, args);
    if (!moved || !(moved->is("OK") || moved->is("NOKEY"))) return false;
  }
}

bool RedisCluster::finish_migration(std::uint16_t slot, int from, int to) {
  const std::string s = std::to_string(slot), to_id = id_of(to);
  // The target first, then the source, then every other master (Redis's order).
  std::vector<int> order{to, from};
  for (int m : masters())
    if (m != to && m != from) order.push_back(m);
  for (int port : order) {
    const auto r = try_command(port, {"CLUSTER", "SETSLOT", s, "NODE", to_id});
    if (!r || !r->is("OK")) return false;
  }
  return true;
}

redis::Reply RedisCluster::command(int port, std::vector<std::string_view> args) {
  auto reply = try_command(port, std::move(args));
  REQUIRE(reply);
  return std::move(*reply);
}

}  // namespace hwtest
