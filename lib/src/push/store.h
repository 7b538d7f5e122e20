// What a DelayedQueue keeps in Redis: the scripts that change it atomically
// and the payload's encoding. Private to lib/src/push.
#pragma once

#include <heartwheel/redis/command.h>

#include <optional>
#include <string>
#include <string_view>

namespace heartwheel::push::detail {

// KEYS: due, data. ARGV: id, due ms, payload. Stores payload then due time.
const redis::Script& schedule_script();
// KEYS: due, data, claims. ARGV: id, lease deadline ms. The payload if the
// push was still due (it moves to claims), nil otherwise.
const redis::Script& claim_script();
// KEYS: due, data, claims. ARGV: id. Forgets the push everywhere.
const redis::Script& ack_script();
// KEYS: due, data. ARGV: id, "*" (any owner) or "=" owner. 1 if it was
// still due and its owner matched (removed), else 0.
const redis::Script& cancel_script();
// KEYS: due, data, claims. ARGV: now ms, limit. Moves claims whose lease
// ended back to due (due now); returns their ids.
const redis::Script& reap_script();

// "<channel length>:<channel><data>": binary-safe, one hash field; with an
// owner, "~<owner length>:<owner>" before it (a payload stored before owners
// existed has none, and decodes with an empty owner).
std::string encode_payload(std::string_view channel, std::string_view data,
                           std::string_view owner = {});
// nullopt if `payload` is not one.
struct Payload {
  std::string channel;
  std::string data;
  std::string owner;
};
std::optional<Payload> decode_payload(std::string_view payload);

}  // namespace heartwheel::push::detail
