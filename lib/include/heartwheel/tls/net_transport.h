// heartwheel/tls/net_transport.h - TLS as the transport of net's connections:
// give a server (ServerOptions::transport) or a connector
// (ConnectorOptions::transport) a factory from here and every connection
// speaks TLS, with its handshake on the connection's deadline set.
//
// What it does (net/byte_stage.h has the stage's rules)
//   Each connection gets one tls::Session (session.h) made from the
//   Context's generation current at its first record (server) or at its
//   connect (client). The handshake is bounded by the deadline kind
//   `tls_handshake_timeout` (set when the stage starts, cleared when the
//   handshake is done); the application's handler gets on_open once the
//   handshake is done, then plaintext in on_data, and its writes are
//   encrypted. A polite close (close_after_flush, or close() when the
//   socket takes it at once) sends close_notify; the peer's close_notify is
//   on_eof. The write queue holds ciphertext, so WritePolicy's limits count
//   what the socket has to take, and close_after_flush's close_notify is
//   bounded like any flush (the write-stall rules; the protocol's own close
//   slot, e.g. WebSocket's close_timeout, when it set one).
//
// Failures close the connection with one reason per cause (the cause in
// stats JSON closed_by_reason and Prometheus reason="..."):
//
//   cause (failure.h) | close reason
//   ------------------+----------------------------------------------------
//   timeout           | tls_handshake_timeout (the deadline passed before the
//                     | handshake was done: a silent peer, half a ClientHello)
//   protocol_error    | tls_protocol_error (plain HTTP to a TLS port, garbage,
//                     | a bad record, a refused version)
//   no_shared_cipher  | tls_no_shared_cipher
//   certificate       | tls_certificate
//   other             | tls_failed
//
// A connection that fails its handshake never reaches the application (no
// on_open, no on_close); the alert OpenSSL produced is sent if the socket
// takes it at once.
//
// Cost per connection: a 40-byte transport (the Session, the timeout, a vtable
// pointer; a client's 16 more for its failure hook) in the connection's
// rarely-used block, plus OpenSSL's SSL object
// from the first complete record on (session.h); per loop thread, a 64 KiB
// plaintext buffer and the ciphertext strings of the last read and write.
//
// Threads: a factory may be shared by every worker loop (make() runs on each
// connection's loop); the Context is shared and reloadable (context.h).
// Lifetime: the factory keeps its Context alive; the transports keep
// nothing of the factory.
#pragma once

#include <heartwheel/common/time.h>
#include <heartwheel/net/byte_stage.h>
#include <heartwheel/net/names.h>
#include <heartwheel/tls/context.h>
#include <heartwheel/tls/failure.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace heartwheel::tls {

// Numbers taken (lib/src/net/README.md, "Numbers taken"): kinds 24-27,
// reasons 40-44 are tls's.
namespace close_reason {
inline constexpr net::CloseReason tls_handshake_timeout{40};
inline constexpr net::CloseReason tls_protocol_error{41};
inline constexpr net::CloseReason tls_no_shared_cipher{42};
inline constexpr net::CloseReason tls_certificate{43};
inline constexpr net::CloseReason tls_failed{44};
}  // namespace close_reason

namespace deadline {
inline constexpr net::Deadline tls_handshake_timeout{24};
}  // namespace deadline

namespace detail {
inline constexpr net::CloseReasonName kCloseReasonNames[] = {
    {close_reason::tls_handshake_timeout, "tls_handshake_timeout"},
    {close_reason::tls_protocol_error, "tls_protocol_error"},
    {close_reason::tls_no_shared_cipher, "tls_no_shared_cipher"},
    {close_reason::tls_certificate, "tls_certificate"},
    {close_reason::tls_failed, "tls_failed"},
};
inline constexpr net::DeadlineName kDeadlineNames[] = {
    {deadline::tls_handshake_timeout, "tls_handshake_timeout",
     close_reason::tls_handshake_timeout},
};
inline const net::NameRegistrar kNames{kCloseReasonNames, kDeadlineNames};
}  // namespace detail

// The close reason a failure of `cause` closes with (table above); `none`
// gives tls_failed.
net::CloseReason close_reason_for(FailureCause cause) noexcept;

// Why a client's handshake failed: the cause, and a line for a person
// (Session::message(): "certificate verify failed: self-signed certificate";
// for a timeout "no handshake within 2000 ms").
using HandshakeFailureHook = std::function<void(FailureCause cause, const std::string& message)>;

struct TransportOptions {
  // From the stage's start (the connection admitted, its PROXY header read)
  // to the handshake done. Must be positive.
  Duration handshake_timeout = std::chrono::seconds(10);
  // Client transports only (a server counts failures by close reason and
  // ignores it): called on the connection's loop when a handshake fails,
  // just before the connection closes with the cause's reason, so a program
  // can say why it cannot connect (a refused certificate) and decide whether
  // to go on. It must not close or destroy the connection or its connector
  // (defer that to a timer). Optional.
  HandshakeFailureHook on_failure = {};
};

// Every connection of a server speaks TLS with `context` (Role::server).
// Throws std::invalid_argument (wrong role, null context, timeout <= 0).
std::shared_ptr<net::ByteStageFactory> server_transport(std::shared_ptr<Context> context,
                                                        TransportOptions options = {});

// The Context of a factory made by server_transport (to reload it, e.g. on
// SIGHUP); nullptr for a null factory or any other one.
std::shared_ptr<Context> server_context(const net::ByteStageFactory* factory) noexcept;

// Every connection of a connector speaks TLS with `context` (Role::client),
// sending `server_name` (SNI, certificate name) and keeping its session
// under `resume_key` (Session::client).
// Throws std::invalid_argument (wrong role, null context, timeout <= 0).
std::shared_ptr<net::ByteStageFactory> client_transport(std::shared_ptr<const Context> context,
                                                        std::string server_name,
                                                        std::string resume_key = {},
                                                        TransportOptions options = {});

}  // namespace heartwheel::tls
