// The protocol side of a connection: what it sends when its schedule fires
// and how it reads what comes back, for the echo, rpc and http modes.
//
// Latency accounting (wrk2's rule against coordinated omission): a message's
// "intended" time is its slot in the schedule (connect time + k * interval),
// not the moment the loop got round to writing it. If the loop ran late, the
// missed messages are sent at once, each with its own intended time, so a
// stall shows up in latency_us; rtt_us counts from the actual write.
#include <llhttp.h>

#include <cstring>
#include <string>

#include "wire.h"
#include "worker.h"

namespace heartwheel::load {

namespace {
// After this many messages owed at once the schedule skips ahead (and counts
// the skipped sends as dropped) instead of flooding a peer after a long stall.
constexpr int kMaxCatchUp = 64;

std::uint64_t ns(std::chrono::nanoseconds d) { return static_cast<std::uint64_t>(d.count()); }

const llhttp_settings_t& http_settings() {
  static const llhttp_settings_t settings = [] {
    llhttp_settings_t s;
    llhttp_settings_init(&s);
    s.on_message_complete = [](llhttp_t* p) { return Worker::on_http_complete(p); };
    return s;
  }();
  return settings;
}
}  // namespace

void prepare_payload(const LoadOptions& o, std::vector<std::uint8_t>& scratch,
                     std::string& http_request) {
  const std::size_t header = o.mode == Mode::rpc ? wire::kRpcHeaderBytes : 0;
  scratch.assign(header + o.message_size, 0);
  // Printable filler, so a captured stream is readable.
  for (std::size_t i = header + wire::kStampBytes; i < scratch.size(); ++i)
    scratch[i] = static_cast<std::uint8_t>('a' + i % 26);
  if (o.mode == Mode::http)
    http_request = "GET " + o.http_path + " HTTP/1.1\r\nHost: " + o.targets.front().host + ":" +
                   std::to_string(o.targets.front().port) +
                   "\r\nUser-Agent: heartwheel-load\r\n\r\n";
}

void Worker::init_http(Conn& c) {
  c.http = new llhttp_t;
  llhttp_init(c.http, HTTP_RESPONSE, &http_settings());
  c.http->data = &c;
}

void Worker::finish_http(Conn& c) {
  // A response delimited by the connection's end completes only now.
  if (c.http) llhttp_finish(c.http);
}

void Worker::free_http(Conn& c) {
  delete c.http;
  c.http = nullptr;
}

void Worker::send_message(Conn& c, std::uint64_t intended_ns) {
  const std::uint64_t now = uv_hrtime();
  ++result_.messages_sent;
  if (options_.mode == Mode::http) {
    wire::put_stamps(c.rx_buf, intended_ns, now);  // one request in flight: keep its stamps here
    c.awaiting = true;
    send_bytes(c, reinterpret_cast<const std::uint8_t*>(http_request_.data()),
               http_request_.size());
    return;
  }
  std::uint8_t* p = scratch_.data();
  if (options_.mode == Mode::rpc) {
    wire::put_rpc_header(p, wire::FrameType::request, result_.messages_sent, options_.message_size);
    p += wire::kRpcHeaderBytes;
  }
  wire::put_stamps(p, intended_ns, now);
  send_bytes(c, scratch_.data(), scratch_.size());
}

void Worker::send_ping(Conn& c) {
  std::uint8_t frame[wire::kRpcHeaderBytes + 8];
  wire::put_rpc_header(frame, wire::FrameType::ping, ++result_.pings_sent, 8);
  wire::put_u64(frame + wire::kRpcHeaderBytes, uv_hrtime());
  send_bytes(c, frame, sizeof frame);
}

void Worker::session_due(Conn& c) {
  // ws mode sends nothing on a schedule (ws_session.cpp: subscribe, pongs, the publisher's timer).
  if (c.silent || c.state != Conn::State::open || options_.mode == Mode::ws) return;
  const std::uint64_t now = uv_hrtime();
  const std::uint64_t interval = ns(options_.message_interval);
  if (interval > 0 && !(options_.mode == Mode::http && c.awaiting)) {
    int sent = 0;
    while (c.next_send_ns <= now && c.state == Conn::State::open) {
      if (sent == kMaxCatchUp) {
        const std::uint64_t behind = (now - c.next_send_ns) / interval + 1;
        result_.sends_dropped += behind;
        c.next_send_ns += behind * interval;
        break;
      }
      send_message(c, c.next_send_ns);
      c.next_send_ns += interval;
      ++sent;
      if (options_.mode == Mode::http) break;  // one request in flight at a time
    }
  }
  if (c.state != Conn::State::open) return;
  // Writes above moved last_write_ns past `now`: compare without underflow.
  if (options_.mode == Mode::rpc && options_.heartbeat.count() > 0 &&
      now >= c.last_write_ns + ns(options_.heartbeat))
    send_ping(c);
  if (c.state == Conn::State::open) schedule_session(c);
}

void Worker::record_reply(std::uint64_t now_ns, const std::uint8_t* stamps) {
  const std::uint64_t rtt = (now_ns - wire::get_u64(stamps + 8)) / 1000;
  result_.latency_us.record((now_ns - wire::get_u64(stamps)) / 1000);
  result_.rtt_us.record(rtt);
  if (ramp_done_) result_.rtt_steady_us.record(rtt);
}

void Worker::first_exchange(Conn& c) {
  if (!c.dead || c.silent) return;
  c.silent = true;
  wheel_->cancel(c);
}

int Worker::on_http_complete(llhttp_t* parser) {
  Conn& c = *static_cast<Conn*>(parser->data);
  Worker& w = *c.worker;
  const std::uint64_t now = uv_hrtime();
  ++w.result_.http_status[std::to_string(llhttp_get_status_code(parser))];
  if (c.awaiting) {
    ++w.result_.messages_received;
    w.record_reply(now, c.rx_buf);
    c.awaiting = false;
  }
  return 0;
}

namespace {

// Echo: the stream is a sequence of message_size-byte messages whose first 16
// bytes are the stamps. rx_pos is the offset in the current message.
void read_echo(Worker& w, Conn& c, const std::uint8_t* data, std::size_t len) {
  const std::size_t size = w.options().message_size;
  while (len > 0) {
    std::size_t n;
    if (c.rx_pos < wire::kStampBytes) {
      n = std::min<std::size_t>(len, wire::kStampBytes - c.rx_pos);
      std::memcpy(c.rx_buf + c.rx_pos, data, n);
      if (c.rx_pos + n == wire::kStampBytes) w.record_reply(uv_hrtime(), c.rx_buf);
    } else {
      n = std::min<std::size_t>(len, size - c.rx_pos);
    }
    c.rx_pos += static_cast<std::uint32_t>(n);
    data += n;
    len -= n;
    // Checked after either branch: a 16-byte message ends with its stamps.
    if (c.rx_pos == size) {
      c.rx_pos = 0;
      ++w.result().messages_received;
      w.first_exchange(c);
    }
  }
}

// One complete RPC frame (header decoded into rx_type/rx_id/rx_len, the first
// <= 16 payload bytes in rx_buf).
void on_rpc_frame(Worker& w, Conn& c) {
  LoadResult& r = w.result();
  const std::uint64_t now = uv_hrtime();
  switch (static_cast<wire::FrameType>(c.rx_type)) {
    case wire::FrameType::response:
      ++r.messages_received;
      if (c.rx_len >= wire::kStampBytes) w.record_reply(now, c.rx_buf);
      w.first_exchange(c);
      break;
    case wire::FrameType::pong:
      ++r.pongs_received;
      if (c.rx_len >= 8) r.heartbeat_rtt_us.record((now - wire::get_u64(c.rx_buf)) / 1000);
      w.first_exchange(c);
      break;
    case wire::FrameType::ping: {
      if (c.silent) break;  // a vanished peer answers nothing
      const std::size_t n = std::min<std::size_t>(c.rx_len, sizeof c.rx_buf);
      std::uint8_t frame[wire::kRpcHeaderBytes + sizeof c.rx_buf];
      wire::put_rpc_header(frame, wire::FrameType::pong, c.rx_id, n);
      std::memcpy(frame + wire::kRpcHeaderBytes, c.rx_buf, n);
      ++r.pings_answered;
      w.send_bytes(c, frame, wire::kRpcHeaderBytes + n);
      break;
    }
    case wire::FrameType::error:
      ++r.rpc_errors;
      break;
    default:
      w.protocol_error(c, "unexpected_frame_type");
  }
}

void read_rpc(Worker& w, Conn& c, const std::uint8_t* data, std::size_t len) {
  while (len > 0 && c.state == Conn::State::open) {
    if (c.rx_type == 0) {  // assembling a header
      const std::size_t n = std::min<std::size_t>(len, wire::kRpcHeaderBytes - c.rx_pos);
      std::memcpy(c.rx_buf + c.rx_pos, data, n);
      c.rx_pos += static_cast<std::uint32_t>(n);
      data += n;
      len -= n;
      if (c.rx_pos < wire::kRpcHeaderBytes) return;
      const std::uint32_t length = wire::get_u32(c.rx_buf);
      if (length < 9 || length > wire::kRpcMaxFrame) return w.protocol_error(c, "bad_frame_length");
      c.rx_type = c.rx_buf[4];
      if (c.rx_type == 0) return w.protocol_error(c, "unexpected_frame_type");
      c.rx_id = wire::get_u64(c.rx_buf + 5);
      c.rx_len = length - 9;
      c.rx_pos = 0;
    } else {  // payload: keep the first 16 bytes, skip the rest
      const std::size_t n = std::min<std::size_t>(len, c.rx_len - c.rx_pos);
      if (c.rx_pos < sizeof c.rx_buf) {
        const std::size_t keep = std::min<std::size_t>(n, sizeof c.rx_buf - c.rx_pos);
        std::memcpy(c.rx_buf + c.rx_pos, data, keep);
      }
      c.rx_pos += static_cast<std::uint32_t>(n);
      data += n;
      len -= n;
    }
    if (c.rx_type != 0 && c.rx_pos == c.rx_len) {
      on_rpc_frame(w, c);
      c.rx_type = 0;
      c.rx_pos = 0;
    }
  }
}

}  // namespace

void Worker::on_data(Conn& c, const std::uint8_t* data, std::size_t len) {
  switch (options_.mode) {
    case Mode::echo:
      read_echo(*this, c, data, len);
      break;
    case Mode::rpc:
      read_rpc(*this, c, data, len);
      break;
    case Mode::http: {
      const bool was_awaiting = c.awaiting;
      const llhttp_errno_t err = llhttp_execute(c.http, reinterpret_cast<const char*>(data), len);
      if (err != HPE_OK) return protocol_error(c, llhttp_errno_name(err));
      if (was_awaiting && !c.awaiting) {
        first_exchange(c);
        session_due(c);  // the next request may already be due (or overdue)
      }
      break;
    }
    case Mode::ws:
      ws_data(c, data, len);
      break;
  }
}

}  // namespace heartwheel::load
