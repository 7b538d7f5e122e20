// See chat_centrifuge_harness.h.
#include "chat_centrifuge_harness.h"

#include <heartwheel/auth/channel_policy.h>
#include <heartwheel/auth/token_key.h>
#include <heartwheel/pubsub/limits.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "auth_gate.h"
#include "hs256_jwt.h"
#include "ws_harness.h"

namespace centrifuge_test {

namespace pubsub = heartwheel::pubsub;
namespace ws = heartwheel::ws;

void FlakyBroker::publish(pubsub::Inbox& from, std::string_view channel, std::string data,
                          std::string info, const pubsub::PublishOptions& options,
                          pubsub::PublishDone done) {
  if (fail_publishes) {
    pubsub::PublishResult r;
    r.error = pubsub::make_error_code(pubsub::errc::unavailable);
    return done(std::move(r));
  }
  if (hold_publishes) {
    held_.push_back([this, &from, channel = std::string(channel), data = std::move(data),
                     info = std::move(info), options, done = std::move(done)]() mutable {
      bus_.publish(from, channel, std::move(data), std::move(info), options, std::move(done));
    });
    return;
  }
  bus_.publish(from, channel, std::move(data), std::move(info), options, std::move(done));
}

void FlakyBroker::release_publishes() {
  std::vector<std::function<void()>> held = std::move(held_);
  held_.clear();
  for (auto& publish : held) publish();
}

// ---- Conn ---------------------------------------------------------------------

void Conn::send(std::string_view text) { send_frame(ws::Opcode::text, text); }

void Conn::send_frame(ws::Opcode op, std::string_view payload) {
  REQUIRE(peer_.open());
  peer_.send(ws_test::client_frame(op, payload));
}

void Conn::read() {
  buffer_ += peer_.received();
  for (;;) {
    // A server's frame: FIN|opcode, then the length (never masked).
    if (buffer_.size() < 2) return;
    const auto b0 = static_cast<std::uint8_t>(buffer_[0]);
    const auto b1 = static_cast<std::uint8_t>(buffer_[1]);
    REQUIRE((b1 & 0x80) == 0);  // a server never masks
    REQUIRE((b0 & 0x80) != 0);  // nor fragments what this server sends
    std::size_t at = 2;
    std::uint64_t n = b1 & 0x7f;
    const std::size_t extra = n == 126 ? 2 : n == 127 ? 8 : 0;
    if (buffer_.size() < at + extra) return;
    if (extra > 0) {
      n = 0;
      for (std::size_t i = 0; i < extra; ++i)
        n = n << 8 | static_cast<std::uint8_t>(buffer_[at + i]);
      at += extra;
    }
    if (buffer_.size() < at + n) return;
    const std::string payload = buffer_.substr(at, n);
    buffer_.erase(0, at + n);
    switch (static_cast<ws::Opcode>(b0 & 0x0f)) {
      case ws::Opcode::text: {
        std::size_t from = 0;
        while (from <= payload.size()) {
          const std::size_t nl = payload.find('\n', from);
          const std::string line = payload.substr(from, nl == std::string::npos ? nl : nl - from);
          if (!line.empty()) inbox_.push_back(Json::parse(line));
          if (nl == std::string::npos) break;
          from = nl + 1;
        }
        break;
      }
      case ws::Opcode::ping:
        ++ws_pings_;
        break;
      case ws::Opcode::close:
        REQUIRE(payload.size() >= 2);
        close_code_ = static_cast<std::uint16_t>(static_cast<std::uint8_t>(payload[0]) << 8 |
                                                 static_cast<std::uint8_t>(payload[1]));
        close_reason_ = payload.substr(2);
        break;
      default:
        FAIL("the server sent a frame of opcode " << (b0 & 0x0f));
    }
  }
}

std::vector<Json> Conn::messages() {
  read();
  std::vector<Json> out(inbox_.begin(), inbox_.end());
  inbox_.clear();
  return out;
}

Json Conn::call(const Json& command) {
  send(command.dump());
  read();
  for (auto it = inbox_.begin(); it != inbox_.end(); ++it) {
    if (it->contains("id") && (*it)["id"] == command["id"]) {
      Json reply = std::move(*it);
      inbox_.erase(it);
      return reply;
    }
  }
  FAIL("no reply to " << command.dump() << "; the server sent "
                      << Json(std::vector<Json>(inbox_.begin(), inbox_.end())).dump()
                      << (close_code_ ? " and closed with " + std::to_string(*close_code_) : ""));
  return {};
}

std::vector<Json> Conn::exchange(std::string_view frame) {
  (void)messages();  // what came before is not the answer
  send(frame);
  return messages();
}

// ---- Chat ---------------------------------------------------------------------

Chat::Chat(Settings s) {
  pubsub::BusOptions bus;
  chat::apply_ws_flags(s.flags, config_);
  chat::apply_channel_flags(s.flags, true, bus);
  config_.presence_events = bus.channel.join_leave;
  if (!s.hmac_secret.empty() || !s.channels_config.empty()) {
    auto auth = std::make_shared<chat::AuthSettings>();
    if (!s.hmac_secret.empty()) auth->key = heartwheel::auth::TokenKey::hmac_secret(s.hmac_secret);
    if (!s.channels_config.empty())
      auth->policy = heartwheel::auth::ChannelPolicy::from_json(s.channels_config);
    auth->check_channels = true;
    config_.auth = std::move(auth);
  }
  heartwheel::runtime::WorkersOptions workers;
  (void)chat::apply_workers_flags(s.flags, config_, workers);
  if (s.tweak) s.tweak(config_);
  if (s.tweak_bus) s.tweak_bus(bus);
  bus_ = std::make_unique<pubsub::Bus>(std::move(bus));
  broker_ = std::make_unique<FlakyBroker>(*bus_);
  host_ = std::make_unique<heartwheel::testing::Host>(workers.server.connection);
  worker_ = std::make_unique<chat::Worker>(0, config_, *broker_, roster_, board_);
}

Chat::~Chat() {
  // The connections go first (their clients refer to the worker's hub),
  // then the worker (its hub's and timer's handles close on the host's
  // loop), then the host, whose last loop run finishes those closes.
  for (auto& c : conns_)
    if (heartwheel::net::Connection* conn = c->peer().connection())
      conn->close(heartwheel::net::CloseReason::local);
  host_->poll();
  worker_.reset();
  host_.reset();
}

Conn& Chat::open(std::string_view query) {
  heartwheel::testing::Peer& peer = host_->open(*worker_);
  peer.send("GET /connection/websocket" + std::string(query) +
            " HTTP/1.1\r\nHost: test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
  const std::string got = peer.received();
  REQUIRE(got.rfind("HTTP/1.1 101 Switching Protocols\r\n", 0) == 0);
  const auto end = got.find("\r\n\r\n");
  REQUIRE(end != std::string::npos);
  conns_.push_back(std::make_unique<Conn>(peer));
  conns_.back()->take_bytes(got.substr(end + 4));
  return *conns_.back();
}

Conn& Chat::connect(std::string_view name, const Json& connect, Json* reply) {
  Conn& c = open("?name=" + std::string(name));
  const Json r = c.call({{"id", 1}, {"connect", connect}});
  INFO(r.dump());
  REQUIRE(r.contains("connect"));
  if (reply != nullptr) *reply = r;
  return c;
}

// ---- tokens -------------------------------------------------------------------

std::string hs256_token(const Json& claims, std::string_view secret) {
  return jwt_test::hs256(claims.dump(), secret);
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace centrifuge_test
