// heartwheel-fanout-bench: publish-to-delivery latency of heartwheel-chat's
// fan-out, on one node or across nodes (--redis). It opens N WebSocket
// subscribers on each address given (one reader thread per address, epoll,
// raw frames: no library), subscribes them all to one channel, then a
// publisher on the FIRST address publishes P messages carrying its send
// time (CLOCK_MONOTONIC, the same clock the readers read: one machine), one
// every --interval. Each subscriber's latency is its read time minus the
// send time: it includes the server's fan-out, the Redis round trip when the
// nodes use one, and this client's own reading (one thread reads all of an
// address's sockets, so the last socket read waits for the others: the
// figure is an upper bound, the same in every configuration).
// Prints one JSON line: subscribers, publications, deliveries, missing,
// p50/p99/max in microseconds.
#include <arpa/inet.h>
#include <bench_args.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

struct Address {
  std::string host;
  int port = 0;
};

Address parse_address(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) throw std::invalid_argument("not HOST:PORT: " + text);
  return {text.substr(0, colon), std::stoi(text.substr(colon + 1))};
}

int connect_to(const Address& a) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(a.port));
  if (inet_pton(AF_INET, a.host.c_str(), &sa.sin_addr) != 1)
    throw std::invalid_argument("not an IPv4 address: " + a.host);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
    throw std::runtime_error(std::string("connect: ") + std::strerror(errno));
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

void send_all(int fd, const std::string& bytes) {
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error(std::string("send: ") + std::strerror(errno));
    off += static_cast<std::size_t>(n);
  }
}

// A client text frame, masked with key 0 (the payload unchanged).
std::string text_frame(const std::string& payload) {
  std::string f;
  f += static_cast<char>(0x81);
  if (payload.size() < 126) {
    f += static_cast<char>(0x80 | payload.size());
  } else {
    f += static_cast<char>(0x80 | 126);
    f += static_cast<char>(payload.size() >> 8);
    f += static_cast<char>(payload.size() & 0xff);
  }
  f.append(4, '\0');
  return f + payload;
}

const char* const kHandshake =
    "GET /ws HTTP/1.1\r\nHost: bench\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

// One connection's read side: the handshake answer, then frames.
struct Conn {
  int fd = -1;
  bool upgraded = false;
  std::string buf;

  // Appends complete text messages to `out`; false if the peer closed.
  bool read(std::vector<std::string>& out) {
    char tmp[65536];
    for (;;) {
      const ssize_t n = ::recv(fd, tmp, sizeof tmp, MSG_DONTWAIT);
      if (n == 0) return false;
      if (n < 0) break;
      buf.append(tmp, static_cast<std::size_t>(n));
      if (static_cast<std::size_t>(n) < sizeof tmp) break;
    }
    if (!upgraded) {
      const auto end = buf.find("\r\n\r\n");
      if (end == std::string::npos) return true;
      if (buf.compare(0, 12, "HTTP/1.1 101") != 0) throw std::runtime_error("no 101: " + buf);
      buf.erase(0, end + 4);
      upgraded = true;
    }
    std::size_t at = 0;
    for (;;) {
      if (buf.size() - at < 2) break;
      const auto b1 = static_cast<unsigned char>(buf[at + 1]) & 0x7f;
      std::size_t head = 2, len = b1;
      if (b1 == 126) {
        if (buf.size() - at < 4) break;
        len = (static_cast<unsigned char>(buf[at + 2]) << 8) |
              static_cast<unsigned char>(buf[at + 3]);
        head = 4;
      } else if (b1 == 127) {
        if (buf.size() - at < 10) break;
        len = 0;
        for (int i = 0; i < 8; ++i) len = (len << 8) | static_cast<unsigned char>(buf[at + 2 + i]);
        head = 10;
      }
      if (buf.size() - at < head + len) break;
      if ((static_cast<unsigned char>(buf[at]) & 0x0f) == 0x1)
        out.emplace_back(buf, at + head, len);
      at += head + len;
    }
    buf.erase(0, at);
    return true;
  }
};

std::int64_t field(const std::string& msg, const char* key) {
  const auto at = msg.find(key);
  if (at == std::string::npos) return -1;
  return std::strtoll(msg.c_str() + at + std::strlen(key), nullptr, 10);
}

// Opens `n` subscribers on `a`, subscribes them to `channel`, then reads
// until `expected` publications each arrived or `stop`.
struct Group {
  Address address;
  std::size_t n = 0;
  std::vector<Conn> conns;
  int ep = -1;
  std::atomic<std::size_t> subscribed{0};
  std::atomic<std::size_t> delivered{0};
  std::vector<std::int64_t> latencies_ns;
  std::uint64_t publications = 0;

