// tools/load/worker.h - one load process: a libuv loop holding its share of
// the connections.
//
// Per connection the worker keeps one Conn (uv_tcp_t plus ~100 bytes of state,
// of which one 32-byte TimerEntry): the entry is the connect timeout while
// connecting and the send schedule (next message, next heartbeat) once open,
// all in the one heartwheel::LoopWheel of the loop. Reads go into one shared
// 64 KiB buffer per loop (libuv calls alloc and read back to back), and writes
// try uv_try_write() from a shared scratch buffer first, so a connection owns
// no buffer at all unless the kernel pushes back.
//
// Life of a run: connects are started by a ramp timer (connect_rate / P per
// second, at most max_pending_connects in flight); at `duration` (or SIGTERM /
// SIGINT) the worker writes its LoadResult as one JSON line to `report_fd`,
// then closes everything it opened (first the result: closing thousands of
// sockets can take longer than the supervisor waits), and run() returns. Once
// a second it writes a progress line there too.
//
// Threads: everything runs on the worker's loop thread.
#pragma once

#include <heartwheel/timer/loop_wheel.h>
#include <heartwheel/timer/timer_entry.h>
#include <heartwheel/ws/client_handshake.h>
#include <heartwheel/ws/deflate_pool.h>
#include <heartwheel/ws/stats.h>
#include <heartwheel/ws/session.h>
#include <uv.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "options.h"
#include "result.h"

struct llhttp__internal_s;

namespace heartwheel::tls {
class Context;
class Session;
}  // namespace heartwheel::tls

namespace heartwheel::load {

class Worker;
struct WsConn;  // ws mode's per-connection state (ws_session.cpp)

struct Conn final : TimerEntry {
  // backoff: closed, waiting for its --auto-reconnect attempt (the TimerEntry is the wait).
  enum class State : std::uint8_t { idle, connecting, open, closing, closed, backoff };

  Conn();
  uv_tcp_t tcp;
  Worker* worker = nullptr;
  std::uint64_t index = 0;  // global connection index
  std::uint64_t next_send_ns =
      0;  // intended time of the next message (connect start while connecting)
  std::uint64_t last_write_ns = 0;  // last write; dead connections' close time counts from it
  std::uint64_t rx_id = 0;          // rpc: id of the frame being read
  std::uint32_t rx_pos = 0;         // bytes of the current message/header/payload consumed
  std::uint32_t rx_len = 0;         // rpc: payload length of the frame being read
  State state = State::idle;
  std::uint8_t rx_type = 0;                   // rpc: 0 while reading a header
  bool dead = false;                          // chosen to go silent after its first exchange
  bool silent = false;                        // writes nothing any more
  bool awaiting = false;                      // http: a request is outstanding
  bool publisher = false;                     // ws: the publisher connection of a target
  bool was_open = false;                      // --auto-reconnect: opened at least once
  bool retry = false;                         // --auto-reconnect: try again once the handle closed
  bool handshaking = false;                   // --tls: connected, handshake under way (in pending_)
  std::uint8_t failures = 0;                  // --auto-reconnect: consecutive failed attempts
  std::uint32_t opened_ms = 0;                // --auto-reconnect: when it last opened (since start)
  std::uint8_t rx_buf[16] = {};               // header or stamp bytes being assembled
  struct llhttp__internal_s* http = nullptr;  // http mode only
  WsConn* ws = nullptr;                       // ws mode only, kept across reconnects
  tls::Session* tls = nullptr;                // --tls: from connect to close
};

class Worker {
 public:
  // Throws std::system_error if the loop cannot be set up.
  Worker(const LoadOptions& options, ProcessShare share, int report_fd);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Runs until the duration ends or a stop signal arrives and every handle
  // is closed; returns the process exit status (0, or 1 if the result could
  // not be written).
  int run();

