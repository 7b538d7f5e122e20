// Defaults and validation of the Redis links' options (link_options.h,
// client.h).
#include <heartwheel/redis/client.h>
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

void LinkOptions::validate() const {
  connector.validate();
  if (connector.connection.write.slow_reader != net::SlowReaderPolicy::close)
    throw std::invalid_argument(
        "redis: connector.connection.write.slow_reader must be close (a link that stops "
        "reading while its writes queue up can deadlock against Redis)");
  if (heartbeat.interval.count() > 0) heartbeat.validate();
  if (heartbeat.interval.count() < 0)
    throw std::invalid_argument("redis: heartbeat.interval must be >= 0 (0 = off)");
  for (const Command& c : setup)
    if (c.breaks_reply_order())
      throw std::invalid_argument("redis: setup command " + std::string(c.name()) +
                                  " would break the one-reply-per-command order");
  if (max_reply_bytes == 0) throw std::invalid_argument("redis: max_reply_bytes must be > 0");
  if (flush_bytes == 0) throw std::invalid_argument("redis: flush_bytes must be > 0");
}

void ClientOptions::validate() const {
  LinkOptions::validate();
  if (command_timeout.count() < 0)
    throw std::invalid_argument("redis: command_timeout must be >= 0 (0 = none)");
  if (max_buffered > 0 && max_buffered_bytes == 0)
    throw std::invalid_argument("redis: max_buffered_bytes must be > 0 when max_buffered is");
}

}  // namespace heartwheel::redis
