// heartwheel/redis/stream.h - Redis Streams replies as values: entry ids,
// XRANGE / XREVRANGE entries and XREAD results.
//
// A broker keeping channel history in a stream (XADD ch MAXLEN ~ N * data d)
// gets the new entry's id from XADD (a bulk string: StreamId::parse), and
// reads history back with XRANGE ch (after-id + ... or XREVRANGE ... COUNT n:
// parse_entries) or XREAD (parse_xread). Ids order like the stream ("<ms>-<seq>",
// compared numerically), so the last id delivered is a resume position.
//
// Errors: parse_* return errc::server_error (heartwheel/redis/error.h) when
// the reply is a Redis error, heartwheel::errc::protocol_error when it is not
// shaped like the command's reply; `out` is then unchanged.
// Threads: plain values and pure functions.
#pragma once

#include <heartwheel/redis/reply.h>

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace heartwheel::redis {

struct StreamId {
  std::uint64_t ms = 0;
  std::uint64_t seq = 0;

  // "1700000000000-3" (or "1700000000000", seq 0); nullopt otherwise.
  static std::optional<StreamId> parse(std::string_view text) noexcept;
  std::string to_string() const;
  // The smallest id after this one (for an exclusive XRANGE start on
  // Redis < 6.2; 6.2+ also takes "(" + id).
  StreamId successor() const noexcept;

  auto operator<=>(const StreamId&) const = default;
};

struct StreamEntry {
  std::string id;
  std::vector<std::pair<std::string, std::string>> fields;  // in the order XADD gave them

  // The value of the first field called `name`; nullopt if there is none.
  std::optional<std::string_view> field(std::string_view name) const noexcept;
};

// The entries of one stream, as XREAD returns them per stream.
struct StreamEntries {
  std::string stream;
  std::vector<StreamEntry> entries;
};

// XRANGE / XREVRANGE (an array of [id, [field, value, ...]]): appends to
// `out`. An entry whose fields are nil (deleted, as XCLAIM may return) gets
// no fields.
std::error_code parse_entries(Reply&& reply, std::vector<StreamEntry>& out);
// XREAD / XREADGROUP (nil when nothing came, else [[stream, entries], ...]):
// appends one StreamEntries per stream to `out`.
std::error_code parse_xread(Reply&& reply, std::vector<StreamEntries>& out);

}  // namespace heartwheel::redis
