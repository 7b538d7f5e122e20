// heartwheel/net/byte_stage.h - a stage between a connection's socket and its
// handler that transforms every byte both ways (TLS is the one the library
// ships: heartwheel/tls/net_transport.h). net names no such protocol: it only
// routes bytes through the stage.
//
// What it is
//   A server (ServerOptions::transport) or a connector
//   (ConnectorOptions::transport) given a ByteStageFactory makes one
//   ByteStage per connection, after the PROXY header and admission (the
//   header is never transformed), and hands every byte read from the socket
//   to ByteStage::on_bytes instead of the handler. Until the transport says
//   ready (ByteStageIo::ready, e.g. a TLS handshake done) the application's
//   handler has not been given the connection: no on_open, no on_close if
//   the stage fails (as for a PROXY header), and the stage's own deadlines
//   (ByteStage::on_deadline) and the idle ones (closed as usual) are the only
//   ones running. Once ready, on_open follows, then on_data with the bytes
//   the transport delivers; Connection::write() goes through
//   ByteStage::write, which writes what it produced with ByteStageIo::write,
//   the connection's plain write path (so the write queue, its watermarks and
//   max_queued_bytes count the TRANSFORMED bytes); close_after_flush() asks
//   the transport for its closing bytes (ByteStage::closing) first, and a
//   close() that is not a reset tries to send them without waiting.
//
// Cost: a connection without a transport pays one bit test on the read and
//   write paths; the transport lives behind the connection's rarely-used
//   block (the one the PROXY stage and policy overrides use).
//
// Threads: a factory may be shared by the loops of several servers
//   (make() is called on each connection's loop thread, concurrently); a
//   ByteStage is used on its connection's loop thread only.
// Re-entrancy: on_bytes may deliver to the handler (ByteStageIo::deliver),
//   which may write (ByteStage::write, nested in on_bytes) or close the
//   connection; after a deliver the transport checks conn.closing() before
//   going on.
#pragma once

#include <heartwheel/net/deadline.h>

#include <cstddef>
#include <memory>
#include <string_view>
#include <system_error>

namespace heartwheel::net {

class Connection;

class ByteStage {
 public:
  virtual ~ByteStage() = default;
  // The stage begins (the connection is open and admitted; `conn`'s handler
  // is net's stand-in). The transport may write (ByteStageIo::write) and
  // set its deadlines (Connection::set_timeout).
  virtual void start(Connection& conn) = 0;
  // Bytes read from the socket (split anywhere).
  virtual void on_bytes(Connection& conn, std::string_view bytes) = 0;
  // The application writes `parts` (only after ready): transform them and
  // ByteStageIo::write the result. Errors as Connection::write.
  virtual std::error_code write(Connection& conn, const std::string_view* parts,
                                std::size_t count) = 0;
  // The polite end: write (ByteStageIo::write) whatever ends the stream
  // (TLS: close_notify). Called once, by close_after_flush() and by close()
  // that is not a reset; `queue` false (close()): nothing may be queued, the
  // bytes go to the socket now or not at all (ByteStageIo::write_now).
  virtual void closing(Connection& conn, bool queue) = 0;
  // One of the stage's own deadlines passed before ready (the others close
  // the connection with their reason as usual).
  virtual void on_deadline(Connection& conn, DeadlineEvent event) = 0;
  // The peer's FIN came before ready.
  virtual void on_eof(Connection& conn) = 0;
};

class ByteStageFactory {
 public:
  virtual ~ByteStageFactory() = default;
  // A transport for `conn`, on its loop thread; nullptr when out of memory
  // (the connection is closed, error ENOMEM).
  virtual std::unique_ptr<ByteStage> make(Connection& conn) noexcept = 0;
};

// What a ByteStage does to its connection (net's side of the stage).
// Threads: the connection's loop thread.
class ByteStageIo {
 public:
  // Writes transformed bytes through the plain write path (queued if the
  // socket does not take them). Same errors as Connection::write.
  static std::error_code write(Connection& conn, std::string_view bytes);
  // Writes what the socket takes now, queues nothing (the connection is
  // closing). False if not all was taken.
  static bool write_now(Connection& conn, std::string_view bytes) noexcept;
  // The stage is done (handshake): the application's handler gets on_open,
  // then the connection runs as any other with the transport in its path.
  // Counts NetStats::handshakes_completed, and handshakes_resumed when
  // `resumed` (the handshake resumed an earlier session). False when the
  // connection closed meanwhile (admission, on_open).
  static bool ready(Connection& conn, bool resumed = false) noexcept;
  // Bytes for the application's handler (on_data). Only after ready().
  static void deliver(Connection& conn, std::string_view bytes) noexcept;
  // The stream ended (TLS: the peer's close_notify): on_eof, as for a FIN.
  static void end_of_stream(Connection& conn) noexcept;
};

}  // namespace heartwheel::net
