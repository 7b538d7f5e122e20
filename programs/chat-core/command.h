// The chat engine's vocabulary: what a client asks (Command), how it can fail
// (Fault) and what it gets back (Answer), whatever protocol carried it.
//
// heartwheel-chat speaks two protocols on one engine: its own
// (docs/chat-protocol.md, at /ws) and Centrifugo's client protocol v2 (JSON,
// at /connection/websocket; docs/centrifugo.md). A protocol is a Codec
// (codec.h): it turns a text frame into Commands and an Answer into the
// reply's text. Everything between (the connect and its token, permissions,
// rate limits, requests in flight, subscribe and recovery, publish, history,
// presence, refresh, the proxies to the application's backend) is the
// Worker's, once, for both (requests.cpp, worker_auth.cpp, proxy_calls.cpp).
//
// Plain data; any thread.
#pragma once

#include <heartwheel/common/time.h>
#include <heartwheel/pubsub/event.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <variant>
#include <vector>

namespace chat {

enum class Op : std::uint8_t {
  connect,
  subscribe,
  unsubscribe,
  publish,
  presence,
  presence_stats,
  history,
  refresh,
  sub_refresh,
  rpc,
  send,
  ping,  // Centrifugo's ping command (answered at once)
};

// "connect", "subscribe", ... (the counters' names: chat.requests).
std::string_view op_name(Op op) noexcept;

// One request of a client, as the engine sees it.
struct Command {
  Op op = Op::subscribe;
  nlohmann::json id;    // echoed in the reply (ours: any JSON; Centrifugo's: a number)
  std::string channel;  // "" where the op has none
  std::string token;    // connect, refresh, a channel token, sub_refresh
  std::string data;     // JSON text: publish, rpc, send, connect's and subscribe's data
  bool has_data = false;
  std::string method;  // rpc
  // subscribe: recover from here; history: the publications after it.
  std::optional<heartwheel::pubsub::StreamPosition> since;
  // history: how many (nullopt: the protocol's default), and which end.
  std::optional<std::uint64_t> limit;
  bool newest = true;         // the newest `limit` (ours), or from the oldest (Centrifugo)
  bool newest_first = false;  // Centrifugo's reverse: listed newest first
  bool server_side = false;   // a subscription the server made (a token's channels)
};

// Why a command failed, in the engine's words: the counters' names
// (chat.errors) and our protocol's error codes. Each codec names or numbers
// it for its clients and decides whether the connection ends.
enum class Fault : std::uint8_t {
  bad_json,
  too_deep,
  bad_request,
  unknown_op,
  requests_in_flight,  // --max-requests-in-flight
  rate_limited,        // --rate-limit
  empty_channel,
  bad_channel,  // the channel policy's: not a channel name
  channel_too_long,
  bad_channel_character,
  channel_limit,
  already_subscribed,
  not_subscribed,
  data_too_large,
  limit_exceeded,  // too many channels on the server (--max-channels)
  unavailable,     // Redis did not answer in time
  internal,
  unauthorized,            // no connect first, or a connection token refused
  token_expired,           // a token past its exp
  permission_denied,       // the channel policy, or a channel token refused
  unknown_channel,         // a namespace not configured
  not_available,           // the operation is off here (e.g. no RPC without a proxy)
  method_not_found,        // rpc without --proxy-rpc-endpoint
  unrecoverable_position,  // history since a position of another epoch
  connect_timeout,         // no connect within --connect-timeout
  connection_expired,      // the token's expiry passed without a refresh
  backend_down,            // a proxy's backend did not answer in --proxy-timeout, or failed
  backend_error,           // the backend answered {"error":{code,message}}: Failure::code
  backend_disconnect,      // the backend answered {"disconnect":{code,reason}}: Failure::code
};

// "bad_json", "too_deep", ...: our protocol's codes (docs/chat-protocol.md),
// also the counters' names.
std::string_view fault_name(Fault fault) noexcept;

// The fault of a pub/sub error (pubsub::errc; any other category: internal).
Fault fault_of(const std::error_code& ec) noexcept;

struct Failure {
  Fault fault = Fault::internal;
  std::string message;
  std::uint32_t code = 0;  // backend_error / backend_disconnect: the backend's number
};

// ---- answers ------------------------------------------------------------------

struct ConnectAnswer {
  std::string client;  // the connection's id
  std::string user;
  std::string name;  // our protocol version 1: the name shown to others
  unsigned worker = 0;
  heartwheel::Duration ping_interval{};  // 0: no pings
  // With an expiry: how long the connection lives without a refresh (the
  // token's exp + the verifier's leeway: when it is closed) and until exp
  // itself (when a client should have refreshed).
  std::optional<heartwheel::Duration> expires_in;
  std::optional<heartwheel::Duration> ttl;
  std::string data;  // JSON text the backend's connect proxy sent; "" none
};

struct SubscribeAnswer {
  heartwheel::pubsub::StreamPosition position;  // live publications follow this offset
  bool recovering = false;                      // asked with `since`
  bool recovered = false;                       // every missed publication is in `publications`
  bool recoverable = false;  // the channel keeps history (offsets a client may recover from)
  std::vector<heartwheel::pubsub::PublicationPtr> publications;  // oldest first
  std::uint64_t subscribers = 0;
  std::optional<heartwheel::Duration> ttl;  // a channel token's: until its exp
  std::string data;                         // JSON text from the subscribe proxy; "" none
};

struct PublishAnswer {
  heartwheel::pubsub::StreamPosition position;
};

struct Member {
  std::string client;  // the connection's id
  std::string info;    // its presence info (JSON text, client_info / user_info)
};

struct PresenceAnswer {
  std::uint64_t count = 0;      // subscribers on every worker and node
  std::vector<Member> members;  // this node's, ordered by client, cut to fit
  std::size_t total = 0;        // this node's members before the cut
};

struct PresenceStatsAnswer {
  std::uint64_t clients = 0;
  std::uint64_t users = 0;
};

struct HistoryAnswer {
  heartwheel::pubsub::StreamPosition top;  // the stream's top now ({0, ""}: none)
  std::vector<heartwheel::pubsub::PublicationPtr> publications;  // oldest first
  bool truncated = false;                                        // cut to --max-reply-bytes
};

struct RefreshAnswer {
  std::string client;
  std::optional<heartwheel::Duration> expires_in;  // as in ConnectAnswer
  std::optional<heartwheel::Duration> ttl;
};

struct RpcAnswer {
  std::string data;  // JSON text; "" none
};

struct Done {};  // unsubscribe, send

using Answer =
    std::variant<Failure, Done, ConnectAnswer, SubscribeAnswer, PublishAnswer, PresenceAnswer,
                 PresenceStatsAnswer, HistoryAnswer, RefreshAnswer, RpcAnswer>;

// What an answer becomes on the wire: the reply's text ("" none) and, when
// close_code is set, a WebSocket close after it.
struct Response {
  Response() = default;
  Response(std::string reply) : text(std::move(reply)) {}  // NOLINT: a reply converts
  Response(std::string reply, std::uint16_t code, std::string reason)
      : text(std::move(reply)), close_code(code), close_reason(std::move(reason)) {}

  std::string text;
  std::uint16_t close_code = 0;
  std::string close_reason;
};

// The part of a command its answer needs (the command itself is gone when
// a broker or a backend answers).
struct ReplyTo {
  Op op = Op::subscribe;
  nlohmann::json id;
  std::string channel;
  bool server_side = false;
  bool newest_first = false;
};

}  // namespace chat
