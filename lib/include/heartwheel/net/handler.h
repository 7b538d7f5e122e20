// heartwheel/net/handler.h - what an application implements to serve
// connections.
//
// A Server calls one Handler for all its connections (one server per loop, so
// one handler per worker thread: no locks needed). Per-connection state goes
// in Connection::set_user_data, or in a per-connection Handler installed with
// Connection::set_handler from on_open.
//
// Order of calls for one connection:
//   on_open, then any of on_data / on_deadline / on_writable / on_eof /
//   on_drain, then
//   exactly one on_close (also after a failed on_open). on_close runs after the
//   socket is closed, on a later loop iteration than Connection::close(); the
//   Connection is destroyed when on_close returns.
// Re-entrancy: callbacks may call any Connection method on the connection
//   they got, including close(); writing from on_data is the normal case.
// Exceptions: an exception thrown by a callback is caught at the loop
//   boundary and closes that one connection with CloseReason::error
//   (counted in handler_exceptions); an exception from on_close is swallowed
//   and counted.
// Threads: the connection's loop thread.
#pragma once

#include <string_view>
#include <system_error>

#include <heartwheel/net/close_reason.h>
#include <heartwheel/net/deadline.h>

namespace heartwheel::net {

class Connection;

class Handler {
 public:
  virtual ~Handler() = default;

  // The connection is open and registered; its idle timers are running.
  virtual void on_open(Connection& /*conn*/) {}

  // Bytes arrived. `data` points into the loop's shared read buffer: it is
  // valid only during this call; copy what you keep.
  virtual void on_data(Connection& conn, std::string_view data) = 0;

  // A deadline slot passed (idle, request timeout, max age, or a protocol
  // slot the handler set: header, body, keep-alive, ping, pong, close). Return
  // keep to take it over (send a ping, answer 408, ...); close (the default)
  // closes the connection with close_reason_for(event.kind).
  virtual DeadlineAction on_deadline(Connection& /*conn*/, DeadlineEvent /*event*/) {
    return DeadlineAction::close;
  }

  // Writability changed (see WritePolicy watermarks).
  virtual void on_writable(Connection& /*conn*/, bool /*writable*/) {}

  // The peer half-closed (FIN). Default: flush what is queued, then close
  // with peer_closed. Override to keep writing; call close_after_flush when done.
  virtual void on_eof(Connection& conn);

  // The server started draining (Server::drain). Default: close now after
  // flushing (reason drain) unless a request is in flight
  // (Connection::begin_request); such a connection closes when it ends its
  // request. Protocols override it to finish politely: HTTP answers the
  // request in flight with Connection: close, WebSocket sends a close frame.
  // The drain timeout still closes whatever is left.
  virtual void on_drain(Connection& conn);

  // The connection is closed. `error` is set for CloseReason::error.
  virtual void on_close(Connection& /*conn*/, CloseReason /*reason*/, std::error_code /*error*/) {}
};

}  // namespace heartwheel::net
