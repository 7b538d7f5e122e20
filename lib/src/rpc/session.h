// Private: rpc::NetHandler's state of one connection (see
// heartwheel/rpc/net_handler.h). It replaces the heartbeat bookkeeping that
// used to sit in every net::Connection: only RPC connections pay for it.
#pragma once

#include <heartwheel/net/connection.h>
#include <heartwheel/net/slot_heartbeat.h>
#include <heartwheel/rpc/call_table.h>
#include <heartwheel/rpc/frame.h>
#include <heartwheel/rpc/reply.h>
#include <heartwheel/common/time.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace heartwheel::rpc::detail {

// Derives from CallGroup (the calls made on this connection) so that a
// completion's group leads back to its connection without a lookup.
struct Session final : CallGroup {
  Session(NetHandler& h, net::Connection& c, std::size_t max_frame_length)
      : owner(&h), conn(&c), decoder(max_frame_length) {}

  // Answers owed plus calls in flight: what a drain or an EOF waits for.
  std::size_t in_flight() const noexcept { return owed_count + size(); }

  NetHandler* owner;
  net::Connection* conn;
  FrameDecoder decoder;
  std::string out;  // the batch: frames produced since the last write
  // Owed answers: the Replies of requests not answered yet (intrusive).
  Reply* owed = nullptr;
  std::uint32_t owed_count = 0;
  std::uint32_t ping_seq = 0;  // PINGs sent on this connection (also their ids)
  // Heartbeat (only while heartbeats are on): when the last byte was read,
  // the last batch started, the last PING went out; the last round trip.
  net::SlotHeartbeat heartbeat;
  Duration last_rtt{-1};
  // The handler's lists: every state, and those with a batch to write.
  Session* prev = nullptr;
  Session* next = nullptr;
  Session* prev_pending = nullptr;
  Session* next_pending = nullptr;
  bool pending = false;
  bool draining = false;    // no new requests or calls; close once idle
  bool eof = false;         // the peer half-closed: close once idle
  bool in_request = false;  // Connection::begin_request is in effect
  bool closed = false;      // being torn down: Replies only detach
};

}  // namespace heartwheel::rpc::detail
