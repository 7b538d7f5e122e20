// One request and its response, shared by the session's queue and the
// handler's Responder. Private to lib/src/http.
#pragma once

#include <heartwheel/http/message.h>
#include <heartwheel/http/session.h>
#include <heartwheel/net/close_reason.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace heartwheel::http::detail {

// A request that asked to switch protocols (Upgrade + Connection: upgrade):
// the bytes that followed it, and who takes the connection after the 101.
struct UpgradeState {
  std::string rest;     // the new protocol's first bytes (read with the request or after it)
  UpgradeHandler next;  // set by Responder::upgrade
};

// A deadline of the handler's own on the connection (Responder::set_deadline).
struct HandlerDeadline {
  net::Deadline slot;
  std::function<net::DeadlineAction()> on_passed;
};

struct Exchange {
  Session* session = nullptr;  // nullptr once finished, timed out or the session closed
  std::uint64_t seq = 0;       // 1, 2, ... per session; never reused (unlike addresses)
  Request request;

  // request side
  bool received = false;         // message complete
  bool expect_continue = false;  // 100 Continue owed before the body
  std::size_t header_bytes = 0;
  bool last_was_value = false;  // header field/value assembly across reads

  // response side
  bool answered = false;  // respond() or begin() was called (or the session answered)
  bool answered_by_handler = false;
  bool streaming = false;  // begin() used: body arrives in pieces
  bool chunked = false;    // streaming framed as chunked (HTTP/1.1 peer)
  bool finished = false;   // the whole response is in `out`/`head` (end() or respond())
  bool head_written = false;
  bool close_after = false;  // the connection ends after this response
  bool head_only = false;    // HEAD request: no body bytes
  net::CloseReason close_reason = net::CloseReason::protocol_close;  // ... and why
  int status = 0;
  Headers headers;
  std::string out;                        // body bytes (framed) not yet handed to the transport
  std::shared_ptr<const std::string> shared_out;  // or the shared body of respond()
  std::size_t content_length = 0;         // for respond(): the body size
  std::function<void()> on_abandon;       // Responder::on_abandon
  std::function<void()> on_writable;      // Responder::on_writable
  std::string error;                      // why the handler's last call was refused
  std::unique_ptr<UpgradeState> upgrade;  // only for a request that asked to switch protocols
  std::unique_ptr<HandlerDeadline> handler_deadline;  // only while the handler has one set

  // Answered with Responder::upgrade: the connection switches protocols after it.
  bool switching() const noexcept { return upgrade && upgrade->next; }

  // Back to a new exchange's state, keeping its strings' and header
  // vectors' buffers (up to a bound, exchange.cpp) for the next request of
  // this thread.
  void reset() noexcept;

  // Runs on_abandon once if the handler never answered. Call after detaching.
  void abandon() {
    on_writable = nullptr;
    if (answered_by_handler || !on_abandon) return;
    auto cb = std::move(on_abandon);
    on_abandon = nullptr;
    cb();
  }
};

// Exchanges are recycled per thread (exchange.cpp): a keep-alive request
// then costs no allocation for its exchange and its request headers. Loop
// thread only, as sessions and Responders are.
std::shared_ptr<Exchange> new_exchange();
// Takes `ex` back for reuse when nothing else holds it (use_count 1) and the
// thread's pool has room; otherwise just drops this reference.
void recycle(std::shared_ptr<Exchange>&& ex) noexcept;

}  // namespace heartwheel::http::detail
