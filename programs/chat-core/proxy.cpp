// See proxy.h.
#include "proxy.h"

#include <heartwheel/common/error.h>
#include <heartwheel/net/address.h>

#include <CLI/CLI.hpp>
#include <stdexcept>

#include "cli_program.h"

namespace chat {

namespace http = heartwheel::http;
using Json = nlohmann::json;

void add_proxy_flags(CLI::App& app, ProxyFlags& f) {
  const auto endpoint = [&](const char* name, std::string& into, const char* what) {
    app.add_option(name, into,
                   std::string("URL (http://HOST:PORT/PATH) the application's backend answers ") +
                       what + " at, with Centrifugo's proxy JSON (docs/centrifugo.md)");
  };
  endpoint("--proxy-connect-endpoint", f.connect,
           "connects without a token (who the client is, its info, channels and expiry)");
  endpoint("--proxy-refresh-endpoint", f.refresh,
           "refreshes of connections whose expiry passed (extended, or closed with 3005)");
  endpoint("--proxy-subscribe-endpoint", f.subscribe,
           "subscribes without a channel token (in place of the channel rules)");
  endpoint("--proxy-publish-endpoint", f.publish,
           "client publishes (in place of the channel rules; it may rewrite the data)");
  endpoint("--proxy-sub-refresh-endpoint", f.sub_refresh, "sub_refresh commands without a token");
  endpoint("--proxy-rpc-endpoint", f.rpc, "RPC commands (their method and data)");
  app.add_option("--proxy-timeout", f.timeout,
                 "how long a proxy call may take, connect to last byte; a backend that does not "
                 "answer by then gives the client error 100 (a connect: close 3004)")
      ->capture_default_str();
  app.add_option("--proxy-http-header", f.headers,
                 "NAME (repeatable): a header of the client's WebSocket handshake sent on with "
                 "every proxy call of its connection (e.g. Cookie, Authorization)");
  app.add_option("--proxy-max-in-flight", f.max_in_flight,
                 "proxy calls each worker may have waiting for the backend; beyond, a call fails "
                 "at once as if the backend were down")
      ->capture_default_str();
}

ProxyTarget parse_proxy_url(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (url.rfind("https://", 0) == 0)
    throw std::invalid_argument(url +
                                ": https is not supported for proxies; give the backend's "
                                "plain http:// address (on the same host or network)");
  if (url.rfind(kScheme, 0) != 0)
    throw std::invalid_argument(url + ": not an http://HOST[:PORT][/PATH] URL");
  const std::string rest = url.substr(kScheme.size());
  const std::size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  ProxyTarget t;
  t.path = slash == std::string::npos ? "/" : rest.substr(slash);
  if (authority.empty()) throw std::invalid_argument(url + ": no host");
  const bool bracketed = authority.front() == '[';
  const std::size_t colon = authority.rfind(':');
  if (colon == std::string::npos || (bracketed && authority.back() == ']')) authority += ":80";
  try {
    (void)heartwheel::net::parse_host_port(authority);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(url + ": " + e.what());
  }
  t.server = authority;
  return t;
}

std::shared_ptr<const ProxySettings> make_proxy_settings(const ProxyFlags& f) {
  auto s = std::make_shared<ProxySettings>();
  const auto target = [](const char* flag, const std::string& url,
                         std::optional<ProxyTarget>& into) {
    if (url.empty()) return;
    try {
      into = parse_proxy_url(url);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string(flag) + ": " + e.what());
    }
  };
  target("--proxy-connect-endpoint", f.connect, s->connect);
  target("--proxy-refresh-endpoint", f.refresh, s->refresh);
  target("--proxy-subscribe-endpoint", f.subscribe, s->subscribe);
  target("--proxy-publish-endpoint", f.publish, s->publish);
  target("--proxy-sub-refresh-endpoint", f.sub_refresh, s->sub_refresh);
  target("--proxy-rpc-endpoint", f.rpc, s->rpc);
  s->timeout = heartwheel::cli::parse_duration_flag("--proxy-timeout", f.timeout);
  if (s->timeout.count() <= 0) throw std::invalid_argument("--proxy-timeout must be positive");
  for (const std::string& h : f.headers)
    if (h.empty() || !http::is_token(h))
      throw std::invalid_argument("--proxy-http-header: '" + h + "' is not a header name");
  s->headers = f.headers;
  if (f.max_in_flight == 0) throw std::invalid_argument("--proxy-max-in-flight must be at least 1");
  s->max_in_flight = f.max_in_flight;
  if (!s->connect && !s->refresh && !s->subscribe && !s->publish && !s->sub_refresh && !s->rpc)
    return nullptr;
  return s;
}

