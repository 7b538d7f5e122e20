// Private: http::Client's record of one request and its state of one
// connection (heartwheel/http/client.h).
#pragma once

#include <heartwheel/http/client.h>
#include <heartwheel/http/response_parser.h>
#include <heartwheel/timer/timer_entry.h>

#include <string>

namespace heartwheel::http {

// One request, from request() to its callback. Its entry is the deadline
// while it waits for a connection (on a connection, the connection's
// request slot is).
struct Client::Call final : TimerEntry {
  explicit Call(Client& c) : TimerEntry(&Client::on_call_timer), owner(&c) {}
  Client* owner;
  ClientRequest request;
  ResponseCallback done;
  TimePoint deadline = kNever;
  Call* prev = nullptr;  // the wait list
  Call* next = nullptr;
  net::PooledConnection* lease = nullptr;  // while on a connection
  unsigned attempts = 0;
  bool idempotent = false;
  bool head_request = false;
};

// One connection's state (its user data), from on_open to on_close.
struct Client::Session {
  Session(net::Connection& c, const ClientOptions& o)
      : conn(&c), parser(o.max_head_bytes, o.max_body_bytes) {}
  net::Connection* conn;
  ResponseParser parser;
  Call* call = nullptr;        // the request on it, if any
  std::uint64_t requests = 0;  // requests it carried
  Session* prev = nullptr;     // the client's list (freed with it)
  Session* next = nullptr;
};

}  // namespace heartwheel::http
