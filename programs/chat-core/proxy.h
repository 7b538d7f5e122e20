// Proxies to the application's backend (Centrifugo's; docs/centrifugo.md):
// the connect, refresh, subscribe, publish, sub_refresh and RPC decisions
// are POSTs of JSON to the application's HTTP endpoints, with Centrifugo's
// request bodies (client, transport, protocol, encoding, user, channel,
// method, data, meta, ...) and answers ({"result":{...}},
// {"error":{"code","message"}} or {"disconnect":{"code","reason"}}).
//
//   chat::ProxyFlags f;  chat::add_proxy_flags(app, f);   // --proxy-*, in main()
//   config.proxy = chat::make_proxy_settings(f);         // null: no proxy
//   ... each Worker makes its Proxies on its loop (one http::Client per
//   backend address: a keep-alive pool, a deadline per call on the wheel,
//   a bound on calls in flight).
//
// Every call is answered exactly once, within --proxy-timeout: a backend
// that is down, refuses, answers late, answers something that is not
// Centrifugo's JSON or a status other than 200 is Fault::backend_down
// (Centrifugo's "internal": error 100 to the client, or close 3004 for a
// connect), never a hang.
//
// Threads: ProxySettings any (const); Proxies its worker's loop thread only.
#pragma once

#include <heartwheel/common/time.h>
#include <heartwheel/http/client.h>
#include <heartwheel/http/message.h>
#include <heartwheel/timer/loop_wheel.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "command.h"

namespace CLI {
class App;
}

namespace chat {

struct ProxyFlags {
  std::string connect, refresh, subscribe, publish, sub_refresh, rpc;  // URLs
  std::string timeout = "1s";
  std::vector<std::string> headers;  // --proxy-http-header NAME, repeatable
  std::size_t max_in_flight = 1024;  // per worker
};

// Registers --proxy-connect-endpoint, --proxy-refresh-endpoint,
// --proxy-subscribe-endpoint, --proxy-publish-endpoint,
// --proxy-sub-refresh-endpoint, --proxy-rpc-endpoint, --proxy-timeout,
// --proxy-http-header and --proxy-max-in-flight.
void add_proxy_flags(CLI::App& app, ProxyFlags& flags);

// Where one proxy POSTs: "HOST:PORT" and the path ("/centrifugo/connect").
struct ProxyTarget {
  std::string server;
  std::string path;
};

struct ProxySettings {
  std::optional<ProxyTarget> connect, refresh, subscribe, publish, sub_refresh, rpc;
  heartwheel::Duration timeout = std::chrono::seconds(1);
  std::vector<std::string> headers;  // the client's upgrade headers forwarded
  std::size_t max_in_flight = 1024;
};

// Null when no endpoint is given. Throws std::invalid_argument naming the
// flag: a URL that is not http://HOST[:PORT]/PATH, a timeout that is not a
// positive duration, an empty header name, a zero --proxy-max-in-flight.
std::shared_ptr<const ProxySettings> make_proxy_settings(const ProxyFlags& flags);

// "http://HOST[:PORT][/PATH]" as a target (port 80, path "/" by default).
// Throws std::invalid_argument saying what is wrong (https included: not
// supported, put the backend on plain HTTP on the same host or network).
ProxyTarget parse_proxy_url(const std::string& url);

// The backend's answer: its `result` object ({} when absent), or why not.
struct ProxyReply {
  std::optional<Failure> failure;
  nlohmann::json result = nlohmann::json::object();
};

// Reads a backend's HTTP answer (status and body) as Centrifugo's proxy
// response. Pure; exposed for tests.
ProxyReply read_proxy_answer(int status, const std::string& body);

class Proxies {
 public:
  Proxies(heartwheel::LoopWheel& wheel, const ProxySettings& settings);
  ~Proxies();
  Proxies(const Proxies&) = delete;
  Proxies& operator=(const Proxies&) = delete;

  const ProxySettings& settings() const noexcept { return settings_; }

  // POSTs `body` (JSON text) to `target` with `headers` (the client's
  // forwarded ones); `done` runs exactly once on this loop: later, or inside
  // the call when the client refuses it at once (--proxy-max-in-flight
  // reached, the client stopped), with Fault::backend_down.
  void call(const ProxyTarget& target, std::string body, const heartwheel::http::Headers& headers,
            std::function<void(ProxyReply)> done);

  // Calls made and how they ended (for the stats).
  struct Stats {
    std::uint64_t calls = 0, failures = 0, timeouts = 0;
  };
  const Stats& stats() const noexcept { return stats_; }

 private:
  heartwheel::http::Client& client_for(const std::string& server);

  heartwheel::LoopWheel& wheel_;
  const ProxySettings& settings_;
  std::unordered_map<std::string, std::unique_ptr<heartwheel::http::Client>> clients_;
  Stats stats_;
};

}  // namespace chat
