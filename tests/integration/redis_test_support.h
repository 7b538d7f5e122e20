// Shared by the Redis link's integration tests: recording a command's
// outcome, and a link's connection events.
#pragma once

#include <heartwheel/redis/client.h>

#include <string>
#include <system_error>
#include <vector>

#include "net_test_support.h"
#include "redis_server.h"

namespace hwtest {

namespace redis = heartwheel::redis;

// One command's outcome, filled in by its callback.
struct Outcome {
  bool done = false;
  int calls = 0;
  std::error_code error;
  redis::Reply reply;
  Duration at{};  // hr_now() when it came

  redis::Callback callback() {
    return [this](std::error_code ec, redis::Reply r) {
      done = true;
      ++calls;
      error = ec;
      reply = std::move(r);
      at = hr_now();
    };
  }
};

// Connection events of a link, to hook into LinkOptions.
struct LinkEvents {
  int connects = 0;
  std::vector<net::CloseReason> disconnects;
  std::vector<std::string> errors;

  void hook(redis::LinkOptions& o) {
    o.on_connect = [this] { ++connects; };
    o.on_disconnect = [this](net::CloseReason r, std::error_code) { disconnects.push_back(r); };
    o.on_error = [this](std::error_code ec, std::string_view detail) {
      errors.push_back(ec.message() + ": " + std::string(detail));
    };
  }
};

// Options for a link to `server`, reconnecting quickly.
template <class Options>
Options link_to(const RedisServer& server) {
  Options o;
  o.connector.port = server.port();
  o.connector.backoff_initial = std::chrono::milliseconds(20);
  o.connector.backoff_max = std::chrono::milliseconds(200);
  return o;
}

// Options for a cluster link (every node a seed), reconnecting quickly.
template <class Options>
Options cluster_link(const RedisCluster& cluster) {
  Options o;
  o.cluster.seeds = cluster.seeds();
  o.connector.backoff_initial = std::chrono::milliseconds(20);
  o.connector.backoff_max = std::chrono::milliseconds(200);
  return o;
}

}  // namespace hwtest
