// The connection every Redis link has (link.h): open, read, heartbeat,
// batched writes, close.
#include "link.h"

#include <heartwheel/common/error.h>
#include <heartwheel/net/address.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/redis/auth.h>
#include <heartwheel/redis/error.h>

#include <string>

namespace heartwheel::redis::detail {

namespace {
// A batch buffer that grew beyond this is freed after its write, so a link
// that once sent a large command does not keep the memory.
constexpr std::size_t kKeptBatchCapacity = 16 * 1024;

const LinkOptions& validated(const LinkOptions& o) {
  o.validate();
  return o;
}
}  // namespace

void aim_at(LinkOptions& o, const std::string& address) {
  const net::HostPort hp = net::parse_host_port(address);
  o.connector.host = hp.host;
  o.connector.port = hp.port;
  if (o.node_transport) o.connector.transport = o.node_transport(hp.host, hp.port);
}

net::PoolOptions Link::pool_options() {
  net::PoolOptions o;
  o.connector = options_.connector;
  o.connections_per_endpoint = 1;
  if (options_.heartbeat.interval.count() > 0) {
    o.heartbeat = options_.heartbeat;
    o.ping = [this](net::Connection& conn) {
      if (conn_ != &conn) return false;
      ++stats_.pings_sent;
      send_ping(conn);
      return true;
    };
  }
  // What the connector's own hook was told before it became the pool's.
  if (options_.connector.on_connect_error)
    o.on_connect_error = [hook = options_.connector.on_connect_error](
                             const std::string&, std::error_code ec, Duration next) {
      hook(ec, next);
    };
  return o;
}

Link::Link(LoopWheel& wheel, const LinkOptions& options)
    : wheel_(wheel),
      options_(validated(options)),
      reader_(options_.max_reply_bytes),
      pool_(wheel, static_cast<net::Handler&>(*this), pool_options()) {
  const std::string endpoint =
      net::format_host_port({options_.connector.host, options_.connector.port});
  pool_.set_endpoints(std::span<const std::string>(&endpoint, 1));
  if (!options_.password.empty())
    auth_ = std::string(auth_command(options_.user, options_.password).bytes());
  prepare_ = new uv_prepare_t;
  uv_prepare_init(wheel.loop(), prepare_);  // cannot fail (libuv: returns 0)
  prepare_->data = this;
  uv_unref(reinterpret_cast<uv_handle_t*>(prepare_));  // never keeps the loop alive
}

Link::~Link() { close_prepare(); }

void Link::close_prepare() noexcept {
  if (!prepare_) return;
  prepare_->data = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(prepare_),
           [](uv_handle_t* h) { delete reinterpret_cast<uv_prepare_t*>(h); });
  prepare_ = nullptr;
}

void Link::send(std::string_view bytes) {
  if (out_.empty()) {
    uv_prepare_start(prepare_, [](uv_prepare_t* h) {
      if (h->data) static_cast<Link*>(h->data)->flush();
    });
  }
  out_.append(bytes);
  if (out_.size() >= options_.flush_bytes) flush();
}

void Link::flush() {
  uv_prepare_stop(prepare_);
  if (out_.empty() || !conn_) return;
  const std::error_code ec = conn_->write(out_);
  ++stats_.writes;
  if (out_.capacity() > kKeptBatchCapacity) {
    std::string().swap(out_);
  } else {
    out_.clear();
  }
  // Client::command keeps the queue under its cap, so a refusal means Redis
  // stopped reading long ago: give the connection up (in-flight commands
  // then fail with `disconnected`).
  if (ec == heartwheel::errc::limit_reached) conn_->close(net::CloseReason::slow_consumer, ec);
}

std::size_t Link::unsent_bytes() const noexcept {
  return out_.size() + (conn_ ? conn_->queued_bytes() : 0);
}

LinkStats Link::link_stats() const noexcept {
  LinkStats s = stats_;
  s.connected = connection() != nullptr ? 1 : 0;
  s.connect_failures = pool_.net_stats().connect_failures;
  return s;
}

void Link::report_error(std::error_code error, std::string_view detail) noexcept {
  if (options_.on_error) guard([&] { options_.on_error(error, detail); });
}

void Link::on_open(net::Connection& conn) {
  conn_ = &conn;
  reader_.reset();
  out_.clear();
  if (stats_.connects++ > 0) ++stats_.reconnects;
  auth_pending_ = !auth_.empty();
  if (auth_pending_) send(auth_);
  for (const Command& c : options_.setup) send(c.bytes());
  setup_left_ = options_.setup.size();
  link_opened(conn);
  if (conn_ == &conn && options_.on_connect) guard([&] { options_.on_connect(); });
}

void Link::on_data(net::Connection& conn, std::string_view data) {
  if (reader_.feed(data)) return close_for_protocol_error(conn, reader_.error());
  Reply reply;
  while (reader_.next(reply)) {
    if (auth_pending_) {
      auth_pending_ = false;
      if (reply.is_error()) return refuse_auth(conn, reply.str());
      continue;
    }
    if (is_noauth(reply)) return refuse_auth(conn, reply.str());
    if (setup_left_ > 0) {
      --setup_left_;
      if (!reply.is_error()) continue;
      ++stats_.setup_errors;
      report_error(errc::server_error, reply.str());
      conn.close(net::CloseReason::protocol_error, errc::server_error);
      return;
    }
    link_reply(conn, std::move(reply));
    if (conn.closing()) return;  // closed from the reply (stop(), a bad reply)
  }
  if (reader_.error()) close_for_protocol_error(conn, reader_.error());
}

void Link::refuse_auth(net::Connection& conn, std::string_view reason) {
  ++stats_.auth_failures;
  const std::string address =
      options_.connector.host + ':' + std::to_string(options_.connector.port);
  report_error(errc::auth_failed, auth_failure_detail(address, options_.user, reason));
  conn.close(net::CloseReason::protocol_error, errc::auth_failed);
}

void Link::close_for_protocol_error(net::Connection& conn, std::error_code error) {
  ++stats_.protocol_errors;
  const std::string_view detail = reader_.error_message();
  report_error(error,
               detail.empty() ? std::string_view("reply larger than max_reply_bytes") : detail);
  conn.close(net::CloseReason::protocol_error, error);
}

net::DeadlineAction Link::on_deadline(net::Connection& conn, net::DeadlineEvent event) {
  // ping and pong_timeout are the pool's (pool_options); the rest, e.g.
  // the Client's request_timeout, the link's.
  return link_deadline(conn, event);
}

net::DeadlineAction Link::link_deadline(net::Connection&, net::DeadlineEvent) {
  return net::DeadlineAction::close;
}

void Link::on_close(net::Connection& conn, net::CloseReason reason, std::error_code error) {
  if (conn_ != &conn) return;
  conn_ = nullptr;
  uv_prepare_stop(prepare_);
  out_.clear();
  ++stats_.disconnects;
  if (reason == net::CloseReason::pong_timeout) ++stats_.pong_timeouts;
  link_closed(reason, error);
  if (options_.on_disconnect) guard([&] { options_.on_disconnect(reason, error); });
}

}  // namespace heartwheel::redis::detail
