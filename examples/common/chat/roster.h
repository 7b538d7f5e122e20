// Who is in each channel, for the presence reply's "clients" list. The
// pub/sub layer keeps presence counts and join/leave events; the list of
// members is this program's own: one Roster per process, shared by every
// worker thread under a mutex (a subscribe or unsubscribe takes it once).
// It copies nothing per member: an entry is a pointer to the Client (one
// 48-byte set node per membership instead of ~180 bytes with copies of the
// id and the info), so the caller removes a client's entries before
// destroying it.
// Threads: any.
#pragma once

#include <heartwheel/pubsub/keyed_hash.h>

#include <cstddef>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace chat {

class Client;

class Roster {
 public:
  // The client is referenced, not copied, until remove().
  void add(std::string_view channel, const Client& client);
  void remove(std::string_view channel, const Client& client);
  // At most `limit` members' info (Client::info), ordered by client id;
  // `total` gets the number of members.
  std::vector<std::string> list(std::string_view channel, std::size_t limit,
                                std::size_t& total) const;

 private:
  mutable std::mutex mu_;
  struct ById {
    bool operator()(const Client* a, const Client* b) const;
  };
  // Keyed: channel names are the clients' choice (pubsub/keyed_hash.h).
  std::unordered_map<std::string, std::set<const Client*, ById>,
                     heartwheel::pubsub::KeyedStringHash, std::equal_to<>>
      channels_;
};

}  // namespace chat
