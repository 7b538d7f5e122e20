// heartwheel::testing::Host, the public way to test a handler on a virtual
// clock. The first case is the example in lib/src/testing/README.md, verbatim.
#include <heartwheel/testing/host.h>

#include <catch2/catch.hpp>
#include <string>

using namespace std::chrono_literals;
using namespace heartwheel;

namespace {

// README example: an echo handler whose peers are closed after 5 s of silence.
struct Echo : net::Handler {
  void on_data(net::Connection& c, std::string_view d) override { c.write(d); }
};

}  // namespace

TEST_CASE("README: an echo handler closes a peer silent for its read-idle timeout",
          "[testing][readme]") {
  Echo echo;
  net::ConnectionOptions options;
  options.idle.read_idle = 5s;
  heartwheel::testing::Host host(options);
  auto& peer = host.open(echo);
  peer.send("hi");
  CHECK(peer.received() == "hi");
  host.run_for(4999ms);
  CHECK(peer.open());
  host.run_for(1ms);  // the read-idle deadline passes
  CHECK(peer.close_reason() == net::CloseReason::read_idle);
}

TEST_CASE("The testing host delivers EOF, counts like a server and never advances time by itself",
          "[testing]") {
  struct Recorder : net::Handler {
    void on_data(net::Connection&, std::string_view d) override { got += d; }
    void on_eof(net::Connection& c) override {
      eof = true;
      c.write("bye");
      c.close_after_flush(net::CloseReason::peer_closed);
    }
    std::string got;
    bool eof = false;
  } rec;
  net::ConnectionOptions options;
  options.idle.read_idle = 1s;
  heartwheel::testing::Host host(options);
  auto& a = host.open(rec);
  auto& b = host.open(rec);
  CHECK(host.stats().accepted == 2);
  CHECK(host.stats().current == 2);
  const std::string big(1 << 20, 'z');  // more than a socket buffer
  a.send(big);
  CHECK(rec.got == big);
  const auto t0 = host.now();
  host.poll();
  CHECK(host.now() == t0);
  a.shutdown_write();
  CHECK(rec.eof);
  CHECK(a.received() == "bye");
  CHECK(a.close_reason() == net::CloseReason::peer_closed);
  host.run_for(1s);
  CHECK(b.close_reason() == net::CloseReason::read_idle);
  CHECK(host.stats().current == 0);
  CHECK(host.stats().closed(net::CloseReason::read_idle) == 1);
}
