// Who is in each channel, for the presence reply's "clients" list. The
// pub/sub layer keeps presence counts and join/leave events; the list of
// members is this program's own: one Roster per process, shared by every
// worker thread under a mutex (a subscribe or unsubscribe takes it once).
// Threads: any.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace chat {

class Roster {
 public:
  // `info` is the member's presence info (JSON text), keyed by client id.
  void add(std::string_view channel, std::string_view client, std::string_view info);
  void remove(std::string_view channel, std::string_view client);
  // At most `limit` members' info, ordered by client id; `total` gets the
  // number of members.
  std::vector<std::string> list(std::string_view channel, std::size_t limit,
                                std::size_t& total) const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::map<std::string, std::string, std::less<>>> channels_;
};

}  // namespace chat
