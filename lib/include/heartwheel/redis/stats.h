// heartwheel/redis/stats.h - the counters of a Redis link.
//
// One struct for both kinds of link (Client: the command fields;
// Subscriber: the subscription fields; the connection fields for both), so a
// node's figure is the merge of all its links, as net::LoopSnapshot merges
// loops. Client::stats() / Subscriber::stats() fill the gauges when asked;
// the counters only grow. Every command accepted ends in exactly one of
// replies_ok, replies_error, timed_out, failed_disconnected, failed_stopped
// (or is still in_flight / buffered): none is dropped without a count.
// Threads: plain integers, copied out on the link's loop thread.
#pragma once

#include <cstdint>
#include <string>

namespace heartwheel::redis {

struct LinkStats {
  // Gauges, now.
  std::uint64_t links = 1;      // links merged into these figures
  std::uint64_t connected = 0;  // links with an open connection
  std::uint64_t in_flight = 0;  // commands sent whose reply has not come (timed-out ones too)
  std::uint64_t buffered = 0;   // commands waiting for a connection
  std::uint64_t buffered_bytes = 0;
  std::uint64_t subscriptions = 0;         // channels + patterns a Subscriber wants
  std::uint64_t active_subscriptions = 0;  // of which Redis confirmed on this connection

  // The connection.
  std::uint64_t connects = 0;          // connections opened
  std::uint64_t reconnects = 0;        // of which after an earlier one (Redis came back)
  std::uint64_t disconnects = 0;       // connections closed (any reason)
  std::uint64_t connect_failures = 0;  // attempts that failed (refused, connect timeout)
  std::uint64_t pings_sent = 0;
  std::uint64_t pong_timeouts = 0;    // connections closed: Redis went silent (pong_timeout)
  std::uint64_t protocol_errors = 0;  // connections closed: bytes that are not RESP2 / too large
  std::uint64_t setup_errors = 0;     // connections closed: a setup command (AUTH ...) failed
  std::uint64_t writes = 0;           // batches written (one Connection::write each)
  std::uint64_t callback_exceptions = 0;  // application callbacks that threw (swallowed)

  // Commands (Client).
  std::uint64_t commands = 0;               // accepted by command()
  std::uint64_t sent = 0;                   // written to a connection (resends count again)
  std::uint64_t replies_ok = 0;             // answered with a non-error reply
  std::uint64_t replies_error = 0;          // answered with a Redis error (server_error)
  std::uint64_t timed_out = 0;              // deadline passed first (buffered or in flight)
  std::uint64_t failed_disconnected = 0;    // in flight when the connection dropped
  std::uint64_t failed_stopped = 0;         // pending when stop() was called
  std::uint64_t retried = 0;                // in flight at a drop, resent (CommandOptions::retry)
  std::uint64_t late_replies = 0;           // replies to commands that had timed out (discarded)
  std::uint64_t refused_not_connected = 0;  // command() refused: no connection, no buffer
  std::uint64_t refused_buffer_full = 0;    // command() refused: buffer full
  std::uint64_t refused_queue_full = 0;     // command() refused: write queue at its cap
  std::uint64_t buffered_total = 0;         // commands that waited for a connection
  std::uint64_t script_fallbacks = 0;       // NOSCRIPT answers resent as EVAL

  // Subscriptions (Subscriber).
  std::uint64_t subscribes = 0;  // channels and patterns asked for by the application
  std::uint64_t unsubscribes = 0;
  std::uint64_t resubscribes = 0;        // channels and patterns subscribed again after a reconnect
  std::uint64_t resubscribe_rounds = 0;  // reconnects after which Redis confirmed all of them
  std::uint64_t messages = 0;            // delivered to on_message
  std::uint64_t stray_messages = 0;      // for a channel no longer wanted (dropped)

  void merge(const LinkStats& other) noexcept;
};

// One JSON object; the keys are the field names above.
std::string to_json(const LinkStats& stats);

}  // namespace heartwheel::redis
