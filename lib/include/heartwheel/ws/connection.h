// heartwheel/ws/connection.h - one WebSocket connection served by a
// ws::NetHandler: a ws::Session running on a net::Connection.
//
// What it is
//   The application's handle on one WebSocket peer: send messages, deliver
//   shared frames (a publication encoded once for every subscriber), start
//   the close handshake, keep a user-data pointer. The protocol (framing,
//   UTF-8, limits, pongs, the close handshake) is the session's
//   (heartwheel/ws/session.h); the timing (heartbeat pings, pong timeout,
//   close-handshake timeout) and the slow-consumer policy are the
//   NetHandler's (heartwheel/ws/net_handler.h), on the connection's deadline
//   slots.
//
// Ownership and lifetime
//   Made by NetHandler when a connection switches to WebSocket, destroyed by
//   it right after Application::on_close returns. Valid until then; the
//   application never deletes it.
//
// Cost
//   120 bytes (x86-64), 80 of them the session, in one allocation with the
//   application's object when it asks for room (user_storage()), besides
//   the net::Connection; compression adds nothing to it (the session's
//   padding holds its byte, this one's flags). deliver() copies nothing: the net layer
//   queues a reference to the frame when the socket does not take it at once.
//
// Threads: the connection's loop thread only.
// Re-entrancy: every method may be called from any Application callback, for
//   this connection or another one of the same loop (close() included).
#pragma once

#include <heartwheel/ws/frame.h>
#include <heartwheel/ws/session.h>

#include <cstdint>
#include <string_view>
#include <system_error>

namespace heartwheel::net {
class Connection;
}

namespace heartwheel::ws {

class NetHandler;

// What deliver() did with a frame. Mirrors pubsub::DeliveryOutcome.
enum class Delivery : std::uint8_t {
  sent,     // written, or queued by reference
  skipped,  // slow consumer, policy skip: not sent to this peer (counted)
  closed,   // slow consumer, policy close: the connection closed (reason slow_consumer, counted)
  dropped,  // the connection is closing or closed: not sent (counted)
};

class Connection final : private SessionOwner {
 public:
  // The alignment of user_storage().
  static constexpr std::size_t kUserStorageAlign = alignof(void*);

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // The TCP connection underneath (addresses, queued_bytes, the deadline
  // slots the NetHandler does not use).
  net::Connection& net() const noexcept { return *conn_; }
  // Starts loading this connection's objects (its own and the net
  // connection's) into the cache: for code about to deliver to many
  // connections in turn (pubsub::Subscriber::prefetch). Reads one pointer.
  void prefetch() const noexcept;
  std::uint64_t id() const noexcept;

  // One unfragmented message. Errors: errc::closed once close was sent or
  // received (or the TCP connection is closing). Text must be valid UTF-8
  // (not checked). Under the same budget as deliver(): when this peer
  // already has bytes queued and the message would take its queue past
  // NetHandlerOptions::max_queued_bytes, the connection is closed at once
  // (reason slow_consumer, counted in slow_consumer_closes, whatever the
  // policy: a message cannot be skipped) and errc::limit_reached is
  // returned; so is it when the net layer's WritePolicy::max_queued_bytes
  // refuses the bytes. A peer with an empty queue always gets the message.
  std::error_code send_text(std::string_view payload);
  std::error_code send_binary(std::string_view payload);

  // A frame encoded once for many connections (encode_shared): queued by
  // reference, never copied. The slow-consumer rule: when this peer already
  // has bytes queued and the frame would take its queue past
  // NetHandlerOptions::max_queued_bytes, the policy decides: `close` closes
  // the connection at once (reason slow_consumer; queued bytes dropped and
  // counted) or `skip` leaves this frame out for this peer. A peer with an
  // empty queue always gets the frame, however large. Every outcome but
  // `sent` is counted in Stats. Inside a SendBatchScope (pubsub::Hub's
  // fan-out) the frame waits for the thread's io_uring batch
  // (net::ConnectionOptions::batch_shared_writes) and is `sent` already; an
  // error of that send closes the connection when the batch goes out.
  Delivery deliver(const SharedFrame& frame);

