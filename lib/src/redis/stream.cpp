// Stream ids and the shapes of XRANGE / XREAD replies (stream.h).
#include <heartwheel/common/error.h>
#include <heartwheel/redis/error.h>
#include <heartwheel/redis/stream.h>

#include <charconv>

namespace heartwheel::redis {

namespace {

std::optional<std::uint64_t> parse_u64(std::string_view s) noexcept {
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

bool valid_entry(const Reply& e) noexcept {
  if (!e.is_array() || e.size() != 2 || !e[0].is_string()) return false;
  const Reply& fields = e[1];
  if (fields.is_nil()) return true;
  if (!fields.is_array() || fields.size() % 2 != 0) return false;
  for (const Reply& f : fields.elements())
    if (!f.is_string()) return false;
  return true;
}

bool valid_entries(const Reply& r) noexcept {
  if (!r.is_array()) return false;
  for (const Reply& e : r.elements())
    if (!valid_entry(e)) return false;
  return true;
}

// Precondition: valid_entries(r).
void take_entries(Reply& r, std::vector<StreamEntry>& out) {
  out.reserve(out.size() + r.size());
  for (Reply& e : r.elements()) {
    StreamEntry entry;
    entry.id = e.elements()[0].take_str();
    auto& fields = e.elements()[1].elements();
    entry.fields.reserve(fields.size() / 2);
    for (std::size_t i = 0; i + 1 < fields.size(); i += 2)
      entry.fields.emplace_back(fields[i].take_str(), fields[i + 1].take_str());
    out.push_back(std::move(entry));
  }
}

}  // namespace

std::optional<StreamId> StreamId::parse(std::string_view text) noexcept {
  const std::size_t dash = text.find('-');
  const auto ms = parse_u64(text.substr(0, dash));
  if (!ms) return std::nullopt;
  if (dash == std::string_view::npos) return StreamId{*ms, 0};
  const auto seq = parse_u64(text.substr(dash + 1));
  if (!seq) return std::nullopt;
  return StreamId{*ms, *seq};
}

std::string StreamId::to_string() const { return std::to_string(ms) + '-' + std::to_string(seq); }

StreamId StreamId::successor() const noexcept {
  if (seq != UINT64_MAX) return {ms, seq + 1};
  return {ms + 1, 0};
}

std::optional<std::string_view> StreamEntry::field(std::string_view name) const noexcept {
  for (const auto& [k, v] : fields)
    if (k == name) return std::string_view(v);
  return std::nullopt;
}

std::error_code parse_entries(Reply&& reply, std::vector<StreamEntry>& out) {
  if (reply.is_error()) return errc::server_error;
  if (!valid_entries(reply)) return heartwheel::errc::protocol_error;
  take_entries(reply, out);
  return {};
}

std::error_code parse_xread(Reply&& reply, std::vector<StreamEntries>& out) {
  if (reply.is_error()) return errc::server_error;
  if (reply.is_nil()) return {};
  if (!reply.is_array()) return heartwheel::errc::protocol_error;
  for (const Reply& s : reply.elements())
    if (!s.is_array() || s.size() != 2 || !s[0].is_string() || !valid_entries(s[1]))
      return heartwheel::errc::protocol_error;
  out.reserve(out.size() + reply.size());
  for (Reply& s : reply.elements()) {
    StreamEntries one;
    one.stream = s.elements()[0].take_str();
    take_entries(s.elements()[1], one.entries);
    out.push_back(std::move(one));
  }
  return {};
}

}  // namespace heartwheel::redis
