// heartwheel/http/session_options.h - timeouts and limits of an HTTP session.
//
// One SessionOptions is shared (by const reference) by every session of a
// server; it must outlive them. Every timeout is an entry in the loop's wheel,
// armed inside the session; a zero duration turns that timeout off.
//
//   timeout    | runs from ...                       | until ...               | on expiry
//   -----------+-------------------------------------+-------------------------+-------------------------
//   header     | first byte of a request             | end of its headers      | 408, close
//              | (more bytes do NOT push it back)    |                         |
//   body       | headers complete / last body read   | next body read          | 408, close
//   request    | first byte of a request             | response complete       | 503 + close if the handler
//              |                                     |                         | has not answered, 408 +
//              |                                     |                         | close if the client is
//              |                                     |                         | still sending
//   keep-alive | end of the last response (nothing   | first byte of the next  | quiet close
//              | in flight)                          | request                 |
//   first byte | connection start                    | first byte (header_timeout, or keepalive_timeout
//              |                                     | when header_timeout is 0): quiet close, no 408
//   send       | bytes queued to the transport        | write progress          | close (abort)
//
// "First byte of a request" is when the session starts parsing it: for a
// pipelined request held back by max_pipelined, when reading resumes.
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
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>

#include <heartwheel/time.h>

namespace heartwheel::http {

struct SessionOptions {
  Duration header_timeout = std::chrono::seconds(10);
  Duration body_timeout = std::chrono::seconds(10);
  Duration request_timeout = std::chrono::seconds(30);
  Duration keepalive_timeout = std::chrono::seconds(5);
  Duration send_timeout = std::chrono::seconds(30);

  std::size_t max_header_bytes = 16 * 1024;   // request line + header lines
  std::size_t max_body_bytes = 1024 * 1024;   // after de-chunking
  std::size_t max_requests_per_connection = 0;  // 0: unlimited
  std::size_t max_pipelined = 32;  // parsed requests awaiting a response before reading pauses

  std::string server_name = "heartwheel";  // Server header; empty: none

  // Optional shutdown flag for servers whose sessions live on other threads:
  // once it reads true, each session behaves as if Session::drain() had been
  // called (checked with a relaxed load before each response head and each
  // new request; no callback, so an idle session is closed by its owner).
  const std::atomic<bool>* drain_signal = nullptr;

  // Throws std::invalid_argument naming the field when a duration is negative
  // or a size limit is zero.
  void validate() const;
};

}  // namespace heartwheel::http
