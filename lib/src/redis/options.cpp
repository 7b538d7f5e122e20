// Defaults and validation of the Redis links' options (link_options.h,
// client.h).
#include <heartwheel/redis/client.h>
#include <heartwheel/net/address.h>
#include <heartwheel/redis/link_options.h>

#include <stdexcept>
#include <string>

namespace heartwheel::redis {

net::ConnectorOptions default_connector_options() {
  net::ConnectorOptions o;
  o.port = kDefaultPort;
  o.connect_timeout = std::chrono::seconds(2);
  o.backoff_initial = std::chrono::milliseconds(100);
  o.backoff_max = std::chrono::seconds(5);
  o.connection.write.slow_reader = net::SlowReaderPolicy::close;
  return o;
}

void ClusterOptions::validate() const {
  for (const std::string& seed : seeds) {
    try {
      (void)net::parse_host_port(seed);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("redis: cluster seed: " + std::string(e.what()));
    }
  }
  if (max_redirects < 1) throw std::invalid_argument("redis: cluster.max_redirects must be >= 1");
  if (max_retries < 0) throw std::invalid_argument("redis: cluster.max_retries must be >= 0");
  if (retry_delay.count() <= 0)
    throw std::invalid_argument("redis: cluster.retry_delay must be positive");
  if (refresh_interval.count() <= 0)
    throw std::invalid_argument("redis: cluster.refresh_interval must be positive");
  if (refresh_timeout.count() <= 0)
    throw std::invalid_argument("redis: cluster.refresh_timeout must be positive");
}

void LinkOptions::validate() const {
  connector.validate();
  cluster.validate();
  if (connector.connection.write.slow_reader != net::SlowReaderPolicy::close)
    throw std::invalid_argument(
        "redis: connector.connection.write.slow_reader must be close (a link that stops "
        "reading while its writes queue up can deadlock against Redis)");
  if (heartbeat.interval.count() > 0) heartbeat.validate();
  if (heartbeat.interval.count() < 0)
    throw std::invalid_argument("redis: heartbeat.interval must be >= 0 (0 = off)");
  if (!user.empty() && password.empty())
    throw std::invalid_argument("redis: user needs a password");
  for (const Command& c : setup) {
    if (!password.empty() && (c.name() == "AUTH" || c.name() == "auth"))
      throw std::invalid_argument("redis: an AUTH in setup beside password: give one of them");
    if (c.breaks_reply_order())
      throw std::invalid_argument("redis: setup command " + std::string(c.name()) +
                                  " would break the one-reply-per-command order");
  }
  if (max_reply_bytes == 0) throw std::invalid_argument("redis: max_reply_bytes must be > 0");
  if (flush_bytes == 0) throw std::invalid_argument("redis: flush_bytes must be > 0");
}

void ClientOptions::validate() const {
  LinkOptions::validate();
  if (command_timeout.count() < 0)
    throw std::invalid_argument("redis: command_timeout must be >= 0 (0 = none)");
  if (max_buffered > 0 && max_buffered_bytes == 0)
    throw std::invalid_argument("redis: max_buffered_bytes must be > 0 when max_buffered is");
  if (wait_replicas < 0) throw std::invalid_argument("redis: wait_replicas must be >= 0");
  if (wait_replicas > 0 && wait_timeout < std::chrono::milliseconds(1))
    throw std::invalid_argument(
        "redis: wait_timeout must be at least 1ms when wait_replicas is set (WAIT 0 blocks "
        "forever)");
}

}  // namespace heartwheel::redis
