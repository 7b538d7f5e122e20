// A session wired to a recording transport whose deadlines live in a
// net::DeadlineTimer on a manual clock, plus a small independent response
// splitter (deliberately not llhttp, so the tests do not check the library
// with itself).
#pragma once

#include <heartwheel/http/session.h>
#include <heartwheel/timer/virtual_clock.h>

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "http_memory_transport.h"

namespace http_test {

using namespace heartwheel;
using namespace heartwheel::http;
using namespace std::chrono_literals;
using net::CloseReason;
using net::RefreshMode;

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
  explicit Harness(RefreshMode refresh = RefreshMode::eager);
  ~Harness();

  void start();
  void feed(std::string_view bytes) { session->on_data(bytes); }
  // Advances virtual time, firing due deadlines on the way.
  void run_for(Duration d) { timers.run_for(d); }
  std::vector<ParsedResponse> responses() const { return split_responses(transport.out); }
  bool closed() const { return transport.closes > 0; }
  // True while the session has any deadline set (a slot or the request).
  bool armed() const { return transport.next_deadline() != kNever; }

  ManualTimerService timers{1ms};
  SessionOptions options;
  SessionStats stats;
  MemoryTransport transport;
  Handler handler;
  std::unique_ptr<Session> session;
  std::vector<Responder> held;    // answers the tests give later (/async)
  std::vector<std::string> seen;  // targets in the order the handler saw them
};

}  // namespace http_test
