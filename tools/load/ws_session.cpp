// ws mode: WebSocket subscribers and a publisher speaking heartwheel-chat's
// JSON protocol (docs/chat-protocol.md). See README.md, "ws mode".
//
// A subscriber connects, sends the opening handshake (one key for every
// connection of the worker: the server cannot tell), and on the 101
// subscribes to its channel. From then on it answers the server's pings with
// pongs (masked, like every client frame) and counts each publication pushed
// to it: offsets must follow each other with no gap and no repeat (per
// subscriber, per channel), and the `t` its data carries (the publisher's
// uv_hrtime() at the write; one monotonic clock for every process of the
// machine; across hosts each host's clock less its --clock-offset-ns, the
// coordinator's clock) gives the delivery latency. A dead subscriber goes silent once its
// subscribe reply came: no pong, no frame, nothing parsed; it still drains
// its socket, so the harness sees when the server closes it.
//
// The publisher: worker 0 holds one extra connection per target (or only the
// first target with --publish-targets first) and, from --publish-start to
// --duration - --publish-stop-before, makes publication k at k / rate: a
// publish on channel k mod K with data {"t": <ns>, "k": k}, sent on every
// publisher connection (independent servers: each gets the same publication
// and gives it its own offset).
//
// The protocol is the library's WebSocket client (heartwheel/ws/client_handshake.h
// for the opening handshake, ws::Session in the client role for frames: the
// code ws::Client runs), on the harness's own sockets (ws_state.h). With
// --ws-compression the handshake offers permessage-deflate (ws::deflate_offer,
// stateless), the answer is checked (ws::accept_deflate_response) and the
// session inflates what comes compressed with the worker's ws::DeflatePool;
// the harness's own messages go uncompressed unless they reach the pool's
// min_size (RFC 7692 lets a sender choose per message).
#include <heartwheel/ws/deflate.h>
#include <heartwheel/ws/deflate_pool.h>
#include <heartwheel/common/error.h>
#include <heartwheel/ws/frame.h>
#include <heartwheel/ws/handshake.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "bounded_json.h"
#include "worker.h"
#include "ws_state.h"

