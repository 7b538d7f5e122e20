// http::Client's side of its connections (heartwheel/http/client.h): the
// pool passes each connection's events here; responses are parsed, handed
// over, and the connection kept for the next request or closed; failures
// retried or reported.
#include <heartwheel/common/error.h>
#include <heartwheel/http/client.h>
#include <heartwheel/http/deadlines.h>
#include <heartwheel/net/connection.h>

#include "client_call.h"

namespace heartwheel::http {

Client::Session* Client::session_of(const net::Connection& conn) noexcept {
  return static_cast<Session*>(conn.user_data());
}

void Client::on_open(net::Connection& conn) {
  auto* s = new Session(conn, options_);
  s->next = sessions_;
  if (sessions_) sessions_->prev = s;
  sessions_ = s;
  conn.set_user_data(s);
  last_connect_error_.clear();
  if (options_.idle_timeout.count() > 0)
    conn.set_timeout(deadline::keepalive_timeout, options_.idle_timeout);
  // The pool calls on_available once it counts the connection: dispatch().
}

void Client::on_data(net::Connection& conn, std::string_view data) {
  Session* s = session_of(conn);
  if (!s) return;
  if (!s->call) {  // bytes nobody asked for (a 408 before the server closes, garbage)
    conn.close(net::CloseReason::protocol_error, make_error_code(errc::protocol_error));
    return;
  }
  std::string_view in = data;
  switch (s->parser.feed(in)) {
    case ResponseParser::Status::need_more:
      return;
    case ResponseParser::Status::complete:
      response_done(*s, in.size());
      return;
    case ResponseParser::Status::upgraded:  // never asked for
      ++stats_.protocol_errors;
      conn.close(net::CloseReason::protocol_error);
      finish_on(*s, make_error_code(errc::protocol_error), false);
      return;
    case ResponseParser::Status::failed: {
      const std::error_code ec = s->parser.error();
      ++(ec == errc::too_large ? stats_.too_large : stats_.protocol_errors);
      conn.close(net::CloseReason::protocol_error);
      finish_on(*s, ec, false);
      return;
    }
  }
}

void Client::response_done(Session& s, std::size_t extra_bytes) {
  Call* c = s.call;
  net::Connection& conn = *s.conn;
  net::PooledConnection* lease = c->lease;
  s.call = nullptr;
  c->lease = nullptr;
  conn.end_request();
  ClientResponse r;
  r.status = s.parser.head().status;
  r.headers = std::move(s.parser.head().headers);
  r.body = std::move(s.parser.body());
  r.server = lease->address();
  r.attempts = c->attempts;
  stats_.bytes_received += r.body.size();
  ++stats_.responses;
  // Bytes after the response: HTTP/1.1 without pipelining has none, so the
  // connection is out of step: never reuse it.
  if (!s.parser.keep_alive() || extra_bytes > 0 || stopped_) {
    conn.close_after_flush(net::CloseReason::protocol_close);
  } else if (options_.idle_timeout.count() > 0) {
    conn.set_timeout(deadline::keepalive_timeout, options_.idle_timeout);
  }
  // A 5xx is a response, but for the server's health a failure.
  pool_.release(*lease, r.status >= 500 ? net::CallOutcome::failed : net::CallOutcome::ok);
  dispatch();  // waiting requests first: the connection is free
  complete(c, {}, &r);
}

void Client::finish_on(Session& s, std::error_code error, bool retryable) {
  Call* c = s.call;
  if (!c) return;
  net::PooledConnection* lease = c->lease;
  s.call = nullptr;
  c->lease = nullptr;
  if (!s.conn->closing()) s.conn->end_request();
  pool_.release(*lease,
                error == errc::timed_out ? net::CallOutcome::timed_out : net::CallOutcome::failed);
  if (retryable && !stopped_ && c->idempotent && c->attempts <= options_.max_retries &&
      wheel_.now() < c->deadline) {
    ++stats_.retries;
    wait(c, true);
    dispatch();
    return;
  }
  if (error == errc::timed_out) {
    ++stats_.timed_out;
  } else if (error != errc::too_large && error != errc::protocol_error) {
    ++stats_.connection_errors;
  }
  complete(c, error, nullptr);
}

net::DeadlineAction Client::on_deadline(net::Connection& conn, net::DeadlineEvent event) {
  if (event.kind == net::Deadline::request_timeout) {
    // The deadline passed on the connection: the answer may still come, so
    // the connection cannot carry another request.
    if (Session* s = session_of(conn)) finish_on(*s, make_error_code(errc::timed_out), false);
  }
  return net::DeadlineAction::close;  // keepalive_timeout: idle too long, closed (and reopened)
}

void Client::on_eof(net::Connection& conn) {
  // Closing first: a retry or a waiting request must not be given this
  // connection again.
  conn.close_after_flush(net::CloseReason::peer_closed);
  Session* s = session_of(conn);
  if (s && s->call) {
    // A body delimited by the close ends here; anything else was cut short.
    if (s->parser.end_of_input() == ResponseParser::Status::complete) {
      response_done(*s, 0);
    } else {
      finish_on(*s, make_error_code(errc::closed), true);
    }
  }
}

void Client::on_close(net::Connection& conn, net::CloseReason, std::error_code error) {
  Session* s = session_of(conn);
  if (!s) return;
  if (s->call) {
    std::error_code ec = make_error_code(errc::closed);
    if (stopped_) {
      ec = make_error_code(errc::shutting_down);
    } else if (error) {
      ec = error;  // ECONNRESET (reason peer_closed), EPIPE, ...
    }
    finish_on(*s, ec, !stopped_);
  }
  (s->prev ? s->prev->next : sessions_) = s->next;
  if (s->next) s->next->prev = s->prev;
  conn.set_user_data(nullptr);
  delete s;
}

}  // namespace heartwheel::http
