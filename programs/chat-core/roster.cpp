// See roster.h.
#include "roster.h"

#include <algorithm>
#include <unordered_set>

#include "client.h"

namespace chat {

bool Roster::ById::operator()(const Client* a, const Client* b) const {
  return a->id() < b->id();  // short strings: no heap
}

void Roster::add(std::string_view channel, Client& client) {
  std::lock_guard lock(mu_);
  client.add_channel(channel);
  auto& members = channels_[std::string(channel)];
  const auto at = std::lower_bound(members.begin(), members.end(), &client, ById());
  if (at == members.end() || *at != &client) members.insert(at, &client);
}

void Roster::remove(std::string_view channel, Client& client) {
  std::lock_guard lock(mu_);
  client.remove_channel(channel);
  erase(channel, client);
}

void Roster::remove_all(Client& client) {
  std::lock_guard lock(mu_);
  client.for_each_channel([&](std::string_view channel) { erase(channel, client); });
  client.clear_channels();
}

void Roster::erase(std::string_view channel, const Client& client) {
  const auto it = channels_.find(std::string(channel));
  if (it == channels_.end()) return;
  auto& members = it->second;
  // Ids are unique: the entry, if any, is where the client's id sorts.
  const auto at = std::lower_bound(members.begin(), members.end(), &client, ById());
  if (at != members.end() && *at == &client) members.erase(at);
  if (members.empty()) {
    channels_.erase(it);  // one-off channels leave nothing behind
  } else if (members.size() < members.capacity() / 4) {
    members.shrink_to_fit();  // a room that emptied gives its memory back (amortized O(1))
  }
}

std::vector<Member> Roster::list(std::string_view channel, std::size_t limit,
                                 std::size_t& total) const {
  std::vector<Member> out;
  std::lock_guard lock(mu_);
  total = 0;
  const auto it = channels_.find(std::string(channel));
  if (it == channels_.end()) return out;
  total = it->second.size();
  for (const Client* client : it->second) {
    if (out.size() >= limit) break;
    out.push_back({client->id(), client->info()});
  }
  return out;
}

std::size_t Roster::channel_count() const {
  std::lock_guard lock(mu_);
  return channels_.size();
}

std::size_t Roster::users(std::string_view channel, bool by_user) const {
  std::lock_guard lock(mu_);
  const auto it = channels_.find(std::string(channel));
  if (it == channels_.end()) return 0;
  if (!by_user) return it->second.size();
  std::unordered_set<std::string_view> seen;
  for (const Client* client : it->second) seen.insert(client->user());
  return seen.size();
}

}  // namespace chat