namespace heartwheel::load {

namespace {

constexpr std::size_t kMaxHandshakeBytes = 8192;
constexpr std::size_t kMaxMessageBytes = 1 << 20;
constexpr std::size_t kPublishSentRing = 4096;

std::uint64_t ns(std::chrono::nanoseconds d) { return static_cast<std::uint64_t>(d.count()); }

// The unsigned integer right after `key` in `text` (e.g. key `"offset":`).
std::optional<std::uint64_t> number_after(std::string_view text, std::string_view key) {
  const auto at = text.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  const char* first = text.data() + at + key.size();
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(first, text.data() + text.size(), v);
  if (ec != std::errc{} || end == first) return std::nullopt;
  return v;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

ws::DeflateOptions offered(bool on) {
  ws::DeflateOptions o;
  o.enabled = on;
  return o;
}

// --publish-size: order lines appended to the data until it has about
// `size` bytes: JSON with the repetition real traffic has (field names,
// similar values), so compression ratios mean something.
void pad_data(std::string& data, std::size_t size, std::uint64_t k) {
  if (data.size() >= size) return;
  data.pop_back();  // the closing brace
  data += ",\"lines\":[";
  for (std::uint64_t i = 0; data.size() + 3 < size; ++i) {
    if (i > 0) data += ',';
    data += "{\"sku\":\"A" + std::to_string(1000 + (k * 7 + i * 13) % 97) +
            "\",\"qty\":" + std::to_string(1 + (k + i) % 5) +
            ",\"price\":" + std::to_string(100 + (i * 37) % 900) + "}";
  }
  data += "]}";
}

}  // namespace

void Worker::ws_setup() {
  ws_key_ = ws::make_client_key();
  const Endpoint& first = options_.targets.front();
  ws_handshake_.path = options_.ws_centrifugo && options_.ws_path == "/ws"
                           ? std::string("/connection/websocket")
                           : options_.ws_path;
  ws_handshake_.host = first.host + ":" + std::to_string(first.port);
  ws_handshake_.headers = {{"User-Agent", "heartwheel-load"}};
  ws_handshake_.max_response_bytes = kMaxHandshakeBytes;
  if (options_.ws_compression) {
    ws_handshake_.extensions = ws::deflate_offer(offered(true));
    ws_deflate_ = std::make_unique<ws::DeflatePool>(offered(true), &ws_deflate_stats_);
  }
  ws_handshake_.validate();
  ws_session_.role = ws::Role::client;
  ws_session_.max_message_bytes = kMaxMessageBytes;
  const std::uint64_t targets = options_.targets.size();
  ws_epochs_.assign(targets * options_.channels, std::string());
  ws_final_.assign(targets * options_.channels, 0);
  publish_sent_ns_.assign(kPublishSentRing, 0);
  for (std::uint64_t j = 0; j < share_.connections; ++j) {
    Conn& c = conns_[j];
    c.ws = new WsConn(c);
    // The --reconnect fraction, picked like the dead ones but counted from the
    // other end (the same fraction would pick exactly the dead ones), never a
    // dead one.
    c.ws->drop_planned =
        !c.dead && is_dead(options_.reconnect_fraction, share_.connections - 1 - j);
  }
  if (share_.index != 0 || options_.publish_rate <= 0 || !options_.ws_publisher) return;
  publisher_count_ = options_.publish_all_targets ? targets : 1;
  publishers_ = std::make_unique<Conn[]>(publisher_count_);
  // Global indices past every subscriber's, with index mod targets == target:
  // the port plan gives them ports of their own.
  const std::uint64_t base = (options_.connections + targets - 1) / targets * targets;
  for (std::uint64_t p = 0; p < publisher_count_; ++p) {
    Conn& c = publishers_[p];
    c.worker = this;
    c.index = base + p;
    c.publisher = true;
    c.set_callback(&Worker::on_conn_timer);
    c.ws = new WsConn(c);
  }
}

void Worker::ws_free() {
  for (std::uint64_t j = 0; conns_ && j < share_.connections; ++j) {
    delete conns_[j].ws;
    conns_[j].ws = nullptr;
  }
  for (std::uint64_t p = 0; p < publisher_count_; ++p) {
    delete publishers_[p].ws;
    publishers_[p].ws = nullptr;
  }
}

std::uint64_t Worker::ws_pair(const Conn& c) const noexcept {
  const std::uint64_t targets = options_.targets.size();
  const std::uint64_t target = c.index % targets;
  return target * options_.channels + (c.index / targets) % options_.channels;
}

std::string Worker::ws_channel(std::uint64_t channel) const {
  return options_.channel_prefix + std::to_string(channel);
}

void Worker::ws_write(Conn& c, std::string_view head, std::string_view payload) {
  // A dead subscriber sends nothing, pongs included (the session would).
  if (c.silent || c.state != Conn::State::open) return;
  ws_frame_.assign(head).append(payload);
  send_bytes(c, reinterpret_cast<const std::uint8_t*>(ws_frame_.data()), ws_frame_.size());
}

void Worker::ws_send_text(Conn& c, std::string_view text) {
  WsConn& s = *c.ws;
  if (s.session) s.session->send_text(text);
}

void Worker::ws_open(Conn& c) {
  WsConn& s = *c.ws;
  s.session.reset();
  s.upgraded = false;
  s.restart_closed = false;
  s.handshake = std::make_unique<ws::ClientHandshake>(ws_handshake_, ws_key_);
  const std::string& request = s.handshake->request();
  send_bytes(c, reinterpret_cast<const std::uint8_t*>(request.data()), request.size());
  s.upgrade_sent_ns = c.last_write_ns;
}

bool Worker::ws_upgrade(Conn& c, std::string_view& data) {
  WsConn& s = *c.ws;
  switch (s.handshake->feed(data)) {
    case ws::ClientHandshake::Status::need_more:
      return false;
    case ws::ClientHandshake::Status::refused: {
      const int status = s.handshake->status();
      const bool too_long = s.handshake->error_code() == heartwheel::errc::too_large;
      const bool bad_accept = s.handshake->error().find("Accept") != std::string::npos;
      s.handshake.reset();
      if (status != 0 && status != 101) {
        ++result_.errors["ws_handshake_status:" + std::to_string(status)];
        close_conn(c);
      } else {
        protocol_error(c, too_long     ? "ws_handshake_too_long"
                          : bad_accept ? "ws_bad_accept"
                                       : "ws_handshake");
      }
      return false;
    }
    case ws::ClientHandshake::Status::accepted:
      break;
  }
  // What followed the 101 (the server's first frames) stays in `data`.
  std::string why;
  const auto deflate =
      ws::accept_deflate_response(s.handshake->extensions(), offered(options_.ws_compression), why);
  s.handshake.reset();
  if (!deflate) {
    protocol_error(c, "ws_bad_extensions");
    return false;
  }
  s.session.emplace(static_cast<ws::SessionOwner&>(s), ws_session_);
  if (deflate->enabled) {
    s.session->use_deflate(*deflate);
    ++result_.ws_compressed_connections;
  }
  s.upgraded = true;
  if (c.publisher) {
    ++result_.ws_publishers;
    s.restart_ns = 0;
    // Centrifugo's connect comes first (its reply is not counted); the
    // publishes that follow it are answered after it, in order.
    if (options_.ws_centrifugo) ws_send_text(c, "{\"id\":1,\"connect\":{}}");
    return true;
  }
  if (!s.dropped) ++result_.ws_upgraded;
  ws_subscribe(c);
  return c.state == Conn::State::open;
}

void Worker::ws_subscribe(Conn& c) {
  const WsConn& s = *c.ws;
  const std::uint64_t pair = ws_pair(c);
  if (options_.ws_centrifugo) {
    // The connect and the subscribe in one message (Centrifugo takes
    // several commands per frame, a line each, answered in order).
    std::string req = "{\"id\":1,\"connect\":{}}\n{\"id\":2,\"subscribe\":{\"channel\":\"" +
                      ws_channel(pair % options_.channels) + "\"";
    if (s.subscribed)  // a reconnect: ask for what was missed
      req += ",\"recover\":true,\"offset\":" + std::to_string(s.last) + ",\"epoch\":\"" +
             ws_epochs_[pair] + "\"";
    req += "}}";
    return ws_send_text(c, req);
  }
  std::string req =
      "{\"id\":1,\"op\":\"subscribe\",\"channel\":\"" + ws_channel(pair % options_.channels) + "\"";
  if (s.subscribed)  // a reconnect: ask for what was missed
    req += ",\"since\":{\"offset\":" + std::to_string(s.last) + ",\"epoch\":\"" + ws_epochs_[pair] +
           "\"}";
  req += '}';
  ws_send_text(c, req);
}

void Worker::ws_data(Conn& c, const std::uint8_t* bytes, std::size_t len) {
  WsConn& s = *c.ws;
  std::string_view in(reinterpret_cast<const char*>(bytes), len);
  if (!s.upgraded && !ws_upgrade(c, in)) return;
  // A dead subscriber reads on (to see the server's close) but parses nothing.
  if (c.state == Conn::State::open && !c.silent && s.session && !in.empty()) s.session->feed(in);
}

// ---- the session's transport and events (ws_state.h) ----------------------------

void WsConn::send(std::string_view head, std::string_view payload) {
  conn->worker->ws_write(*conn, head, payload);
}

ws::DeflatePool* WsConn::deflate_pool() noexcept { return conn->worker->ws_deflate_pool(); }

void WsConn::on_message(ws::Session&, ws::MessageType type, std::string& payload) {
  Conn& c = *conn;
  if (c.silent || c.state != Conn::State::open) return;
  if (type == ws::MessageType::binary) return c.worker->protocol_error(c, "ws_binary_frame");
  c.worker->result().ws_compressed_messages =
      c.worker->ws_deflate_stats().compressed_messages_received;
  c.worker->ws_message(c, payload);
}

void WsConn::on_ping(ws::Session&, std::string_view) {
  if (conn->silent) return;  // its pong is not sent either (Worker::ws_write)
  ++conn->worker->result().server_pings;
  ++conn->worker->result().pings_answered;
}

void WsConn::on_close(ws::Session&, std::uint16_t code, std::string_view) {
  // The session echoed the code; the server then closes the TCP connection.
  if (code == ws::kCloseServiceRestart) return conn->worker->ws_restart_close(*conn);
  ++conn->worker->result().errors["ws_close_received:" + std::to_string(code)];
}

void WsConn::on_protocol_error(ws::Session&, std::uint16_t code, std::string_view what) {
  Conn& c = *conn;
  if (c.state != Conn::State::open) return;
  if (code == ws::kCloseMessageTooBig) return c.worker->protocol_error(c, "ws_message_too_big");
  c.worker->protocol_error(c, ("ws_frame:" + std::string(what)).c_str());
}

void Worker::ws_message(Conn& c, std::string_view text) {
  ++result_.messages_received;
  if (options_.ws_centrifugo) {
    // Replies and pushes, a line each; an empty command is the server's
    // ping, answered with an empty command (Centrifugo's pong).
    while (!text.empty() && c.state == Conn::State::open) {
      const std::size_t nl = text.find('\n');
      const std::string_view line = text.substr(0, nl);
      text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
      if (line.empty()) continue;
      if (line == "{}") {
        ++result_.server_pings;
        ++result_.pings_answered;
        ws_send_text(c, "{}");
      } else if (starts_with(line, "{\"push\":{\"channel\":\"")) {
        ws_push(c, line, 20);
      } else if (starts_with(line, "{\"id\":")) {
        ws_reply(c, line);
      }
    }
    return;
  }
  if (starts_with(text, "{\"channel\":\"")) return ws_push(c, text, 12);
  if (starts_with(text, "{\"id\":")) return ws_reply(c, text);
  // {"connect":...} and anything newer: not counted.
}

// A publication, join or leave of `text`, whose channel name starts at
// `name_at`: ours {"channel":"c","offset":N,...,"data":{...}}, Centrifugo's
// {"push":{"channel":"c","pub":{"data":{...},...,"offset":N}}}.
void Worker::ws_push(Conn& c, std::string_view text, std::size_t name_at) {
  const auto quote = text.find('"', name_at);
  if (quote == std::string_view::npos) return protocol_error(c, "ws_bad_push");
  const std::string_view rest = text.substr(quote);
  if (starts_with(rest, "\",\"join\":") || starts_with(rest, "\",\"leave\":")) {
    ++result_.presence_events;
    return;
  }
  const auto offset = number_after(rest, "\"offset\":");
  // The server re-serialises data (heartwheel-chat sorts its keys): find "t" inside it.
  const auto data_at = rest.find("\"data\":{");
  const auto sent = data_at == std::string_view::npos
                        ? std::nullopt
                        : number_after(rest.substr(data_at), "\"t\":");
  if (!offset) return protocol_error(c, "ws_bad_push");
  const std::uint64_t now = shared_clock_ns();
  if (sent && *sent <= now) result_.delivery_us.record((now - *sent) / 1000);
  WsConn& s = *c.ws;
  if (!s.subscribed) return;  // cannot happen: the reply comes first
  if (*offset <= s.last) {
    ++result_.duplicates;
  } else {
    result_.missing_gaps += *offset - s.last - 1;
    s.last = *offset;
    ++result_.delivered;
  }
}

void Worker::ws_reply(Conn& c, std::string_view text) {
  // No exception may leave a libuv callback: a reply of the wrong shape is a
  // protocol error of this connection.
  // Depth-limited: a reply nested deeper than any the harness sends for
  // (its own requests are flat; a server may relay data up to its own limit
  // inside a few levels of envelope) is a bad reply, not a stack overflow
  // when it is copied.
  constexpr std::size_t kMaxReplyDepth = 4 * heartwheel::cli::kDefaultMaxJsonDepth;
  try {
    heartwheel::cli::BoundedJson parsed = heartwheel::cli::parse_bounded_json(text, kMaxReplyDepth);
    if (parsed.status != heartwheel::cli::BoundedJson::Status::ok)
      return protocol_error(c, "ws_bad_reply");
    ws_reply_json(c, parsed.value);
  } catch (const nlohmann::json::exception&) {
    protocol_error(c, "ws_bad_reply");
  }
}

void Worker::ws_reply_json(Conn& c, const nlohmann::json& reply) {
  if (const auto e = reply.find("error"); e != reply.end()) {
    const auto code = e->find("code");  // ours a name, Centrifugo's a number
    ++result_.errors["ws_error:" + (code == e->end()    ? std::string("?")
                                    : code->is_string() ? code->get<std::string>()
                                                        : code->dump())];
    return;
  }
  // Centrifugo's reply puts the fields under its method's name; its connect
  // reply is not counted.
  if (options_.ws_centrifugo && reply.contains("connect")) return;
  const nlohmann::json& j = !options_.ws_centrifugo       ? reply
                            : reply.contains("subscribe") ? reply["subscribe"]
                            : reply.contains("publish")   ? reply["publish"]
                                                          : reply;
  const std::uint64_t offset = j.value("offset", std::uint64_t{0});
  const std::string epoch = j.value("epoch", std::string());
  if (c.publisher) {
    std::uint64_t id = reply.value("id", std::uint64_t{0});
    if (options_.ws_centrifugo) id = id > 1 ? id - 1 : 0;  // 1 was the connect's
    if (id == 0) return;
    ++result_.publish_acks;
    const std::uint64_t sent = publish_sent_ns_[id % kPublishSentRing];
    if (sent > 0) result_.rtt_us.record((uv_hrtime() - sent) / 1000);
    const std::uint64_t pair =
        (c.index % options_.targets.size()) * options_.channels + (id - 1) % options_.channels;
    // Centrifugo's publish reply has no offset: on a channel that started
    // empty, the count of its acknowledged publishes is its last offset.
    ws_final_[pair] =
        options_.ws_centrifugo ? ws_final_[pair] + 1 : std::max(ws_final_[pair], offset);
    return;
  }
  WsConn& s = *c.ws;
  const std::uint64_t pair = ws_pair(c);
  ++result_.ws_subscribed;
  if (ws_epochs_[pair].empty()) ws_epochs_[pair] = epoch;
  if (!s.subscribed) {
    s.subscribed = true;
    s.base = s.last = offset;
    first_exchange(c);  // a dead subscriber goes silent here
    return;
  }
  // A resubscribe after --reconnect or a server restart, with since {last, epoch}.
  ++result_.reconnects;
  const bool after_restart = s.restart_ns != 0;
  if (after_restart) {
    ++result_.ws_restart_resubscribed;
    result_.ws_restart_back_ms.record((uv_hrtime() - s.restart_ns) / 1'000'000);
    ReconnectStats::count(result_.ws_restart_back_per_s, elapsed_ms() / 1000);
    s.restart_ns = 0;
  }
  if (j.value("recovered", false)) {
    ++result_.recovered;
    if (after_restart) ++result_.ws_restart_recovered;
    for (const auto& p : j.value("publications", nlohmann::json::array())) {
      const std::uint64_t o = p.value("offset", std::uint64_t{0});
      if (o <= s.last) {
        ++result_.duplicates;
        continue;
      }
      result_.missing_gaps += o - s.last - 1;
      s.last = o;
      ++result_.recovered_publications;
    }
  } else {
    ++result_.not_recovered;
  }
  if (offset > s.last) {  // what neither the reply nor recovery brought is lost
    result_.missing_gaps += offset - s.last;
    s.last = offset;
  }
}

void Worker::ws_publish_due() {
  if (stopping_) return;
  const std::uint64_t now = uv_hrtime();
  const std::uint64_t start = start_ns_ + ns(publish_start_of(options_));
  const std::uint64_t stop = start_ns_ + ns(publish_stop_of(options_));
  if (now < start) return;
  // Publication k is due at start + k / rate; all that are due go now.
  const double span_s = static_cast<double>(std::min(now, stop) - start) / 1e9;
  const auto due = static_cast<std::uint64_t>(span_s * options_.publish_rate) + 1;
  for (; published_ < due; ++published_) {
    const std::uint64_t k = published_, id = k + 1;
    const std::string channel = ws_channel(k % options_.channels);
    for (std::uint64_t p = 0; p < publisher_count_; ++p) {
      Conn& c = publishers_[p];
      if (c.state != Conn::State::open || !c.ws->upgraded) {
        ++result_.publish_skipped;
        continue;
      }
      const std::uint64_t t = uv_hrtime();
      std::string data =
          "{\"t\":" + std::to_string(shared_clock_ns(t)) + ",\"k\":" + std::to_string(k) + "}";
      pad_data(data, options_.publish_size, k);
      const std::string fields = "\"channel\":\"" + channel + "\",\"data\":" + data;
      const std::string req =
          options_.ws_centrifugo
              ? "{\"id\":" + std::to_string(id + 1) + ",\"publish\":{" + fields + "}}"
              : "{\"id\":" + std::to_string(id) + ",\"op\":\"publish\"," + fields + "}";
      publish_sent_ns_[id % kPublishSentRing] = t;
      ++result_.publications_sent;
      ++result_.messages_sent;
      ws_send_text(c, req);
    }
  }
  if (now >= stop) uv_timer_stop(&publish_timer_);
}

void Worker::ws_drop_for_reconnect() {
  if (stopping_) return;
  for (std::uint64_t j = 0; j < share_.connections; ++j) {
    Conn& c = conns_[j];
    if (!c.ws->drop_planned || c.state != Conn::State::open || !c.ws->subscribed) continue;
    // Like a network that vanished: RST, no close frame.
    uv_os_fd_t fd;
    if (uv_fileno(reinterpret_cast<uv_handle_t*>(&c.tcp), &fd) == 0) {
      linger l{1, 0};
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    }
    c.ws->dropped = true;
    c.ws->reconnect_waiting = true;
    close_conn(c);
  }
}

void Worker::ws_restart_close(Conn& c) {
  WsConn& s = *c.ws;
  if (c.state != Conn::State::open || s.restart_closed) return;
  s.restart_closed = true;
  s.restart_ns = uv_hrtime();
  if (c.publisher) {
    ++result_.ws_publisher_restarts;
    return;
  }
  ++result_.ws_restart_closes;
  ReconnectStats::count(result_.ws_restart_closes_per_s, elapsed_ms() / 1000);
}

void Worker::ws_restarting(Conn& c) {
  // A server restarting (heartwheel's SIGUSR2 drain) spreads these closes
  // over its drain window and asks each client to come back at once: after
  // --reconnect-initial (jittered; --auto-reconnect is not for ws mode), as
  // ws::Client does. The subscriber then resubscribes with since {offset,
  // epoch} (ws_subscribe) and counts as a reconnect, not a new connection; a
  // publisher goes on publishing. A reconnect that fails is a connect error
  // (a refusal is what a restart must never cause), retried with the
  // backoff until it is back (attempt_failed).
  c.ws->dropped = true;
  c.failures = 0;
  c.retry = !stopping_;
  close_conn(c);
}

void Worker::ws_closed(Conn& c) {
  if (!c.ws->reconnect_waiting || stopping_ || !wheel_) return;
  wheel_->schedule(c, options_.reconnect_delay);  // on_conn_timer reconnects
}

void Worker::ws_finish() {
  const std::uint64_t targets = options_.targets.size();
  const auto key = [&](std::uint64_t pair, const char* what) {
    return std::to_string(pair / options_.channels) + "/" + ws_channel(pair % options_.channels) +
           ":" + what;
  };
  for (std::uint64_t p = 0; p < publisher_count_; ++p)
    for (std::uint64_t ch = 0; ch < options_.channels; ++ch) {
      const std::uint64_t pair = (publishers_[p].index % targets) * options_.channels + ch;
      result_.ws_offsets[key(pair, "final")] = ws_final_[pair];
    }
  for (std::uint64_t j = 0; j < started_; ++j) {
    const Conn& c = conns_[j];
    if (c.dead || c.state != Conn::State::open) continue;
    if (!c.ws->subscribed) {  // its subscribe reply never came: it counts as a failure
      ++result_.unsubscribed_at_end;
      continue;
    }
    const std::uint64_t pair = ws_pair(c);
    ++result_.ws_offsets[key(pair, "clients")];
    result_.ws_offsets[key(pair, "last_sum")] += c.ws->last;
    result_.ws_offsets[key(pair, "base_sum")] += c.ws->base;
  }
}

}  // namespace heartwheel::load
