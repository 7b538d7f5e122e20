// A session wired to a recording transport and a manual clock, plus a small
// independent response splitter (deliberately not llhttp, so the tests do not
// check the library with itself).
#pragma once

#include <heartwheel/http/session.h>
#include <heartwheel/virtual_clock.h>

#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace http_test {

using namespace heartwheel;
using namespace heartwheel::http;
using namespace std::chrono_literals;

struct RecordingTransport final : Transport {
  void send(std::string bytes) override {
    out += bytes;
    unacked += bytes.size();
  }
  void close(CloseMode mode) override {
    ++closes;
    last_mode = mode;
  }
  void set_reading(bool on) override { reading = on; }
  void set_busy(bool on) override { busy = on; }

  std::string out;
  std::size_t unacked = 0;
  int closes = 0;
  CloseMode last_mode = CloseMode::kAfterFlush;
  bool reading = true;
  bool busy = false;
};

struct ParsedResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  bool has(const std::string& name) const { return headers.count(name) != 0; }
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// Splits `bytes` into responses. A response without Content-Length or chunked
// coding takes the rest of the stream (close-delimited). Fails the test on
// anything malformed.
std::vector<ParsedResponse> split_responses(const std::string& bytes, bool head_only = false);

struct Harness {
  Harness();
  ~Harness();

  void start();
  // Feeds bytes, then lets the transport "write" everything (unless stalled).
  void feed(std::string_view bytes);
  // Advances virtual time (firing due entries), then acks writes.
  void run_for(Duration d);
  void ack();
  std::vector<ParsedResponse> responses() const { return split_responses(transport.out); }
  bool closed() const { return transport.closes > 0; }

  ManualTimerService timers{1ms};
  SessionOptions options;
  SessionStats stats;
  RecordingTransport transport;
  Handler handler;
  std::unique_ptr<Session> session;
  std::vector<Responder> held;     // answers the tests give later (/async)
  std::vector<std::string> seen;   // targets in the order the handler saw them
  bool stall_writes = false;       // true: the transport never reports progress
};

}  // namespace http_test
