// What a Connection keeps behind its one "rarely used" pointer (extra_):
// per-connection policy overrides and the PROXY protocol stage. Private to
// the net layer (connection.cpp, connection_proxy.cpp).
#pragma once

#include <heartwheel/net/connection.h>
#include <heartwheel/net/proxy_protocol.h>

#include <memory>

namespace heartwheel::net {

// Exists only when a policy is overridden for this one connection.
struct Connection::Overrides {
  IdlePolicy idle;
  WritePolicy write;
};

struct Connection::Extras {
  std::unique_ptr<Overrides> overrides;
  // The PROXY stage: the parser while the header is awaited (1,280 bytes,
  // freed when it is complete), then the header for the connection's life.
  std::unique_ptr<ProxyHeaderParser> parser;
  std::unique_ptr<ProxyHeader> header;
  Handler* app_handler = nullptr;  // the host's handler, while Gate stands in
};

// The handler of a connection the application has not been given yet: its
// PROXY header is awaited, or the host refused it. Stateless (one instance
// for every connection and thread).
struct Connection::Gate final : Handler {
  void on_data(Connection& conn, std::string_view data) override;
  DeadlineAction on_deadline(Connection& conn, DeadlineEvent event) override;
  void on_eof(Connection& conn) override;
  static Gate& instance() noexcept;
};

}  // namespace heartwheel::net
