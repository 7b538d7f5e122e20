// The per-connection budgets of the chat protocol (issue 23): how big one
// reply may be, and how a reply that does not fit is cut.
//
// - history: the newest publications that fit in --max-reply-bytes; the
//   reply then says "truncated":true and "limit":N (how many it carries).
// - subscribe with recovery: the missed publications are all or nothing (a
//   partial recovery would be a silent gap): when they do not fit, none are
//   sent and the reply says "recovered":false (the client reloads history).
// - presence: the member list is cut to fit ("truncated":true and
//   "limit":N, as for the 1,000-member cap).
// Replies are also subject to the slow-consumer rule (worker's send_reply)
// and to --max-requests-in-flight (requests.cpp).
//
// Pure functions; any thread. Cost: one pass over the list.
#pragma once

#include <heartwheel/pubsub/event.h>

#include <cstddef>
#include <string>
#include <vector>

namespace chat {

// Bytes a reply may hold besides its list (id, position, field names).
inline constexpr std::size_t kReplyEnvelopeBytes = 512;

// An upper bound of append_publication's output for `p`, plus a comma.
std::size_t publication_json_bytes(const heartwheel::pubsub::Publication& p) noexcept;

// How many of the newest publications of `list` (oldest first) fit in
// `budget` bytes of JSON; at least 0, at most list.size().
std::size_t newest_that_fit(const std::vector<heartwheel::pubsub::PublicationPtr>& list,
                            std::size_t budget) noexcept;

// The total of publication_json_bytes over `list`.
std::size_t publications_json_bytes(
    const std::vector<heartwheel::pubsub::PublicationPtr>& list) noexcept;

// How many of `members` (JSON texts) fit in `budget` bytes, in order.
std::size_t members_that_fit(const std::vector<std::string>& members, std::size_t budget) noexcept;

}  // namespace chat
