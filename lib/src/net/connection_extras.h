// What a Connection keeps behind its one "rarely used" pointer (extra_):
// per-connection policy overrides, the PROXY protocol stage and the transport. Private to
// the net layer (connection.cpp, connection_proxy.cpp).
#pragma once

#include <heartwheel/net/byte_stage.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/net/proxy_protocol.h>
#include <netinet/in.h>

#include <memory>

namespace heartwheel::net {

// Exists only when a policy is overridden for this one connection.
struct Connection::Overrides {
  IdlePolicy idle;
  WritePolicy write;
};

// What a proxied connection keeps of its PROXY header for its whole life:
// 64 bytes. A whole ProxyHeader is ~700 bytes (two sockaddr_storage, the
// optional TLV fields), more than the connection itself, so it is kept only
// when the header had something these fields cannot hold (TLVs, AF_UNIX
// addresses), or made from these on the first proxy_header() call.
struct ProxyInfo {
  sockaddr_in6 source{};  // an AF_INET address fits too; AF_UNSPEC: not carried here
  sockaddr_in6 destination{};
  std::uint8_t version = 0;  // 0: no header (yet)
  ProxyCommand command = ProxyCommand::proxy;
  ProxyTransport transport = ProxyTransport::unspec;
  std::uint8_t family = AF_UNSPEC;
};

struct Connection::Extras {
  std::unique_ptr<Overrides> overrides;
  // The PROXY stage: the parser while the header is awaited (1,280 bytes,
  // freed when it is complete), then what the connection keeps of it.
  std::unique_ptr<ProxyHeaderParser> parser;
  ProxyInfo proxy;
  mutable std::unique_ptr<ProxyHeader> header;  // see ProxyInfo
  Handler* app_handler = nullptr;               // the host's handler, while Gate stands in
  std::unique_ptr<ByteStage> transport;         // the transport stage (byte_stage.h)
  std::uint64_t bytes_dropped = 0;              // Connection::bytes_dropped()
  // The byte counters' high halves (Connection::bytes_read()), from the
  // first carry on.
  std::uint32_t bytes_read_high = 0;
  std::uint32_t bytes_written_high = 0;
};

// The handler of a connection the application has not been given yet: its
// PROXY header is awaited, its transport is not ready, or the host refused it. Stateless (one instance
// for every connection and thread).
struct Connection::Gate final : Handler {
  void on_data(Connection& conn, std::string_view data) override;
  DeadlineAction on_deadline(Connection& conn, DeadlineEvent event) override;
  void on_eof(Connection& conn) override;
  static Gate& instance() noexcept;
};

}  // namespace heartwheel::net
