// heartwheel/http/session_options.h - timeouts and limits of an HTTP session.
//
// One SessionOptions is shared (by const reference) by every session of a
// server; it must outlive them. Every timeout is a slot of the connection's
// deadline set (heartwheel/net/deadline.h), behind the connection's ONE wheel
// entry; a zero duration turns that timeout off.
//
//   timeout    | slot              | runs from ...                 | until ...          | on expiry
//   -----------+-------------------+-------------------------------+--------------------+-----------------
//   header     | header_timeout    | first byte of a request       | end of its headers | 408,
//   close
//              |                   | (more bytes do NOT push it    |                    |
//              |                   | back)                         |                    |
//   body       | body_timeout      | headers complete / last body  | next body read     | 408,
//   close
//              |                   | read                          |                    |
//   request    | request_timeout   | first byte of the OLDEST      | its response is    | 503 +
//   close if the
//              | (begin_request)   | request in flight             | complete           | handler
//              has not |                   |                               |                    |
//              answered, 408 + |                   |                               | | close if the
//              client |                   |                               |                    | is
//              still sending
//   keep-alive | keepalive_timeout | end of the last response      | first byte of the  | quiet
//   close
//              |                   | (nothing in flight)           | next request       |
//   first byte | keepalive_timeout | connection start              | first byte         | quiet
//   close, no 408
//              |                   | (header_timeout long, or keepalive_timeout when header_timeout
//              is 0)
//   send       | write_stall (the  | bytes queued for the peer     | write progress     | close
//   (write_stall)
//              | connection's)     |                               |                    |
//
// "First byte of a request" is when the session starts parsing it: for a
// pipelined request held back by max_pipelined or by backpressure, when
// reading resumes. The send timeout is the connection's write-stall rule
// (net::WritePolicy::stall_timeout), because only the connection sees write
// progress; http::NetHandler sets it per connection when it differs from the
// server's (see net_handler.h).
//
// Limits:
//   header bytes   431 (414 when the request-target alone exceeds it); counts
//                  the target, header names and values plus 2 per line,
//                  however the bytes are split into reads
//   body bytes     413, before reading the body when Content-Length announces it
//   requests per   the last allowed response carries Connection: close
//   connection
//   pipelined      parsed requests waiting for their answer: reading pauses,
//                  no error
//   buffered       bytes of answers the session holds behind an earlier,
//                  unfinished answer (pipelining): a respond()/write() that
//                  would pass it is refused (false, nothing buffered, counted;
//                  see responder.h). What the connection itself queues is
//                  bounded by net::WritePolicy (watermarks, max_queued_bytes).
#pragma once

#include <heartwheel/common/time.h>

#include <chrono>
#include <cstddef>
#include <string>

namespace heartwheel::http {

struct SessionOptions {
  Duration header_timeout = std::chrono::seconds(10);
  Duration body_timeout = std::chrono::seconds(10);
  Duration request_timeout = std::chrono::seconds(30);
  Duration keepalive_timeout = std::chrono::seconds(5);
  Duration send_timeout = std::chrono::seconds(30);

  std::size_t max_header_bytes = 16 * 1024;     // request line + header lines
  std::size_t max_body_bytes = 1024 * 1024;     // after de-chunking
  std::size_t max_requests_per_connection = 0;  // 0: unlimited
  std::size_t max_pipelined = 32;  // parsed requests awaiting a response before reading pauses
  std::size_t max_buffered_bytes = std::size_t{4} << 20;  // answers held behind the head
  // The next request starts only while the connection queues at most this
  // many bytes the kernel has not taken (0: only when nothing is queued).
  // A client that pipelines and reads slowly (slowhttptest's slow read) then
  // holds at most one answer in our memory, as with nginx, which answers one
  // request at a time; a client that reads keeps the kernel's socket buffer
  // between us, so pipelining costs it nothing.
  std::size_t pipeline_queue_limit = 0;
  // A client that sends many requests at once is answered a few per loop
  // turn: after pipeline_burst requests from one read, or once answering
  // them took pipeline_slice (0: no time bound), the session lets the loop's
  // other connections have their turn (Transport::yield_turn; on a
  // net::Server, Connection::call_next_turn) and goes on in a later one. So
  // 15,000 such clients arriving together cannot hold one normal request for
  // long, and a deep pipeline of small answers pays one loop turn per 32 of
  // them. Transports without turns go on at once.
  std::size_t pipeline_burst = 32;
  Duration pipeline_slice = std::chrono::microseconds(50);

  std::string server_name = "heartwheel";  // Server header; empty: none

  // Throws std::invalid_argument naming the field when a duration is negative
  // or a size limit is zero.
  void validate() const;
};

}  // namespace heartwheel::http
