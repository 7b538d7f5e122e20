// JSON parsing with a nesting-depth limit, for text from the network.
//
// Why: nlohmann::json parses iteratively, but copying, comparing and dumping a
// value recurse once per level, so a message nested 80,000 deep (it fits in
// 160 KB) overflows the stack the first time it is copied or dumped. The limit
// is enforced while parsing: the parser's callback sees each array or object
// start with its depth and stops the parse at the first one too deep, so
// the work done on a refused text is bounded by where the limit is crossed.
//
// Header-only (the includer links nlohmann_json); no state; any thread.
// Cost: nlohmann's callback parser (one std::function call per value) instead
// of the plain one.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

namespace heartwheel::cli {

// The depth limit every program uses unless told otherwise (--max-json-depth).
inline constexpr std::size_t kDefaultMaxJsonDepth = 64;

struct BoundedJson {
  enum class Status { ok, not_json, too_deep };
  Status status = Status::ok;
  nlohmann::json value;  // discarded unless ok
};

// Parses `text`; a text whose arrays and objects nest more than `max_depth`
// deep (the top-level value counts as 1, so max_depth 1 allows `[1,2]` but
// not `[[1]]`) is too_deep, whatever follows the point where that shows.
// Precondition: max_depth >= 1.
inline BoundedJson parse_bounded_json(std::string_view text, std::size_t max_depth) {
  struct TooDeep {};
  BoundedJson out;
  try {
    out.value = nlohmann::json::parse(
        text,
        [max_depth](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
          // `depth` counts the containers around this one.
          if ((event == nlohmann::json::parse_event_t::object_start ||
               event == nlohmann::json::parse_event_t::array_start) &&
              static_cast<std::size_t>(depth) >= max_depth)
            throw TooDeep{};
          return true;
        },
        /*allow_exceptions=*/false);
  } catch (const TooDeep&) {
    out.status = BoundedJson::Status::too_deep;
    out.value = nlohmann::json(nlohmann::json::value_t::discarded);
    return out;
  }
  if (out.value.is_discarded()) out.status = BoundedJson::Status::not_json;
  return out;
}

}  // namespace heartwheel::cli
