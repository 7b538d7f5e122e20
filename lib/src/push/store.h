// What a DelayedQueue keeps in Redis: the scripts that change it atomically
// and the payload's encoding. Private to lib/src/push.
#pragma once

#include <heartwheel/redis/command.h>

#include <optional>
#include <string>
#include <string_view>

namespace heartwheel::push::detail {

// Every push's owner is counted in an "owners" hash (owner -> pushes stored
// and not yet acknowledged or cancelled), in the same script that stores or
// removes the payload: the count cannot drift from what is stored.
//
// KEYS: due, data, owners. ARGV: id, due ms, payload, owner, cap (0: none).
// Stores payload then due time and counts the owner, unless the owner has
// `cap` pushes already: then 0 and nothing is stored. 1 otherwise (also for
// an id already stored, which is not counted again).
const redis::Script& schedule_script();
// KEYS: due, data, claims. ARGV: id, lease deadline ms. The payload if the
// push was still due (it moves to claims), nil otherwise.
const redis::Script& claim_script();
// KEYS: due, data, claims, owners. ARGV: id. Forgets the push everywhere
// and uncounts it (only if its payload was still there).
const redis::Script& ack_script();
// KEYS: due, data, owners. ARGV: id, "*" (any owner) or "=" owner. 1 if it
// was still due and its owner matched (removed and uncounted), else 0.
const redis::Script& cancel_script();
// KEYS: due, data, claims. ARGV: now ms, limit. Moves claims whose lease
// ended back to due (due now); returns their ids.
const redis::Script& reap_script();

// "~<owner length>:<owner><channel length>:<channel><data>": binary-safe,
// one hash field. A payload stored before owners were counted may lack the
// owner part: it decodes with an empty owner.
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
