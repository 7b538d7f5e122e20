// Centrifugo's client protocol v2 in JSON (centrifugal/protocol, client.proto:
// field names as there): the pushes and the parts of replies that hold
// publications, built as text. Publications keep their data as JSON text
// (parsed and dumped once, when published), spliced in without parsing;
// their publisher's info goes out as Centrifugo's ClientInfo
// (append_client_info, codec.h).
//
// Pure functions; any thread.
#pragma once

#include <heartwheel/common/time.h>
#include <heartwheel/pubsub/event.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace chat {

// {"data":D[,"info":CI],"offset":N}: an element of `publications`, and the
// `pub` of a push.
void append_centrifuge_publication(std::string& out, const heartwheel::pubsub::Publication& p);
// "[p1,p2,...]": in the order given, or newest first when `reverse`.
std::string centrifuge_publications(const std::vector<heartwheel::pubsub::PublicationPtr>& list,
                                    bool reverse = false);

// {"push":{"channel":C,"pub":{...}}}
std::string centrifuge_publication_push(const heartwheel::pubsub::Publication& p);
// {"push":{"channel":C,"join"|"leave":{"info":CI}}}
std::string centrifuge_presence_push(const heartwheel::pubsub::PresenceEvent& e);
// {"push":{"channel":C,"unsubscribe":{"code":2000,"reason":"server unsubscribe"}}}
std::string centrifuge_unsubscribe_push(std::string_view channel);

// Centrifugo's `ping` (whole seconds, rounded up, at least 1: a client that
// expects a ping by then is never disappointed) and `ttl` (whole seconds
// until the token's exp, rounded down: a client refreshing then is early).
std::uint32_t ping_seconds(heartwheel::Duration d) noexcept;
std::uint32_t ttl_seconds(heartwheel::Duration d) noexcept;

// `s` as a JSON string literal (for channel names and ids, which need no
// escaping as a rule, and for text that may).
void append_json_string(std::string& out, std::string_view s);

}  // namespace chat
