// The PROXY protocol stage of a Connection (see connection.h, "PROXY
// protocol"): Gate stands in for the application's handler until the header
// is complete, then admit_and_open() hands the connection over.
#include <heartwheel/error.h>
#include <heartwheel/net/connection.h>

#include "connection_extras.h"

namespace heartwheel::net {

Connection::Gate& Connection::Gate::instance() noexcept {
  static Gate gate;  // stateless: shared by every connection and thread
  return gate;
}

bool Connection::in_proxy_stage() const noexcept { return extra_ && extra_->parser; }

const ProxyHeader* Connection::proxy_header() const noexcept {
  return extra_ ? extra_->header.get() : nullptr;
}

int Connection::begin_proxy_stage(Duration timeout) noexcept {
  try {
    Extras& x = extras();
    x.parser = std::make_unique<ProxyHeaderParser>();
    x.app_handler = handler_;
  } catch (...) {  // bad_alloc: the application has not seen it yet
    handler_ = &Gate::instance();
    close(CloseReason::error, uv_error(UV_ENOMEM));
    return UV_ENOMEM;
  }
  handler_ = &Gate::instance();
  DeadlineTimer::set_timeout(Deadline::header_timeout, timeout);
  return 0;
}

void Connection::feed_proxy(std::string_view data) {
  Extras& x = *extra_;
  const ProxyFeedResult r = x.parser->feed(data);
  if (r.status == ProxyParseStatus::need_more) return;
  if (r.status == ProxyParseStatus::failed) {
    ++stats().proxy.invalid;
    close(CloseReason::proxy_header_invalid);
    return;
  }
  x.header = std::make_unique<ProxyHeader>(std::move(x.parser->header()));
  x.parser.reset();
  ProxyProtocolStats& ps = stats().proxy;
  ++(x.header->version == 1 ? ps.v1 : ps.v2);
  if (x.header->command == ProxyCommand::local) ++ps.local;
  DeadlineTimer::clear_deadline(Deadline::header_timeout);
  handler_ = x.app_handler;
  x.app_handler = nullptr;
  admit_and_open(data.substr(r.consumed));
}

void Connection::Gate::on_data(Connection& conn, std::string_view data) {
  if (conn.in_proxy_stage()) conn.feed_proxy(data);
}

DeadlineAction Connection::Gate::on_deadline(Connection& conn, DeadlineEvent event) {
  if (event.kind == Deadline::header_timeout && conn.in_proxy_stage()) {
    ++conn.stats().proxy.timeouts;
    conn.close(CloseReason::proxy_header_timeout);
    return DeadlineAction::keep;
  }
  return DeadlineAction::close;  // an idle slot, max age: as for any connection
}

void Connection::Gate::on_eof(Connection& conn) {
  // A FIN before the header is complete: a header cut short is malformed;
  // no byte at all is a peer that left (a plain TCP health check).
  if (conn.in_proxy_stage() && conn.extra_->parser->header_bytes() > 0) {
    ++conn.stats().proxy.invalid;
    conn.close(CloseReason::proxy_header_invalid);
    return;
  }
  conn.close(CloseReason::peer_closed);
}

}  // namespace heartwheel::net
