// See redis_server.h.
#include "redis_server.h"

#include <arpa/inet.h>
#include <heartwheel/redis/command.h>
#include <heartwheel/redis/reader.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <optional>

namespace hwtest {

namespace redis = heartwheel::redis;
using hwproc::Ms;

namespace {

constexpr const char* kRedisServer = "/usr/bin/redis-server";

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
std::optional<redis::Reply> run_command(int port, std::vector<std::string_view> args, Ms limit) {
  const int fd = connect_to(port);
  if (fd < 0) return std::nullopt;
  const redis::Command cmd{std::span<const std::string_view>(args)};
  const std::string_view bytes = cmd.bytes();
  bool ok =
      ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  redis::ReplyReader reader;
  redis::Reply reply;
  const auto end = hwproc::now() + limit;
  while (ok && !reader.next(reply)) {
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

RedisServer::RedisServer(bool durable) : durable_(durable) {
  for (int attempt = 0; attempt < 5; ++attempt)
    if (start_on(free_port())) return;
  FAIL("redis-server did not start (is it installed? tools/install-deps)");
}

RedisServer::~RedisServer() { child_.reset(); }  // SIGKILL (also when frozen) and reap

bool RedisServer::start_on(int port) {
  child_ = std::make_unique<hwproc::Child>(std::vector<std::string>{
      kRedisServer, "--port", std::to_string(port), "--bind", "127.0.0.1", "--save", "",
      "--appendonly", durable_ ? "yes" : "no", "--appendfsync", "always", "--dir", dir_.file(""),
      "--loglevel", "warning", "--daemonize", "no"});
  const auto end = hwproc::now() + Ms(10000);
  while (hwproc::now() < end) {
    if (child_->wait_exit(Ms(0))) break;  // could not bind: the port was taken meanwhile
    const auto pong = run_command(port, {"PING"}, Ms(1000));
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
}

void RedisServer::restart() {
  REQUIRE_FALSE(child_);
  // Redis sets SO_REUSEADDR: the port is free again at once after a kill.
  for (int attempt = 0; attempt < 50 && !start_on(port_); ++attempt) hwproc::sleep_for(Ms(100));
  REQUIRE(child_);
}

void RedisServer::freeze() { child_->signal(SIGSTOP); }
void RedisServer::thaw() { child_->signal(SIGCONT); }

redis::Reply RedisServer::command(std::vector<std::string_view> args) {
  auto reply = run_command(port_, std::move(args), Ms(5000));
  REQUIRE(reply);
  return std::move(*reply);
}

}  // namespace hwtest