ProxyReply read_proxy_answer(int status, const std::string& body) {
  ProxyReply r;
  const auto down = [&](std::string why) {
    r.failure = Failure{Fault::backend_down, std::move(why), 0};
    return r;
  };
  if (status != 200) return down("the backend answered HTTP " + std::to_string(status));
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return down("the backend's answer is not a JSON object");
  if (const auto d = j.find("disconnect"); d != j.end() && d->is_object()) {
    const std::uint64_t code = d->value("code", std::uint64_t{0});
    if (code < 3000 || code > 4999) return down("the backend's disconnect code is not 3000-4999");
    r.failure = Failure{Fault::backend_disconnect, d->value("reason", std::string()),
                        static_cast<std::uint32_t>(code)};
    return r;
  }
  if (const auto e = j.find("error"); e != j.end() && e->is_object()) {
    const std::uint64_t code = e->value("code", std::uint64_t{0});
    if (code == 0 || code > 0xffffffffu) return down("the backend's error has no code");
    r.failure = Failure{Fault::backend_error, e->value("message", std::string()),
                        static_cast<std::uint32_t>(code)};
    return r;
  }
  if (const auto res = j.find("result"); res != j.end()) {
    if (!res->is_object() && !res->is_null()) return down("the backend's result is not an object");
    if (res->is_object()) r.result = std::move(*res);
  }
  return r;
}

Proxies::Proxies(heartwheel::LoopWheel& wheel, const ProxySettings& settings)
    : wheel_(wheel), settings_(settings) {}

Proxies::~Proxies() {
  for (auto& [server, client] : clients_) client->stop();  // callbacks of a closing worker
}

http::Client& Proxies::client_for(const std::string& server) {
  auto& c = clients_[server];
  if (!c) {
    http::ClientOptions o;
    o.servers = {server};
    o.timeout = settings_.timeout;
    o.max_in_flight = settings_.max_in_flight;
    o.max_retries = 0;  // POSTs with effects (a publish): never twice
    o.headers.push_back({"Content-Type", "application/json"});
    c = std::make_unique<http::Client>(wheel_, std::move(o));
    c->start();
  }
  return *c;
}

void Proxies::call(const ProxyTarget& target, std::string body, const http::Headers& headers,
                   std::function<void(ProxyReply)> done) {
  ++stats_.calls;
  http::ClientRequest req;
  req.method = "POST";
  req.target = target.path;
  req.headers = headers;
  req.body = std::move(body);
  auto shared = std::make_shared<std::function<void(ProxyReply)>>(std::move(done));
  const std::error_code refused =
      client_for(target.server)
          .request(std::move(req), [this, shared](std::error_code ec, http::ClientResponse& resp) {
            ProxyReply r;
            if (ec) {
              ++stats_.failures;
              if (ec == heartwheel::errc::timed_out) ++stats_.timeouts;
              r.failure = Failure{Fault::backend_down, "the backend: " + ec.message(), 0};
            } else {
              r = read_proxy_answer(resp.status, resp.body);
              if (r.failure && r.failure->fault == Fault::backend_down) ++stats_.failures;
            }
            (*shared)(std::move(r));
          });
  if (refused) {
    ++stats_.failures;
    ProxyReply r;
    r.failure = Failure{Fault::backend_down, "the backend: " + refused.message(), 0};
    (*shared)(std::move(r));
  }
}

}  // namespace chat
