// heartwheel/common/stat_fields.h - one table of a stats struct's fields, from
// which its merge(), its JSON form and its Prometheus families are derived.
//
// What it is
//   The layers' stats structs (ws::Stats, pubsub::HubStats, rpc::NetHandlerStats,
//   http::SessionStats, net::NetStats, ...) are mostly std::uint64_t counters
//   and gauges. Each struct has one constexpr table, beside its merge() in
//   the layer's stats source, with a row per such member: its JSON key, a
//   pointer to it, counter or gauge, and its Prometheus family and help (the
//   layer writes the families into a MetricSink with write_stat_families:
//   heartwheel/common/metric_families.h).
//   A new field is one line in the table. Members of other shapes (per-reason
//   arrays, maps, histograms, a gauge merged by min) are written by hand
//   beside the table, and a static_assert there checks that the table and
//   those members together cover the struct (stat_fields_cover), so a member
//   added without a row does not compile.
//
//   A labelled Prometheus family is consecutive rows with the same metric
//   name: the first carries the help, each row one sample with its label.
//   A row with an empty name is a second sample of a member an earlier row
//   owns (rpc's pongs sent = pings received): not merged, not in JSON.
//
// Cost: loops over a constexpr array; the JSON form appends to the caller's
// string. Threads: functions of the caller's values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace heartwheel {

enum class StatKind : std::uint8_t { counter, gauge };

template <class S>
struct StatField {
  std::string_view name;  // JSON key; empty: a second view of an earlier row's member
  std::uint64_t S::*member;
  StatKind kind;
  std::string_view metric;  // Prometheus family; empty: not exported
  std::string_view help;    // the family's help (its first row)
  std::string_view label_name = {};
  std::string_view label_value = {};
};

template <class S>
using StatTable = std::span<const StatField<S>>;

// The members the table owns (rows with a name).
template <class S>
constexpr std::size_t stat_members(StatTable<S> table) noexcept {
  std::size_t n = 0;
  for (const StatField<S>& f : table) n += f.name.empty() ? 0 : 1;
  return n;
}

// True when the table's members plus `other_bytes` (the members written by
// hand) are the whole of S: for the static_assert beside each table.
template <class S>
constexpr bool stat_fields_cover(StatTable<S> table, std::size_t other_bytes) noexcept {
  return sizeof(S) == stat_members(table) * sizeof(std::uint64_t) + other_bytes;
}

// The rows through the last one of family `metric`, and the rest: the
// families a struct writes by hand go between, keeping the exposition's
// order. (A metric no row has: nothing, then every row.)
template <class S>
constexpr std::pair<StatTable<S>, StatTable<S>> split_after(StatTable<S> table,
                                                            std::string_view metric) noexcept {
  std::size_t end = 0;
  for (std::size_t i = 0; i < table.size(); ++i)
    if (table[i].metric == metric) end = i + 1;
  return {table.first(end), table.subspan(end)};
}

// Adds every member of `from` to `into` (gauges too: the sum over loops).
template <class S>
void merge_stat_fields(StatTable<S> table, S& into, const S& from) noexcept {
  for (const StatField<S>& f : table)
    if (!f.name.empty()) into.*f.member += from.*f.member;
}

// Appends `s` as a JSON string (quoted; '"', '\\' and control characters
// escaped): the names beside the numbers (an endpoint's address).
inline void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[(c >> 4) & 0xf];
      out += kHex[c & 0xf];
    } else {
      out += c;
    }
  }
  out += '"';
}

// Appends "name":value for every member, comma-separated, to `out`; a comma
// goes first unless `out` ends with '{' (or is empty).
template <class S>
void append_stat_fields_json(std::string& out, StatTable<S> table, const S& s) {
  for (const StatField<S>& f : table) {
    if (f.name.empty()) continue;
    if (!out.empty() && out.back() != '{') out += ',';
    out += '"';
    out += f.name;
    out += "\":";
    out += std::to_string(s.*f.member);
  }
}

}  // namespace heartwheel
