// See centrifuge_json.h.
#include "centrifuge_json.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "codec.h"

namespace chat {

namespace pubsub = heartwheel::pubsub;

void append_json_string(std::string& out, std::string_view s) {
  // Channel names are printable ASCII without '"' or '\' and ids are
  // digits and '-': they go as they are; anything else through the library.
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\' || u < 0x20 || u >= 0x7f) {
      out += nlohmann::json(std::string(s))
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      return;
    }
  }
  out += '"';
  out += s;
  out += '"';
}

namespace {

// The index just past the JSON string literal that starts at `at` (a '"'),
// or npos if there is none.
std::size_t string_end(std::string_view s, std::size_t at) noexcept {
  if (at >= s.size() || s[at] != '"') return std::string_view::npos;
  for (std::size_t i = at + 1; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

bool starts_at(std::string_view s, std::size_t at, std::string_view what) noexcept {
  return s.substr(at, what.size()) == what;
}

}  // namespace

void append_client_info(std::string& out, std::string_view info) {
  // Our infos are made by client_info ({"client":ID,"name":N}) and
  // user_info ({"client":ID,"user":U[,"info":I]}), keys in that order.
  constexpr std::string_view kClient = "{\"client\":";
  const std::size_t client_end =
      starts_at(info, 0, kClient) ? string_end(info, kClient.size()) : std::string_view::npos;
  if (client_end == std::string_view::npos) {
    out += info.empty() ? std::string_view("{}") : info;
    return;
  }
  const bool named = starts_at(info, client_end, ",\"name\":");
  const bool user = starts_at(info, client_end, ",\"user\":");
  const std::size_t value_at = client_end + 8;  // both keys are 8 bytes with their comma
  const std::size_t value_end = named || user ? string_end(info, value_at) : std::string_view::npos;
  if (value_end == std::string_view::npos) {
    out += info;
    return;
  }
  out += info.substr(0, client_end);
  out += ",\"user\":";  // without tokens the name is the user
  out += info.substr(value_at, value_end - value_at);
  constexpr std::string_view kInfo = ",\"info\":";
  if (user && starts_at(info, value_end, kInfo)) {
    out += ",\"conn_info\":";
    out += info.substr(value_end + kInfo.size());
  } else {
    out += info.substr(value_end);
  }
}

void append_centrifuge_publication(std::string& out, const pubsub::Publication& p) {
  out += "{\"data\":";
  out += p.data;
  if (!p.info.empty()) {
    out += ",\"info\":";
    append_client_info(out, p.info);
  }
  out += ",\"offset\":";
  out += std::to_string(p.offset);
  out += '}';
}

std::string centrifuge_publications(const std::vector<pubsub::PublicationPtr>& list, bool reverse) {
  std::string out = "[";
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out += ',';
    append_centrifuge_publication(out, *list[reverse ? list.size() - 1 - i : i]);
  }
  out += ']';
  return out;
}

std::string centrifuge_publication_push(const pubsub::Publication& p) {
  std::string out;
  out.reserve(p.data.size() + p.info.size() + p.channel.size() + 64);
  out += "{\"push\":{\"channel\":";
  append_json_string(out, p.channel);
  out += ",\"pub\":";
  append_centrifuge_publication(out, p);
  out += "}}";
  return out;
}

std::string centrifuge_presence_push(const pubsub::PresenceEvent& e) {
  std::string out = "{\"push\":{\"channel\":";
  append_json_string(out, e.channel);
  out += e.kind == pubsub::EventKind::join ? ",\"join\":{\"info\":" : ",\"leave\":{\"info\":";
  append_client_info(out, e.info);
  out += "}}}";
  return out;
}

std::string centrifuge_unsubscribe_push(std::string_view channel) {
  std::string out = "{\"push\":{\"channel\":";
  append_json_string(out, channel);
  out += ",\"unsubscribe\":{\"code\":2000,\"reason\":\"server unsubscribe\"}}}";
  return out;
}

namespace {
std::uint32_t clamp_seconds(long long s) noexcept {
  return s <= 0 ? 0 : s > 0xffffffffLL ? 0xffffffffu : static_cast<std::uint32_t>(s);
}
}  // namespace

std::uint32_t ping_seconds(heartwheel::Duration d) noexcept {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  return ms <= 1000 ? 1 : clamp_seconds((ms + 999) / 1000);
}

std::uint32_t ttl_seconds(heartwheel::Duration d) noexcept {
  return clamp_seconds(std::chrono::duration_cast<std::chrono::seconds>(d).count());
}

}  // namespace chat
