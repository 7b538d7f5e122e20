// See roster.h.
#include "roster.h"

namespace chat {

void Roster::add(std::string_view channel, std::string_view client, std::string_view info) {
  std::lock_guard lock(mu_);
  channels_[std::string(channel)].insert_or_assign(std::string(client), std::string(info));
}

void Roster::remove(std::string_view channel, std::string_view client) {
  std::lock_guard lock(mu_);
  const auto it = channels_.find(std::string(channel));
  if (it == channels_.end()) return;
  if (const auto m = it->second.find(client); m != it->second.end()) it->second.erase(m);
  if (it->second.empty()) channels_.erase(it);  // one-off channels leave nothing behind
}

std::vector<std::string> Roster::list(std::string_view channel, std::size_t limit,
                                      std::size_t& total) const {
  std::vector<std::string> out;
  std::lock_guard lock(mu_);
  total = 0;
  const auto it = channels_.find(std::string(channel));
  if (it == channels_.end()) return out;
  total = it->second.size();
  for (const auto& [client, info] : it->second) {
    if (out.size() >= limit) break;
    out.push_back(info);
  }
  return out;
}

}  // namespace chat