  // --- used by the protocol code (session.cpp) ---
  const LoadOptions& options() const noexcept { return options_; }
  LoadResult& result() noexcept { return result_; }
  void send_bytes(Conn& c, const std::uint8_t* data, std::size_t len);
  void close_conn(Conn& c);
  void server_closed(Conn& c, const char* what, int uv_code);
  void first_exchange(Conn& c);
  // Records RTT and latency from the 16 stamp bytes a reply brought back.
  void record_reply(std::uint64_t now_ns, const std::uint8_t* stamps);
  void schedule_session(Conn& c);
  void protocol_error(Conn& c, const char* what);
  static int on_http_complete(struct llhttp__internal_s* parser);  // llhttp callback
  // ws mode (ws_session.cpp)
  void ws_message(Conn& c, std::string_view text);
  void ws_push(Conn& c, std::string_view text, std::size_t name_at);
  // A frame the session made (header and masked payload), written unless
  // the connection went silent.
  void ws_write(Conn& c, std::string_view head, std::string_view payload);
  // The server's close 1012 ("service restart") on `c`: counted, not an
  // error; the server's FIN then brings it back (ws_restarting).
  void ws_restart_close(Conn& c);
  // --ws-compression: the loop's inflate streams (none without the flag).
  ws::DeflatePool* ws_deflate_pool() noexcept { return ws_deflate_.get(); }
  const ws::Stats& ws_deflate_stats() const noexcept { return ws_deflate_stats_; }

 private:
  static void on_conn_timer(TimerEntry& e);
  static void on_connect(uv_connect_t* req, int status);
  static void on_alloc(uv_handle_t* h, std::size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf);
  static void on_write(uv_write_t* req, int status);
  static void on_closed(uv_handle_t* h);

  void ramp();
  void start_connect(Conn& c);
  void connect_failed(Conn& c, int uv_code);
  int bind_source(Conn& c);  // 0 or a negative errno (libuv's codes on Linux)
  void on_open(Conn& c);
  void session_due(Conn& c);  // session.cpp: the send schedule fired
  void on_data(Conn& c, const std::uint8_t* data, std::size_t len);  // session.cpp
  void send_message(Conn& c, std::uint64_t intended_ns);             // session.cpp
  void send_ping(Conn& c);                                           // session.cpp
  void init_http(Conn& c);                                           // session.cpp
  void finish_http(Conn& c);                                         // session.cpp
  static void free_http(Conn& c);                                    // session.cpp
  void ws_setup();                                                   // ws_session.cpp
  void ws_open(Conn& c);                                             // ws_session.cpp
  void ws_data(Conn& c, const std::uint8_t* data, std::size_t len);  // ws_session.cpp
  bool ws_upgrade(Conn& c, std::string_view& data);                  // ws_session.cpp
  void ws_send_text(Conn& c, std::string_view text);                 // ws_session.cpp
  void ws_subscribe(Conn& c);                                        // ws_session.cpp
  void ws_reply(Conn& c, std::string_view text);                     // ws_session.cpp
  void ws_reply_json(Conn& c, const nlohmann::json& reply);          // ws_session.cpp
  void ws_publish_due();                                             // ws_session.cpp
  void ws_drop_for_reconnect();                                      // ws_session.cpp
  void ws_closed(Conn& c);                                           // ws_session.cpp
  void ws_restarting(Conn& c);                                       // ws_session.cpp
  void ws_finish();                                                  // ws_session.cpp
  void ws_free();                                                    // ws_session.cpp
  std::uint64_t ws_pair(const Conn& c) const noexcept;               // target * K + channel
  std::string ws_channel(std::uint64_t channel) const;
  void progress();
  void stop();
  bool write_line(const std::string& line);
  std::uint64_t elapsed_ms() const noexcept;
  // ws stamps: `local` (uv_hrtime()) on the clock every host of a run
  // shares (the coordinator's: less options_.clock_offset_ns; 0 on one host).
  std::uint64_t shared_clock_ns(std::uint64_t local) const noexcept {
    return local - static_cast<std::uint64_t>(options_.clock_offset_ns);
  }
  std::uint64_t shared_clock_ns() const noexcept { return shared_clock_ns(uv_hrtime()); }
  void note_resolved();
  // --tls (tls_conn.cpp)
  void tls_setup();
  void tls_start(Conn& c);  // TCP connected: the ClientHello
  void tls_data(Conn& c, const std::uint8_t* data, std::size_t len);
  void tls_send(Conn& c, std::string_view plaintext);
  static void tls_free(Conn& c);
  void handshake_over(Conn& c) noexcept;  // leaves pending_ (done, failed or closed)
  void send_raw(Conn& c, const std::uint8_t* data, std::size_t len);
  // --auto-reconnect (worker_reconnect.cpp)
  void attempt_started(Conn& c);
  void attempt_failed(Conn& c, const char* error);
  void opened_again(Conn& c);
  void connection_lost(Conn& c);
  void retry_later(Conn& c);

