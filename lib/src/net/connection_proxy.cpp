// The PROXY protocol stage of a Connection (see connection.h, "PROXY
// protocol"): Gate stands in for the application's handler until the header
// is complete, then admit_and_open() hands the connection over.
#include <heartwheel/common/error.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/net/detail/connection_host.h>

#include <cstring>

#include "connection_extras.h"

namespace heartwheel::net {

Connection::Gate& Connection::Gate::instance() noexcept {
  static Gate gate;  // stateless: shared by every connection and thread
  return gate;
}

bool Connection::in_proxy_stage() const noexcept { return extra_ && extra_->parser; }

namespace {

// Copies an AF_INET/AF_INET6 address into `out`; false for other families.
bool keep_ip(const sockaddr_storage& in, sockaddr_in6& out) noexcept {
  if (in.ss_family == AF_INET) {
    std::memcpy(&out, &in, sizeof(sockaddr_in));
    return true;
  }
  if (in.ss_family == AF_INET6) {
    std::memcpy(&out, &in, sizeof(sockaddr_in6));
    return true;
  }
  return false;
}

}  // namespace

const ProxyHeader* Connection::proxy_header() const noexcept {
  if (!extra_ || extra_->proxy.version == 0) return nullptr;
  const Extras& x = *extra_;
  if (!x.header) {
    try {  // made on demand from what was kept (the header had no TLVs)
      auto h = std::make_unique<ProxyHeader>();
      h->version = x.proxy.version;
      h->command = x.proxy.command;
      h->transport = x.proxy.transport;
      h->family = x.proxy.family;
      std::memcpy(&h->source, &x.proxy.source, sizeof x.proxy.source);
      std::memcpy(&h->destination, &x.proxy.destination, sizeof x.proxy.destination);
      x.header = std::move(h);
    } catch (...) {
      return nullptr;
    }
  }
  return x.header.get();
}

bool Connection::proxy_addresses(sockaddr_storage* peer, sockaddr_storage* local) const noexcept {
  if (!extra_ || extra_->proxy.version == 0) return false;
  const Extras& x = *extra_;
  if (x.header) {
    if (!x.header->has_addresses()) return false;
    if (peer) *peer = x.header->source;
    if (local) *local = x.header->destination;
    return true;
  }
  if (x.proxy.source.sin6_family == AF_UNSPEC) return false;
  if (peer) {
    *peer = {};
    std::memcpy(peer, &x.proxy.source, sizeof x.proxy.source);
  }
  if (local) {
    *local = {};
    std::memcpy(local, &x.proxy.destination, sizeof x.proxy.destination);
  }
  return true;
}

bool Connection::proxy_source_trusted() noexcept {
  sockaddr_storage ss{};  // AF_UNSPEC if the socket has no peer address
  int len = sizeof ss;
  uv_tcp_getpeername(&tcp_, reinterpret_cast<sockaddr*>(&ss), &len);
  if (host_->proxy_source_trusted(reinterpret_cast<const sockaddr&>(ss))) return true;
  // Refused before a byte is read, header or not (a header is mandatory on a
  // PROXY listener, so a silent peer would be refused anyway): the
  // application never hears of it, and no parser is allocated for it.
  ++stats().proxy.untrusted;
  handler_ = &Gate::instance();
  reset(CloseReason::proxy_untrusted);
  return false;
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
  DeadlineTimer::set_timeout(Deadline::proxy_header_timeout, timeout);
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
  ProxyHeader& h = x.parser->header();
  ProxyInfo& info = x.proxy;
  info.version = static_cast<std::uint8_t>(h.version);
  info.command = h.command;
  info.transport = h.transport;
  info.family = static_cast<std::uint8_t>(h.family);
  const bool compact =
      h.tlvs.empty() && (!h.has_addresses() || (keep_ip(h.source, info.source) &&
                                                keep_ip(h.destination, info.destination)));
  if (!compact) {
    info.source.sin6_family = info.destination.sin6_family = AF_UNSPEC;
    x.header = std::make_unique<ProxyHeader>(std::move(h));
  }
  x.parser.reset();
  ProxyProtocolStats& ps = stats().proxy;
  ++(info.version == 1 ? ps.v1 : ps.v2);
  if (info.command == ProxyCommand::local) ++ps.local;
  DeadlineTimer::clear_deadline(Deadline::proxy_header_timeout);
  handler_ = x.app_handler;
  x.app_handler = nullptr;
  admit_and_open(data.substr(r.consumed));
}

void Connection::Gate::on_data(Connection& conn, std::string_view data) {
  if (conn.in_proxy_stage()) conn.feed_proxy(data);
}

DeadlineAction Connection::Gate::on_deadline(Connection& conn, DeadlineEvent event) {
  if (event.kind == Deadline::proxy_header_timeout && conn.in_proxy_stage()) {
    ++conn.stats().proxy.timeouts;
    conn.close(CloseReason::proxy_header_timeout);
    return DeadlineAction::keep;
  }
  if (static_cast<std::uint8_t>(event.kind) >= kLayerDeadlineFirst && conn.in_byte_stage()) {
    conn.extra_->transport->on_deadline(conn, event);  // its handshake's deadline
    return DeadlineAction::keep;
  }
  return DeadlineAction::close;  // an idle slot, max age: as for any connection
}

void Connection::Gate::on_eof(Connection& conn) {
  if (conn.in_byte_stage()) {
    conn.extra_->transport->on_eof(conn);
    return;
  }
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
