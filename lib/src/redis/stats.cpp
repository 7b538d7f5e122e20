// Merging and the JSON form of a Redis link's counters (stats.h). One table
// of fields (kLinkStatsFields, in the header so that the metrics layer can
// walk it too) serves merge, JSON and Prometheus.
#include <heartwheel/redis/stats.h>

#include <heartwheel/common/stat_fields.h>

#include <cstddef>

namespace heartwheel::redis {

// Every field is in the table (a new field without a row fails to compile).
static_assert(sizeof(LinkStats) == std::size(kLinkStatsFields) * sizeof(std::uint64_t));

void LinkStats::merge(const LinkStats& other) noexcept {
  for (const LinkStatsField& f : kLinkStatsFields) this->*f.member += other.*f.member;
}

std::string to_json(const LinkStats& stats) {
  std::string out = "{";
  for (const LinkStatsField& f : kLinkStatsFields) {
    if (out.size() > 1) out += ',';
    out += '"';
    out += f.name;
    out += "\":";
    out += std::to_string(stats.*f.member);
  }
  out += '}';
  return out;
}

std::string to_json(const std::vector<MasterStats>& masters) {
  std::string out = "[";
  for (const MasterStats& m : masters) {
    if (out.size() > 1) out += ',';
    out += "{\"address\":";
    append_json_string(out, m.address);
    out += ",\"slots\":" + std::to_string(m.slots);
    out += m.connected ? ",\"connected\":true" : ",\"connected\":false";
    out += ",\"pending\":" + std::to_string(m.pending);
    out += ",\"link\":" + to_json(m.link) + '}';
  }
  out += ']';
  return out;
}

}  // namespace heartwheel::redis
