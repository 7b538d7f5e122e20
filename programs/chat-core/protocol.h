// The chat protocol's messages (docs/chat-protocol.md is the contract): the
// JSON of pushes and replies, built as text. Publications carry their data as
// JSON text already (it was parsed and dumped once, when published), so a
// push or a history reply splices it in without parsing it again.
#pragma once

#include <heartwheel/pubsub/event.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace heartwheel::pubsub {
struct RedisBrokerOptions;
}

namespace chat {

using Json = nlohmann::json;

// {"channel":C,"offset":N,"epoch":E,"data":D[,"info":I]}: a push, and an
// element of "publications" in subscribe and history replies.
void append_publication(std::string& out, const heartwheel::pubsub::Publication& p);
std::string publication_json(const heartwheel::pubsub::Publication& p);
// {"channel":C,"join"|"leave":I,"count":K}
std::string presence_json(const heartwheel::pubsub::PresenceEvent& e);
// "[p1,p2,...]" (oldest first, as given).
std::string publications_json(const std::vector<heartwheel::pubsub::PublicationPtr>& list);

// A reply: {"id":ID,"ok":true<fields>} where `fields` is "" or starts with
// a comma (",\"offset\":3").
std::string ok_reply(const Json& id, std::string_view fields = {});
// {"id":ID,"error":{"code":CODE,"message":MESSAGE}}
std::string error_reply(const Json& id, std::string_view code, std::string_view message);

// The protocol's error code for a pub/sub error: "empty_channel",
// "channel_too_long", "bad_channel_character", "channel_limit",
// "already_subscribed", "not_subscribed", "data_too_large", or "internal".
std::string error_code_name(const std::error_code& ec);

// Makes a RedisBroker encode each publication and presence event once per
// node, as this protocol's WebSocket text frame, which every worker's
// subscribers then share.
void encode_as_ws_frames(heartwheel::pubsub::RedisBrokerOptions& options);

// A client's presence info: {"client":ID,"name":NAME}.
std::string client_info(std::string_view client_id, std::string_view name);

// True when `utf8` (valid UTF-8) is safe to show others as a name: no
// control character (C0, DEL, C1 such as U+0085), no line or paragraph
// separator (U+2028, U+2029) and no bidirectional formatting character
// (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069: U+202E would show
// "alice\u202Egnp.exe" as "aliceexe.png"). Names and a token's `sub` reach
// every subscriber's screen.
bool displayable_name(std::string_view utf8) noexcept;

// The `name` query parameter of /ws, percent-decoded ('+' is a space).
// nullopt when absent. Throws std::invalid_argument with the reason when it
// is not a name: bad escapes, not UTF-8, not displayable_name (control or
// bidirectional characters), longer than kMaxNameBytes, or empty.
inline constexpr std::size_t kMaxNameBytes = 64;
std::optional<std::string> name_from_query(std::string_view query);

}  // namespace chat
