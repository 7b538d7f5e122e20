// See protocol.h. Channel names (printable ASCII without '"' or '\', as
// pubsub::validate_channel guarantees) and epochs (hex) need no escaping;
// data and info are JSON text this program produced.
#include "protocol.h"

#include <heartwheel/http/message.h>
#include <heartwheel/pubsub/limits.h>
#include <heartwheel/pubsub_redis/redis_broker.h>
#include <heartwheel/ws/frame.h>
#include <heartwheel/ws/utf8.h>

#include <cstdint>
#include <stdexcept>

#include "command.h"

namespace chat {

namespace pubsub = heartwheel::pubsub;

void append_publication(std::string& out, const pubsub::Publication& p) {
  out += "{\"channel\":\"";
  out += p.channel;
  out += "\",\"offset\":";
  out += std::to_string(p.offset);
  out += ",\"epoch\":\"";
  out += p.epoch;
  out += "\",\"data\":";
  out += p.data;
  if (!p.info.empty()) {
    out += ",\"info\":";
    out += p.info;
  }
  out += '}';
}

std::string publication_json(const pubsub::Publication& p) {
  std::string out;
  out.reserve(p.data.size() + p.info.size() + p.channel.size() + 64);
  append_publication(out, p);
  return out;
}

std::string presence_json(const pubsub::PresenceEvent& e) {
  std::string out = "{\"channel\":\"";
  out += e.channel;
  out += e.kind == pubsub::EventKind::join ? "\",\"join\":" : "\",\"leave\":";
  out += e.info.empty() ? "{}" : e.info;
  out += ",\"count\":";
  out += std::to_string(e.subscribers);
  out += '}';
  return out;
}

std::string publications_json(const std::vector<pubsub::PublicationPtr>& list) {
  std::string out = "[";
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out += ',';
    append_publication(out, *list[i]);
  }
  out += ']';
  return out;
}

std::string ok_reply(const Json& id, std::string_view fields) {
  std::string out = "{\"id\":";
  out += id.dump();
  out += ",\"ok\":true";
  out += fields;
  out += '}';
  return out;
}

std::string error_reply(const Json& id, std::string_view code, std::string_view message) {
  Json j = {{"id", id},
            {"error", {{"code", std::string(code)}, {"message", std::string(message)}}}};
  // Replacement characters for anything not UTF-8: the reply is always sent.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string error_code_name(const std::error_code& ec) {
  return std::string(fault_name(fault_of(ec)));
}

std::string client_info(std::string_view client_id, std::string_view name) {
  return Json{{"client", std::string(client_id)}, {"name", std::string(name)}}.dump();
}

bool displayable_name(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::uint32_t cp = b;
    std::size_t n = 1;
    if (b >= 0xf0 && i + 3 < s.size()) {
      cp = (b & 0x07u) << 18 | (static_cast<unsigned char>(s[i + 1]) & 0x3fu) << 12 |
           (static_cast<unsigned char>(s[i + 2]) & 0x3fu) << 6 |
           (static_cast<unsigned char>(s[i + 3]) & 0x3fu);
      n = 4;
    } else if (b >= 0xe0 && i + 2 < s.size()) {
      cp = (b & 0x0fu) << 12 | (static_cast<unsigned char>(s[i + 1]) & 0x3fu) << 6 |
           (static_cast<unsigned char>(s[i + 2]) & 0x3fu);
      n = 3;
    } else if (b >= 0xc0 && i + 1 < s.size()) {
      cp = (b & 0x1fu) << 6 | (static_cast<unsigned char>(s[i + 1]) & 0x3fu);
      n = 2;
    }
    i += n;
    if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) return false;       // C0, DEL, C1
    if (cp == 0x2028 || cp == 0x2029) return false;                  // separators
    if (cp == 0x061c || cp == 0x200e || cp == 0x200f) return false;  // bidi marks
    if ((cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)) return false;
  }
  return true;
}

std::optional<std::string> name_from_query(std::string_view query) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const auto eq = pair.find('=');
    if (pair.substr(0, eq) != "name") continue;
    std::optional<std::string> decoded = heartwheel::http::decode_query_component(
        eq == std::string_view::npos ? "" : pair.substr(eq + 1));
    if (!decoded) throw std::invalid_argument("name: a '%' not followed by two hex digits");
    std::string name = std::move(*decoded);
    if (name.empty()) throw std::invalid_argument("name: empty");
    if (name.size() > kMaxNameBytes)
      throw std::invalid_argument("name: longer than " + std::to_string(kMaxNameBytes) + " bytes");
    if (!heartwheel::ws::is_valid_utf8(name)) throw std::invalid_argument("name: not UTF-8");
    if (!displayable_name(name))
      throw std::invalid_argument(
          "name: control, separator and bidirectional characters are not allowed");
    return name;
  }
  return std::nullopt;
}

void encode_as_ws_frames(pubsub::RedisBrokerOptions& options) {
  namespace ws = heartwheel::ws;
  options.encode_publication = [](const pubsub::Publication& p) {
    return ws::encode_shared(ws::Opcode::text, publication_json(p));
  };
  options.encode_presence = [](const pubsub::PresenceEvent& e) {
    return ws::encode_shared(ws::Opcode::text, presence_json(e));
  };
}

}  // namespace chat
