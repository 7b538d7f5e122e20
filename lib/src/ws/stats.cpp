// ws::Stats: merging and the JSON form (written by hand: the library has no
// JSON dependency). See heartwheel/ws/stats.h.
#include <heartwheel/ws/stats.h>

#include <sstream>

namespace heartwheel::ws {

void Stats::merge(const Stats& o) {
  handshakes_refused += o.handshakes_refused;
  opened += o.opened;
  current += o.current;
  for (std::size_t i = 0; i < closed_by_reason.size(); ++i)
    closed_by_reason[i] += o.closed_by_reason[i];
  messages_received += o.messages_received;
  messages_sent += o.messages_sent;
  shared_sent += o.shared_sent;
  pings_sent += o.pings_sent;
  pongs_received += o.pongs_received;
  pings_received += o.pings_received;
  pong_timeouts += o.pong_timeouts;
  close_timeouts += o.close_timeouts;
  abnormal_closes += o.abnormal_closes;
  protocol_errors += o.protocol_errors;
  for (const auto& [code, n] : o.close_codes_sent) close_codes_sent[code] += n;
  for (const auto& [code, n] : o.close_codes_received) close_codes_received[code] += n;
  slow_consumer_closes += o.slow_consumer_closes;
  slow_consumer_skips += o.slow_consumer_skips;
  deliveries_dropped += o.deliveries_dropped;
}

namespace {
void codes(std::ostream& o, const std::map<std::uint16_t, std::uint64_t>& m) {
  o << '{';
  bool first = true;
  for (const auto& [code, n] : m) {
    o << (first ? "" : ",") << '"' << code << "\":" << n;
    first = false;
  }
  o << '}';
}
}  // namespace

std::string to_json(const Stats& s) {
  std::ostringstream o;
  o << "{\"handshakes_refused\":" << s.handshakes_refused << ",\"opened\":" << s.opened
    << ",\"current\":" << s.current << ",\"closed_by_reason\":{";
  const char* sep = "";
  for (std::size_t i = 0; i < s.closed_by_reason.size(); ++i) {
    const auto reason = static_cast<net::CloseReason>(i);
    if (!net::is_named(reason)) continue;
    o << sep << '"' << net::to_string(reason) << "\":" << s.closed_by_reason[i];
    sep = ",";
  }
  o << "},\"messages_received\":" << s.messages_received << ",\"messages_sent\":" << s.messages_sent
    << ",\"shared_sent\":" << s.shared_sent << ",\"pings_sent\":" << s.pings_sent
    << ",\"pongs_received\":" << s.pongs_received << ",\"pings_received\":" << s.pings_received
    << ",\"pong_timeouts\":" << s.pong_timeouts << ",\"close_timeouts\":" << s.close_timeouts
    << ",\"abnormal_closes\":" << s.abnormal_closes << ",\"protocol_errors\":" << s.protocol_errors
    << ",\"close_codes_sent\":";
  codes(o, s.close_codes_sent);
  o << ",\"close_codes_received\":";
  codes(o, s.close_codes_received);
  o << ",\"slow_consumer_closes\":" << s.slow_consumer_closes
    << ",\"slow_consumer_skips\":" << s.slow_consumer_skips
    << ",\"deliveries_dropped\":" << s.deliveries_dropped << '}';
  return o.str();
}

}  // namespace heartwheel::ws