  // Starts the close handshake: sends close(code, reason) and arms the
  // close-handshake timeout (NetHandlerOptions::close_timeout); the TCP
  // connection closes when the peer answers, or when the timeout passes
  // (reason close_timeout). Errors as Session::close: errc::closed if close
  // was already sent, errc::invalid_argument for a code that may not be sent.
  std::error_code close(std::uint16_t code, std::string_view reason = {});

  Session::State state() const noexcept { return session_.state(); }
  // True while messages can still be sent: open, and the TCP connection is
  // not closing.
  bool is_open() const noexcept;

  // NetHandlerOptions::user_storage_bytes of raw memory in this connection's
  // own allocation, aligned to kUserStorageAlign (8: pointers, 64-bit
  // integers, doubles; not over-aligned types), for the application's
  // per-connection object: construct it there (placement new, e.g. in the
  // upgrade's on_open) and destroy it in Application::on_close; the memory
  // goes with the connection. nullptr when user_storage_bytes is 0. (An
  // application that only needs a pointer asks for sizeof(void*): there is
  // no pointer field of the connection's own for it, 8 bytes per connection.)
  void* user_storage() noexcept;
  const void* user_storage() const noexcept {
    return const_cast<Connection*>(this)->user_storage();
  }
  // The connection whose user_storage() is `storage` (no load: a fixed
  // offset). Precondition: `storage` is a user_storage() of a live connection.
  static Connection& from_user_storage(void* storage) noexcept;

 private:
  friend class NetHandler;
  Connection(NetHandler& owner, net::Connection& conn);
  ~Connection() = default;
  // One allocation for the connection and `storage` bytes after it; freed
  // by destroy().
  static Connection* make(NetHandler& owner, net::Connection& conn, std::size_t storage);
  static void destroy(Connection& c) noexcept;
  // The NetHandler is the net connection's handler (set before make()): no
  // field of its own.
  NetHandler& owner() const noexcept;

  // ws::Transport
  void send(std::string_view head, std::string_view payload) override;
  void send_shared(const SharedFrame& frame) override;
  bool backlogged() override;
  void close() override;
  DeflatePool* deflate_pool() noexcept override;
  bool yield_turn() override;
  // ws::Handler
  void on_message(Session& session, MessageType type, std::string& payload) override;
  void on_discarded(Session& session, MessageType type, std::size_t bytes) override;
  void on_ping(Session& session, std::string_view payload) override;
  void on_pong(Session& session, std::string_view payload) override;
  void on_protocol_error(Session& session, std::uint16_t code, std::string_view what) override;

  void close_slow_consumer();
  std::error_code send_message(MessageType type, std::string_view payload);
  // True when a frame of `bytes` may be queued under max_queued_bytes
  // (always with an empty queue).
  bool fits(std::size_t bytes) const noexcept;

  net::Connection* conn_;
  Connection* prev_ = nullptr;  // the NetHandler's list
  Connection* next_ = nullptr;
  // The session ends in tail padding (its small fields last);
  // [[no_unique_address]] lets the flags below sit in it: 160 bytes (a
  // flag before the session cost 8 more), and user_storage() follows at
  // once (docs/memory.md).
  [[no_unique_address]] Session session_;
  bool draining_ = false;  // closing because the server drains (net reason drain)
  // The net connection passed its high watermark (Application::on_writable
  // hears the way back); a drain that only sends a held-back pong does not
  // reach the application.
  bool unwritable_ = false;
  // The peer's EOF came while the session waited for its turn
  // (Session::waiting_turn): handled once the waiting bytes are.
  bool eof_pending_ = false;
};

}  // namespace heartwheel::ws
