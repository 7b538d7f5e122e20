// A client protocol of heartwheel-chat: how a text frame becomes Commands and
// an Answer becomes a reply (command.h has the engine between them).
//
//   chat_codec()        our protocol, docs/chat-protocol.md (GET /ws)
//   centrifuge_codec()  Centrifugo's client protocol v2, JSON
//                       (GET /connection/websocket; docs/centrifugo.md)
//
// The engine's rules are the same for both; what differs is what a codec
// decides here: field names, error codes and which failures end the
// connection (ours answers an error and stays open, except for a refused
// token; Centrifugo's closes on a malformed command, 3501, or a bad token,
// 3500), and the pushes' JSON (publication_json, presence_json): each worker's
// hub encodes a publication once per protocol that has a subscriber of it
// (pubsub::HubOptions::more_encodings).
//
// Threads: the codecs are stateless singletons; any thread.
#pragma once

#include <heartwheel/pubsub/event.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "command.h"

namespace chat {

// What one frame asked: a command, or a failure for it (the reply names
// `id` when it could be read). A Centrifugo pong (an empty command) yields
// nothing.
struct Item {
  std::optional<Command> command;
  std::optional<Failure> failure;
  nlohmann::json id;      // with failure
  Op op = Op::subscribe;  // with failure: what was asked, when known
};

class Codec {
 public:
  enum class Kind : std::uint8_t { chat = 0, centrifuge = 1 };

  virtual ~Codec() = default;
  virtual Kind kind() const noexcept = 0;

  // Appends what `frame` (one text message) asks to `out`: ours takes one
  // request per frame, Centrifugo's one command per line. `max_depth` bounds
  // the JSON's nesting (--max-json-depth).
  virtual void read(std::string_view frame, std::size_t max_depth,
                    std::vector<Item>& out) const = 0;

  // The reply to a command (`to` says which) answered `answer`.
  virtual Response answer(const ReplyTo& to, const Answer& answer) const = 0;

  // Whether a client must send a connect before anything else: ours only
  // with a token key (protocol version 2), Centrifugo's always.
  virtual bool connect_first(bool authenticating) const noexcept = 0;

  // The push that tells a client the server ended its subscription of
  // `channel` (server API unsubscribe).
  virtual std::string unsubscribed(std::string_view channel) const = 0;

  // A publication or a presence event as this protocol pushes it.
  virtual std::string publication_json(const heartwheel::pubsub::Publication& p) const = 0;
  virtual std::string presence_json(const heartwheel::pubsub::PresenceEvent& e) const = 0;
};

const Codec& chat_codec() noexcept;
// The code our protocol answers a failure of `op` with (a refused connect or
// refresh is "unauthorized", whatever refused it; history or presence off in
// the namespace, which Centrifugo's calls not available, "permission_denied"
// as every other denial): also the name
// chat.errors counts it under, whichever protocol the client speaks.
std::string_view chat_error_code(Op op, Fault fault) noexcept;
const Codec& centrifuge_codec() noexcept;
const Codec& codec_of(Codec::Kind kind) noexcept;

// Centrifugo's ClientInfo ({"user","client","conn_info","chan_info"}) of a
// client's presence info as this program keeps it ({"client":ID,"name":N}
// without tokens: the name is the user; {"client":ID,"user":U,"info":I} with
// them: I is conn_info), appended to `out`. Any other text is copied as is.
void append_client_info(std::string& out, std::string_view info);

// The version this server reports (Centrifugo's connect reply `version`,
// the server API's info).
std::string_view server_version() noexcept;

}  // namespace chat
