// heartwheel/pubsub/limits.h - the pub/sub layer's error codes and limits.
//
// Errors are std::error_code values in their own category ("pubsub"), so a
// protocol on top can map each to a reply (e.g. the chat server's error JSON)
// and log error_code::message(), which names the limit to raise.
//
// Limits are configured once, on the broker (BusOptions::limits), so every
// hub of a process enforces the same ones. A channel name is 1 to
// max_channel_length bytes of printable ASCII (0x21-0x7e) except the double
// quote and the backslash: it can then be put into JSON, logs and Redis keys
// without escaping, and two spellings never name one channel.
// Threads: everything here is plain data or pure functions; any thread.
#pragma once

#include <cstddef>
#include <string_view>
#include <system_error>

namespace heartwheel::pubsub {

enum class errc {
  ok = 0,
  empty_channel = 1,      // the channel name is empty
  channel_too_long,       // longer than Limits::max_channel_length
  bad_channel_character,  // a byte outside 0x21-0x7e, or '"' or '\'
  channel_limit,          // the subscriber already has Limits::channel_limit channels
  already_subscribed,     // the subscriber is already subscribed to this channel
  not_subscribed,         // unsubscribe from a channel the subscriber is not on
  data_too_large,         // the publication's data is longer than Limits::max_data_bytes
  wrong_hub,              // the subscriber is subscribed through another hub
  unavailable,            // a remote broker's store (Redis) did not answer in time, or is
                          // down with its buffer full: the request may or may not have been
                          // applied (a publish may have been taken: check history)
  too_many_channels,      // a new channel would pass BusOptions::max_channels
};

const std::error_category& pubsub_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), pubsub_category()};
}

struct Limits {
  // Channels one subscriber (connection) may be on at once (Centrifugo's
  // channel_limit default is 128).
  std::size_t channel_limit = 128;
  // Longest channel name, in bytes.
  std::size_t max_channel_length = 255;
  // Largest publication payload, in bytes (the `data`; `info` is not counted).
  std::size_t max_data_bytes = 64 * 1024;

  // Throws std::invalid_argument naming the field when a limit is zero.
  void validate() const;
};

// errc::ok (an empty error_code) if `channel` is a valid name under `limits`,
// else empty_channel, channel_too_long or bad_channel_character.
std::error_code validate_channel(std::string_view channel, const Limits& limits) noexcept;

}  // namespace heartwheel::pubsub

template <>
struct std::is_error_code_enum<heartwheel::pubsub::errc> : std::true_type {};
