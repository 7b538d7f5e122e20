// heartwheel-chat's engine (chat::Worker, programs/chat-core) on a
// testing::Host, spoken to frame by frame at /connection/websocket as a
// Centrifugo client would: the real handshake, masked text frames of JSON
// commands, and the server's frames read back and parsed here (not with the
// library's decoder, so the tests do not check the ws layer with itself).
// Time is the Host's virtual clock: pings, pong timeouts, the connect
// timeout and token expiry fire on the connection's deadline slots when a
// test advances it, never by sleeping.
//
//   centrifuge_test::Chat chat;                 // production defaults (chat::WsFlags)
//   auto& alice = chat.connect("alice");        // handshake + connect command
//   Json r = alice.call({{"id", 2}, {"subscribe", {{"channel", "room"}}}});
//   CHECK(r["subscribe"]["recoverable"] == true);
//
// Ownership: Chat owns the broker, the Worker, the Host and every Conn.
// Threads: the test's only.
#pragma once

#include <heartwheel/net/connection.h>
#include <heartwheel/pubsub/broker.h>
#include <heartwheel/pubsub/bus.h>
#include <heartwheel/testing/host.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "roster.h"
#include "stats_board.h"
#include "worker.h"
#include "ws_flags.h"

namespace centrifuge_test {

using Json = nlohmann::json;

// The in-process Bus, except that publishes fail with errc::unavailable while
// `fail_publishes` is set (a Redis that did not answer in time), and wait
// for release_publishes() while `hold_publishes` is (a Redis that answers
// later).
class FlakyBroker final : public heartwheel::pubsub::Broker {
 public:
  explicit FlakyBroker(heartwheel::pubsub::Bus& bus) : bus_(bus) {}
  bool fail_publishes = false;
  bool hold_publishes = false;
  // Hands the publishes held so far to the bus, in order.
  void release_publishes();

  const heartwheel::pubsub::Limits& limits() const noexcept override { return bus_.limits(); }
  bool completes_inline() const noexcept override { return true; }
  using Broker::publish;
  void publish(heartwheel::pubsub::Inbox& from, std::string_view channel, std::string data,
               std::string info, const heartwheel::pubsub::PublishOptions& options,
               heartwheel::pubsub::PublishDone done) override;
  void join(heartwheel::pubsub::Inbox& inbox, const heartwheel::pubsub::JoinRequest& request,
            heartwheel::pubsub::JoinDone done) override {
    bus_.join(inbox, request, std::move(done));
  }
  void leave(heartwheel::pubsub::Inbox& inbox, std::string_view channel, std::string_view info,
             bool last_local) override {
    bus_.leave(inbox, channel, info, last_local);
  }
  void history(heartwheel::pubsub::Inbox& from, std::string_view channel, std::size_t limit,
               heartwheel::pubsub::HistoryDone done) override {
    bus_.history(from, channel, limit, std::move(done));
  }
  void presence(heartwheel::pubsub::Inbox& from, std::string_view channel,
                heartwheel::pubsub::PresenceDone done) override {
    bus_.presence(from, channel, std::move(done));
  }
  void remove_history(heartwheel::pubsub::Inbox& from, std::string_view channel,
                      heartwheel::pubsub::RemoveDone done) override {
    bus_.remove_history(from, channel, std::move(done));
  }
  void sweep() override { bus_.sweep(); }
  heartwheel::Duration sweep_interval() const noexcept override { return bus_.sweep_interval(); }
  void attach(heartwheel::pubsub::Inbox& inbox) override { bus_.attach(inbox); }
  void detach(heartwheel::pubsub::Inbox& inbox) noexcept override { bus_.detach(inbox); }

 private:
  heartwheel::pubsub::Bus& bus_;
  std::vector<std::function<void()>> held_;
};

// What a Chat is made with: heartwheel-chat's flags (their defaults unless
// changed), and optionally a token key and a channels config.
struct Settings {
  chat::WsFlags flags;
  std::string hmac_secret;      // --token-hmac-secret-file's content; "" none
  std::string channels_config;  // --channels-config's JSON; "" none
  // Last word on the worker's configuration (rate limits, budgets).
  std::function<void(chat::Config&)> tweak;
  // Last word on the bus's options (limits, history).
  std::function<void(heartwheel::pubsub::BusOptions&)> tweak_bus;
};

// One client connection after the WebSocket handshake.
class Conn {
 public:
  explicit Conn(heartwheel::testing::Peer& peer) : peer_(peer) {}

  // One masked text frame (a browser's), holding `text` as it is.
  void send(std::string_view text);
  // A frame of another kind (ping, pong, close, binary).
  void send_frame(heartwheel::ws::Opcode op, std::string_view payload);

  // Every JSON value the server sent since the last call, in order: each
  // line of each text frame (replies, pushes, the server's ping `{}`).
  std::vector<Json> messages();
  // Sends `command` and returns the reply carrying its id (REQUIREs that
  // one came, and leaves any other message for messages()).
  Json call(const Json& command);
  // Sends `frame` (commands, one per line) and returns every message sent
  // in answer, in order.
  std::vector<Json> exchange(std::string_view frame);

  // WebSocket pings the server sent so far (not Centrifugo's `{}`).
  int ws_pings() {
    read();
    return ws_pings_;
  }
  // The code of the server's close frame, once one came.
  std::optional<std::uint16_t> close_code() {
    read();
    return close_code_;
  }
  std::string close_reason() {
    read();
    return close_reason_;
  }
  // The TCP connection is still open.
  bool open() const noexcept { return peer_.open(); }
  heartwheel::testing::Peer& peer() noexcept { return peer_; }

  // What the handshake's response left after the 101 (frames sent at once).
  void take_bytes(std::string bytes) { buffer_ += std::move(bytes); }

 private:
  void read();  // parses every whole frame received into the queues below

  heartwheel::testing::Peer& peer_;
  std::string buffer_;
  std::deque<Json> inbox_;
  int ws_pings_ = 0;
  std::optional<std::uint16_t> close_code_;
  std::string close_reason_;
};

class Chat {
 public:
  explicit Chat(Settings settings = {});
  ~Chat();
  Chat(const Chat&) = delete;
  Chat& operator=(const Chat&) = delete;

  // A connection to /connection/websocket`query` (e.g. "?name=alice"),
  // handshake done, nothing sent on it yet.
  Conn& open(std::string_view query);
  // open("?name=" + name), then a connect command (id 1) with `connect`'s
  // fields; REQUIREs a connect result and returns the reply.
  Conn& connect(std::string_view name, const Json& connect = Json::object(), Json* reply = nullptr);

  heartwheel::testing::Host& host() noexcept { return *host_; }
  const chat::Config& config() const noexcept { return config_; }
  heartwheel::pubsub::Bus& bus() noexcept { return *bus_; }
  FlakyBroker& broker() noexcept { return *broker_; }

 private:
  std::unique_ptr<heartwheel::pubsub::Bus> bus_;  // outlives the hub
  std::unique_ptr<FlakyBroker> broker_;
  chat::Roster roster_;
  chat::StatsBoard board_{1};
  chat::Config config_;
  std::unique_ptr<heartwheel::testing::Host> host_;  // after the worker is gone: closes its handles
  std::unique_ptr<chat::Worker> worker_;
  std::vector<std::unique_ptr<Conn>> conns_;
};

// An HS256 JWT of `claims` signed with `secret`.
std::string hs256_token(const Json& claims, std::string_view secret);
// Seconds since the epoch, now (the verifier reads the wall clock).
std::int64_t unix_now();

}  // namespace centrifuge_test