  void open(const std::string& channel) {
    ep = epoll_create1(0);
    conns.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      conns[i].fd = connect_to(address);
      send_all(conns[i].fd, kHandshake);
      send_all(conns[i].fd,
               text_frame("{\"id\":1,\"op\":\"subscribe\",\"channel\":\"" + channel + "\"}"));
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = i;
      epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
    }
  }

  void run(const std::atomic<bool>& stop) {
    std::vector<epoll_event> events(1024);
    std::vector<std::string> msgs;
    while (!stop.load()) {
      const int k = epoll_wait(ep, events.data(), static_cast<int>(events.size()), 50);
      for (int i = 0; i < k; ++i) {
        Conn& c = conns[events[static_cast<std::size_t>(i)].data.u64];
        msgs.clear();
        if (!c.read(msgs)) throw std::runtime_error("a subscriber was closed by the server");
        const std::int64_t now = now_ns();
        for (const auto& m : msgs) {
          if (m.find("\"id\":1,\"ok\":true") != std::string::npos) {
            subscribed.fetch_add(1);
          } else if (const auto t = field(m, "\"t\":"); t > 0) {
            latencies_ns.push_back(now - t);
            ++publications;
            delivered.fetch_add(1, std::memory_order_relaxed);
          }
        }
      }
    }
  }
};

double percentile(std::vector<std::int64_t>& v, double q) {
  if (v.empty()) return 0;
  const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return static_cast<double>(v[i]) / 1000.0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "heartwheel-fanout-bench: publish-to-delivery latency of heartwheel-chat's fan-out over "
      "one or several nodes (prints one JSON line)"};
  std::vector<std::string> addresses;
  std::string subscribers_text = "5000", channel = "bench", interval = "500";
  std::size_t publications = 50;
  app.add_option("--connect", addresses,
                 "HOST:PORT of a heartwheel-chat node; repeat for several nodes (the first one "
                 "gets the publisher)")
      ->required();
  app.add_option("--subscribers", subscribers_text, "WebSocket subscribers per node (e.g. 5k)")
      ->capture_default_str();
  app.add_option("--publications", publications, "messages published")->capture_default_str();
  app.add_option("--interval-ms", interval, "between publications")->capture_default_str();
  app.add_option("--channel", channel, "the channel")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::vector<Group> groups(addresses.size());
  int interval_ms = 0;
  try {
    const std::size_t n = heartwheel::bench::parse_count(subscribers_text);
    interval_ms = std::stoi(interval);
    for (std::size_t i = 0; i < addresses.size(); ++i) {
      groups[i].address = parse_address(addresses[i]);
      groups[i].n = n;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heartwheel-fanout-bench: error: %s\n", e.what());
    return 2;
  }
  try {
    std::atomic<bool> stop{false};
    for (auto& g : groups) g.open(channel);
    std::vector<std::thread> readers;
    std::vector<std::exception_ptr> failures(groups.size());
    for (std::size_t i = 0; i < groups.size(); ++i)
      readers.emplace_back([&, i] {
        try {
          groups[i].run(stop);
        } catch (...) {
          failures[i] = std::current_exception();
          stop = true;
        }
      });
    std::size_t want = 0;
    for (auto& g : groups) want += g.n;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    auto subscribed = [&] {
      std::size_t s = 0;
      for (auto& g : groups) s += g.subscribed.load();
      return s;
    };
    while (subscribed() < want && !stop) {
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("subscribers did not all subscribe in 120 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // quiet before measuring
    Conn pub;
    pub.fd = connect_to(groups[0].address);
    send_all(pub.fd, kHandshake);
    for (std::size_t i = 0; i < publications && !stop; ++i) {
      send_all(pub.fd, text_frame("{\"id\":2,\"op\":\"publish\",\"channel\":\"" + channel +
                                  "\",\"data\":{\"t\":" + std::to_string(now_ns()) + "}}"));
      std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
    }
    // The last ones arrive (or 15 s pass: the rest count as missing).
    const auto drain_until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    auto delivered = [&] {
      std::size_t d = 0;
      for (auto& g : groups) d += g.delivered.load();
      return d;
    };
    while (delivered() < want * publications && !stop &&
           std::chrono::steady_clock::now() < drain_until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop = true;
    for (auto& t : readers) t.join();
    for (auto& f : failures)
      if (f) std::rethrow_exception(f);
    std::vector<std::int64_t> all;
    for (auto& g : groups) all.insert(all.end(), g.latencies_ns.begin(), g.latencies_ns.end());
    const std::size_t expected = want * publications;
    std::printf(
        "{\"addresses\":%zu,\"subscribers\":%zu,\"publications\":%zu,\"deliveries\":%zu,"
        "\"missing\":%zu,\"p50_us\":%.0f,\"p99_us\":%.0f,\"max_us\":%.0f}\n",
        groups.size(), want, publications, all.size(),
        expected > all.size() ? expected - all.size() : 0, percentile(all, 0.5),
        percentile(all, 0.99), percentile(all, 1.0));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heartwheel-fanout-bench: error: %s\n", e.what());
    return 1;
  }
}
