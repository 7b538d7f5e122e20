// Private: what redis::Client forwards to - one connection to one
// redis-server (ClientCore) or a Redis Cluster (ClusterCore). The contract
// of each call is Client's (heartwheel/redis/client.h).
#pragma once

#include <heartwheel/redis/client.h>

#include <memory>
#include <vector>

namespace heartwheel::redis::detail {

class SlotMapSource;

class ClientImpl {
 public:
  virtual ~ClientImpl() = default;
  virtual void start() = 0;
  virtual void stop() = 0;
  virtual bool started() const noexcept = 0;
  virtual std::error_code command(Command command, Callback done, CommandOptions options) = 0;
  virtual bool connected() const noexcept = 0;
  virtual std::size_t in_flight() const noexcept = 0;
  virtual std::size_t buffered() const noexcept = 0;
  virtual void flush() = 0;
  virtual LinkStats stats() const noexcept = 0;
  virtual std::vector<MasterStats> masters() const = 0;
  virtual const ClientOptions& options() const noexcept = 0;
  // Cluster mode: the slot map this client reads, for a Subscriber to
  // follow (slot_map_source.h); null for a single redis-server.
  virtual std::shared_ptr<SlotMapSource> slot_map_source() const { return nullptr; }
};

// A ClientCore or a ClusterCore, as `options` asks (validated first).
std::unique_ptr<ClientImpl> make_client(LoopWheel& wheel, ClientOptions options);
// cluster_client.cpp
std::unique_ptr<ClientImpl> make_cluster_client(LoopWheel& wheel, ClientOptions options);

}  // namespace heartwheel::redis::detail
