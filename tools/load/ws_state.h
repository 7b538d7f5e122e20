// tools/load/ws_state.h - ws mode's state of one connection (see README.md,
// "ws mode"). Allocated at the connection's first open and kept across a
// --reconnect, so the offsets it saw survive the new connection; freed with
// the worker.
#pragma once

#include <heartwheel/ws/frame_parser.h>

#include <cstdint>
#include <string>

namespace heartwheel::load {

struct WsConn {
  ws::FrameParser parser{ws::Role::client};
  std::string message;             // the handshake response, then the text message being read
  std::string control;             // payload of the control frame being read
  std::uint64_t base = 0;          // offset of the first subscribe reply: delivery starts after it
  std::uint64_t last = 0;          // highest offset seen (live, recovered or skipped over)
  // When this connection's upgrade request was written. A WebSocket server's
  // ping clock starts at the upgrade and the subscribe after it does not
  // restart it, so a dead connection's close may come up to the upgrade's
  // round trip sooner than T after its last send: the early bound counts
  // from here (Worker::server_closed).
  std::uint64_t upgrade_sent_ns = 0;
  bool upgraded = false;           // the 101 arrived (this connection)
  bool inflating = false;          // the message being read is compressed (RSV1 on its first frame)
  bool frame_open = false;         // a frame's payload is being read
  bool subscribed = false;         // a subscribe reply came (ever): base is valid
  bool drop_planned = false;       // one of the --reconnect fraction
  bool dropped = false;            // dropped for --reconnect (reconnects are not new connections)
  bool reconnect_waiting = false;  // dropped, waiting for --reconnect-delay
};

}  // namespace heartwheel::load
