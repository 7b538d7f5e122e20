// heartwheel/net/names.h - how a layer above net names its own deadline
// kinds and close reasons.
//
// net counts deadline events and closes per number (NetStats::idle_events,
// closed_by_reason) and spells each number in JSON statistics and metric
// labels by its name. net names its own; a layer registers a name for each
// number it took (deadline.h, close_reason.h), and a deadline kind also
// registers the reason it closes with (close_reason_for).
//
// Use: in the layer's public header, next to its numbers,
//
//   namespace close_reason { inline constexpr net::CloseReason body_timeout{33}; }
//   namespace deadline { inline constexpr net::Deadline body_timeout{17}; }
//   inline constexpr net::CloseReasonName kCloseReasonNames[] = {
//       {close_reason::body_timeout, "body_timeout"}};
//   inline constexpr net::DeadlineName kDeadlineNames[] = {
//       {deadline::body_timeout, "body_timeout", close_reason::body_timeout}};
//   inline const net::NameRegistrar kNames{kCloseReasonNames, kDeadlineNames};
//
// The registrar is an inline variable, so every program that compiles the
// header into code it links registers the names during static
// initialization, before main, in every process and thread alike: a process
// that never ran the layer still names its numbers (a pre-forking parent
// merging its children's counters, a worker that never served that
// protocol). The same registration seen again (several translation units,
// a static and a shared copy of the library) is accepted.
//
// Errors are programming errors found at start: a number outside the
// layers' range, a number already named otherwise, a name already used for
// another number of the same sort, a name that is not [a-z0-9_]+ (it
// becomes a JSON key and a label value), a kind whose reason has no name.
// NameRegistrar prints the conflict and aborts; register_name returns it.
//
// Cost: registration takes a mutex and scans the names (start-up only).
// Lookups (to_string, is_named, close_reason_for) are one atomic load,
// lock-free, from any thread: the table is constant-initialized, so it is
// valid before any static initializer runs.
#pragma once

#include <heartwheel/net/close_reason.h>
#include <heartwheel/net/deadline.h>

#include <cstdint>
#include <span>

namespace heartwheel::net {

// A layer's close reason and its spelling. Must have static storage
// duration (the registry keeps its address).
struct CloseReasonName {
  CloseReason reason;
  const char* name;
};

// A layer's deadline kind, its spelling and the reason it closes with. Same
// storage rule.
struct DeadlineName {
  Deadline kind;
  const char* name;
  CloseReason reason;
};

enum class NameStatus : std::uint8_t {
  added,          // registered now
  already,        // this very registration (same number, name and reason) was there
  reserved,       // the number is net's own (below kLayer...First)
  out_of_range,   // the number is kCloseReasonCapacity / kDeadlineCapacity or more
  number_taken,   // the number has another name (or another reason)
  name_taken,     // another number of the same sort has this name
  bad_name,       // null, empty, or not [a-z0-9_]+
  reason_unnamed, // a kind's close reason has no name (register reasons first)
};

// Registers one name. Thread-safe. `n` must outlive every lookup.
NameStatus register_name(const CloseReasonName& n) noexcept;
NameStatus register_name(const DeadlineName& n) noexcept;

// "added", "number_taken", ...: for messages.
const char* to_string(NameStatus status) noexcept;

// Registers the reasons, then the kinds, when constructed (see the use
// above). On any status but added or already it prints which number and name
// conflict (and with what) to the log (common/log.h) and calls std::abort(): two layers
// claiming one number would merge unrelated counters.
class NameRegistrar {
 public:
  NameRegistrar(std::span<const CloseReasonName> reasons,
                std::span<const DeadlineName> kinds) noexcept;
};

}  // namespace heartwheel::net
