// Who is in each channel, for the presence reply's "clients" list. The
// pub/sub layer keeps presence counts and join/leave events; the list of
// members is this program's own: one Roster per process, shared by every
// worker thread under a mutex (a subscribe or unsubscribe takes it once).
// It copies nothing per member: an entry is a pointer to the Client in the
// channel's vector, sorted by client id (8 bytes per membership plus the
// vector's spare capacity; a std::set node cost a 48-byte chunk, copies of
// the id and the info ~180 bytes), so the caller removes a client's entries
// before destroying it. Cost: a join or leave finds its place by binary
// search and moves the channel's later entries by one (memmove, 8 bytes
// each: O(members), a few microseconds at 10,000 members), under the mutex (remove_all). It also keeps each client's own channel list
// (Client::add_channel/remove_channel), under the same mutex: that list
// shares a string with the client's name, which info() reads here from other
// threads.
// Threads: any.
#pragma once

#include <heartwheel/pubsub/keyed_hash.h>

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "command.h"

namespace chat {

class Client;

class Roster {
 public:
  // The client is referenced, not copied, until remove() or remove_all();
  // each also adds the channel to / removes it from the client's list.
  void add(std::string_view channel, Client& client);
  void remove(std::string_view channel, Client& client);
  // Every channel on the client's list (before the client is destroyed).
  void remove_all(Client& client);
  // At most `limit` members (their ids and Client::info), ordered by client
  // id; `total` gets the number of members.
  std::vector<Member> list(std::string_view channel, std::size_t limit, std::size_t& total) const;
  // How many different users the channel's members are: by Client::user()
  // when `by_user` (tokens say who is who; anonymous counts once), else
  // every member is one (names are not identities).
  std::size_t users(std::string_view channel, bool by_user) const;
  // Channels with at least one member.
  std::size_t channel_count() const;

 private:
  // The channel's entry for the client, if any; mu_ held.
  void erase(std::string_view channel, const Client& client);

  mutable std::mutex mu_;
  struct ById {
    bool operator()(const Client* a, const Client* b) const;
  };
  // Keyed: channel names are the clients' choice (pubsub/keyed_hash.h).
  std::unordered_map<std::string, std::vector<const Client*>,
                     heartwheel::pubsub::KeyedStringHash, std::equal_to<>>
      channels_;
};

}  // namespace chat
