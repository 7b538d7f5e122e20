// heartwheel-push's HTTP API, the parts without I/O: reading a POST /publish
// body and writing the JSON answers (README.md, "HTTP API", is the contract).
#pragma once

#include <heartwheel/pubsub/limits.h>
#include <heartwheel/common/time.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace pushsrv {

// A valid POST /publish body.
struct PublishRequest {
  std::string channel;
  std::string data;  // the "data" value as compact JSON text
  std::int64_t delay_ms = 0;
  // Centrifugo's idempotency_key (immediate publishes only): a retry with
  // it within 5 minutes, on any node, is answered with the first one's
  // offset and not delivered again. Empty: none.
  std::string idempotency_key;
};

// A refused one: the HTTP status (400) and the answer's code and message.
struct ApiError {
  int status = 400;
  std::string code;  // "bad_json", "bad_request", "empty_channel", ...
  std::string message;
};

// Parses {"channel":"c","data":<JSON>,"delay_ms":N,"idempotency_key":K}
// (a key: 1 to 256 bytes without control characters, with delay_ms 0). `max_delay` bounds
// delay_ms; the channel is checked against `limits`, the data's JSON text
// against limits.max_data_bytes; a body nesting deeper than `max_depth` is
// refused while parsing ("too_deep").
std::variant<PublishRequest, ApiError> parse_publish(std::string_view body,
                                                     const heartwheel::pubsub::Limits& limits,
                                                     heartwheel::Duration max_delay,
                                                     std::size_t max_depth);

// True for "application/json", with any parameters ("; charset=utf-8") and
// in any case; false for anything else or no header.
bool is_json_content_type(const std::string* value);

// {"error":{"code":C,"message":M}}
std::string error_json(std::string_view code, std::string_view message);
// {"id":ID,"due_ms":N}: a delayed push stored.
std::string accepted_json(std::string_view id, std::int64_t due_ms);
// {"id":ID,"due_ms":N,"offset":O,"epoch":E}: an immediate publication,
// published (O and E: its place in the channel's stream).
std::string published_json(std::string_view id, std::int64_t due_ms, std::uint64_t offset,
                           std::string_view epoch);

// The id of DELETE /publish/{id}: what follows "/publish/", if it looks like
// an id ([0-9a-zA-Z-], 1..128 bytes); empty otherwise.
std::string_view id_from_path(std::string_view path);

}  // namespace pushsrv