  const LoadOptions& options_;
  ProcessShare share_;
  int report_fd_;
  uv_loop_t loop_{};
  std::optional<LoopWheel> wheel_;
  uv_timer_t ramp_timer_{}, progress_timer_{}, stop_timer_{};
  uv_timer_t publish_timer_{}, reconnect_timer_{};  // ws mode
  uv_signal_t sigterm_{}, sigint_{};
  std::unique_ptr<Conn[]> conns_;
  std::uint64_t started_ = 0;   // connects started (next conns_ slot)
  // Connects in flight, bounded by max_pending_connects: with --tls until
  // the handshake is done or failed, so a server slower at handshakes than
  // the connect rate slows the ramp instead of letting handshakes pile up
  // past their timeout.
  std::uint64_t pending_ = 0;
  std::uint64_t resolved_ = 0;  // connects that succeeded or failed
  std::uint64_t open_ = 0;      // connections open now
  std::uint64_t closed_by_server_ = 0;
  std::uint64_t start_ns_ = 0;
  bool stopping_ = false;
  bool reported_ = false;   // the result line was written
  bool ramp_done_ = false;  // every connect of this process resolved
  LoadResult result_;
  std::unique_ptr<std::uint8_t[]> read_buf_;
  std::vector<std::uint8_t> scratch_;  // one outgoing message, stamped per send
  std::uint64_t down_ = 0;             // --auto-reconnect: lost connections not open again yet
  std::mt19937_64 jitter_rng_;         // --auto-reconnect: jitter
  std::string http_request_;
  std::shared_ptr<tls::Context> tls_;  // --tls
  std::string tls_out_;                // ciphertext of one feed or write
  // ws mode: the handshake's options and one key for every connection (the
  // server cannot tell), the sessions' options, the publishers (worker 0:
  // one per target), per (target, channel) the epoch seen and the
  // publisher's last offset, a scratch frame.
  ws::ClientHandshakeOptions ws_handshake_;
  std::string ws_key_, ws_frame_;
  ws::SessionOptions ws_session_;
  // --ws-compression: the loop's inflate streams, lent per message.
  std::unique_ptr<ws::DeflatePool> ws_deflate_;
  ws::Stats ws_deflate_stats_;  // its counters (compressed messages received)
  std::unique_ptr<Conn[]> publishers_;
  std::uint64_t publisher_count_ = 0;
  std::vector<std::string> ws_epochs_;
  std::vector<std::uint64_t> ws_final_;
  std::vector<std::uint64_t> publish_sent_ns_;  // by publication id mod size: for the ack RTT
  std::uint64_t published_ = 0;                 // publications made (each on every target)
};

// Per-mode one-time setup of the scratch buffer and request text (session.cpp).
void prepare_payload(const LoadOptions& o, std::vector<std::uint8_t>& scratch,
                     std::string& http_request);

}  // namespace heartwheel::load
