// heartwheel-echo-example: the echo server to copy. Every connection's
// timeouts live in its loop's timing wheel:
//   - read idle: a peer that sent nothing for READ_IDLE is closed;
//   - heartbeat: a peer we sent nothing to for READ_IDLE / 3 gets "ping\n",
//     so a quiet peer hears that we are alive; it proves that it is alive
//     by sending anything (a silent one is pinged until it is closed);
//   - drain: SIGTERM or Ctrl-C says "bye\n" to every peer and closes once
//     that is sent; a second signal closes everything at once (runtime::serve).
// Usage: heartwheel-echo-example [HOST:PORT [READ_IDLE]]
//   (default 127.0.0.1:7000 30s; port 0 picks one). See README.md.
#include <heartwheel/common/duration_parse.h>
#include <heartwheel/net/address.h>
#include <heartwheel/runtime/serve.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <string_view>

namespace net = heartwheel::net;
namespace runtime = heartwheel::runtime;
using namespace std::chrono_literals;

class Echo final : public net::Handler {
 public:
  void on_data(net::Connection& conn, std::string_view data) override { conn.write(data); }

  net::DeadlineAction on_deadline(net::Connection& conn, net::DeadlineEvent event) override {
    if (event.kind != net::Deadline::write_idle) return net::DeadlineAction::close;  // read idle
    conn.write("ping\n");  // we were quiet: say that we are alive
    return net::DeadlineAction::keep;
  }

  void on_drain(net::Connection& conn) override {
    conn.write("bye\n");
    net::Handler::on_drain(conn);  // closes once "bye" is flushed (reason drain)
  }

  void on_close(net::Connection& conn, net::CloseReason reason, std::error_code) override {
    std::fprintf(stderr, "connection %llu closed: %s\n",
                 static_cast<unsigned long long>(conn.id()), net::to_string(reason));
  }
};

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "--help") {
    std::puts("usage: heartwheel-echo-example [HOST:PORT [READ_IDLE]]  (127.0.0.1:7000 30s)\n"
              "Exit status: 0 after a drain, 1 cannot listen, 2 bad argument.");
    return 0;
  }
  runtime::WorkersOptions options;
  try {
    const net::HostPort listen = net::parse_host_port(argc > 1 ? argv[1] : "127.0.0.1:7000");
    options.server.host = listen.host;
    options.server.port = listen.port;
    auto& idle = options.server.connection.idle;
    idle.read_idle = heartwheel::parse_duration(argc > 2 ? argv[2] : "30s");
    idle.write_idle = idle.read_idle / 3;  // the heartbeat
  } catch (const std::exception& e) {  // usage error: exit 2, nothing started
    std::fprintf(stderr, "heartwheel-echo-example: error: %s\n", e.what());
    return 2;
  }
  try {
    // Prints "listening on HOST:PORT", returns after the drain.
    runtime::serve(options, [](unsigned) { return std::make_unique<Echo>(); },
                   {.drain_timeout = 5s});
    return 0;
  } catch (const std::exception& e) {  // cannot listen
    std::fprintf(stderr, "heartwheel-echo-example: error: %s\n", e.what());
    return 1;
  }
}
