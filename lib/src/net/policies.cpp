// Validation and merging for the net layer's plain value types (names: names.cpp).
#include <heartwheel/net/close_reason.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/net/deadline.h>
#include <heartwheel/net/handler.h>
#include <heartwheel/net/idle_policy.h>
#include <heartwheel/net/stats.h>
#include <heartwheel/net/write_policy.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace heartwheel::net {

namespace {
void require_non_negative(Duration d, const char* what) {
  if (d.count() < 0)
    throw std::invalid_argument(std::string(what) + " must not be negative (0 = off)");
}
}  // namespace

void IdlePolicy::validate() const {
  require_non_negative(read_idle, "idle policy: read_idle");
  require_non_negative(write_idle, "idle policy: write_idle");
  require_non_negative(all_idle, "idle policy: all_idle");
  require_non_negative(max_age, "idle policy: max_age");
  require_non_negative(jitter, "idle policy: jitter");
}

void WritePolicy::validate() const {
  if (low_watermark > high_watermark)
    throw std::invalid_argument("write policy: low_watermark (" + std::to_string(low_watermark) +
                                ") must not exceed high_watermark (" +
                                std::to_string(high_watermark) + ")");
  if (max_queued_bytes != 0 && max_queued_bytes < high_watermark)
    throw std::invalid_argument(
        "write policy: max_queued_bytes must be 0 (no cap) or at least "
        "high_watermark, or writability callbacks could never fire");
  require_non_negative(stall_timeout, "write policy: stall_timeout");
  if (min_write_rate > 0 && rate_window.count() <= 0)
    throw std::invalid_argument("write policy: min_write_rate needs a positive rate_window");
}

void ConnectionOptions::validate() const {
  idle.validate();
  write.validate();
  require_non_negative(tcp_user_timeout, "connection options: tcp_user_timeout");
}

void Handler::on_eof(Connection& conn) { conn.close_after_flush(CloseReason::peer_closed); }

void Handler::on_drain(Connection& conn) {
  if (!conn.in_request()) conn.close_after_flush(CloseReason::drain);
}

}  // namespace heartwheel::net
