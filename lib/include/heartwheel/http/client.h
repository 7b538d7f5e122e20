// heartwheel/http/client.h - an HTTP/1.1 client on the loop's wheel: a pool
// of keep-alive connections to one or more servers, a deadline per request,
// retries for idempotent requests, bounded requests in flight.
//
// What it is
//   A Client sends requests over a net::Pool (pool.h) of connections
//   (connections_per_server to each server), one request per connection at
//   a time (no pipelining), reusing each connection for the next request as
//   long as the server keeps it alive. Responses are read by
//   http::ResponseParser (llhttp): Content-Length, chunked and
//   close-delimited bodies, bounded by max_body_bytes and max_head_bytes.
//   TLS, SNI and certificate checks are the pool's transport
//   (PoolOptions::endpoint_transport, e.g. tls::client_transport(context,
//   "api.example.com")). Requests that find no idle connection wait (FIFO)
//   for one.
//
//     http::ClientOptions o;
//     o.servers = {"127.0.0.1:8080"};
//     o.timeout = 1s;                               // connect + write + head + body
//     http::Client client(wheel, o);
//     client.start();
//     client.post("/connect", R"({"user":"42"})", {{"Content-Type", "application/json"}},
//                 [](std::error_code ec, http::ClientResponse& r) {
//                   if (ec) return log(ec.message());   // timed out, refused, too large...
//                   use(r.status, r.body);
//                 });
//
// The deadline: ONE per request, from request() to the last byte of the
//   response: the wait for a connection (and its connect), the write, the
//   head and the body. While waiting it is a wheel entry of the request's;
//   once on a connection it is that connection's request slot (its deadline
//   set: no entry of its own), so a server that stalls mid-body is cut off
//   at the deadline, not at an idle timeout. A request that times out on a
//   connection closes it (its answer could still come).
// Retries: only idempotent requests (GET, HEAD, OPTIONS, PUT, DELETE, TRACE,
//   or ClientRequest::idempotent), only for failures of the connection
//   (reset, closed before the response was complete, refused), at most
//   max_retries times, and only within the deadline; never after a timeout
//   or a response that was too large or malformed.
// Errors, in the callback (each request gets exactly one callback, never
//   from inside request()):
//   errc::timed_out       the deadline passed (waiting, writing or reading)
//   UV_ECONNREFUSED etc.  every server refused the connection (uv_error():
//                         "connection refused"), reported at once when no
//                         server has an open connection and each has failed
//                         its last attempt
//   UV_ECONNRESET         the server reset the connection
//   errc::closed          the server closed before the response was complete
//   errc::too_large       the head or body passed its limit (the connection
//                         is closed; the rest is not read)
//   errc::protocol_error  bytes that are not an HTTP/1.1 response
//   errc::shutting_down   stop() was called
//   and at once from request() (no callback then):
//   errc::limit_reached   max_in_flight requests are in flight already
//   errc::invalid_argument an empty method, a target not starting with '/'
//   errc::closed          the client is not started or was stopped
//   A response with any status is a response (ec is clear): 4xx and 5xx
//   are the application's to judge. For the pool's health a 5xx counts as a
//   failure (Envoy's consecutive 5xx), so a server answering 503 to
//   everything is ejected for a while.
//
// Cost: per request one allocation (its record, with the serialised head
//   and the response); per connection a ResponseParser (one allocation)
//   beside the pool's connection. Idle connections hold no buffers.
// Threads: the loop's thread only. Re-entrancy: a callback may call
//   request() (also for the next step of the same work) and stop().
// Lifetime: destroying the client drops what is in flight without callbacks;
//   stop() first (and let the loop run) to have every callback run.
#pragma once

#include <heartwheel/common/metric_sink.h>
#include <heartwheel/common/stat_fields.h>
#include <heartwheel/http/message.h>
#include <heartwheel/net/handler.h>
#include <heartwheel/net/pool.h>
#include <heartwheel/timer/loop_wheel.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace heartwheel::http {

struct ClientRequest {
  std::string method = "GET";
  std::string target = "/";  // origin form: "/path?query"
  Headers headers;           // Host is added unless given; Content-Length always
  std::string body;
  Duration timeout{0};  // 0: ClientOptions::timeout
  // Retry after a connection failure even though the method is not
  // idempotent (a POST the server de-duplicates). Default: by method.
  bool idempotent = false;
};

struct ClientResponse {
  int status = 0;
  Headers headers;
  std::string body;
  std::string server;     // the address that answered ("HOST:PORT" as listed)
  unsigned attempts = 0;  // 1 + retries
  const std::string* header(std::string_view name) const noexcept {
    return find_header(headers, name);
  }
};

// Called once per request: the error, or the response.
using ResponseCallback = std::function<void(std::error_code error, ClientResponse& response)>;

struct ClientOptions {
  // "HOST:PORT" each (numeric, or localhost): the pool's endpoints.
  std::vector<std::string> servers;
  // The pool: connections per server (4 by default here), connect timeout,
  // backoff, outlier ejection, balance, TLS (endpoint_transport). HTTP/1.1
  // has no ping: ping stays empty (probes are trial requests) and
  // max_calls_per_connection is 1 whatever it says.
  net::PoolOptions pool = default_pool_options();
  Duration timeout = std::chrono::seconds(5);  // a request's deadline unless it sets one
  std::size_t max_in_flight = 1024;            // waiting or on a connection
  std::size_t max_body_bytes = std::size_t{8} << 20;
  std::size_t max_head_bytes = 64 * 1024;
  unsigned max_retries = 2;
  // A connection with no request for this long is closed (and reopened by
  // the pool), before a server's own keep-alive timeout can close it under
  // a request being sent (nginx's is 75 s); 0 = never.
  Duration idle_timeout = std::chrono::seconds(50);
  // The Host header; empty: the address of the server the request goes to.
  std::string host;
  // Sent with every request (before the request's own).
  Headers headers = {{"User-Agent", "heartwheel"}};

  static net::PoolOptions default_pool_options();
  // Throws std::invalid_argument naming the bad field (the pool's too).
  void validate() const;
};

struct ClientStats {
  std::uint64_t requests = 0;             // accepted by request()
  std::uint64_t refused = 0;              // refused by request(): max_in_flight
  std::uint64_t responses = 0;            // complete responses delivered
  std::uint64_t errors = 0;               // requests ended with an error, of which:
  std::uint64_t timed_out = 0;            //   the deadline passed
  std::uint64_t too_large = 0;            //   over max_body_bytes / max_head_bytes
  std::uint64_t protocol_errors = 0;      //   not HTTP
  std::uint64_t connection_errors = 0;    // refused, reset, closed early
  std::uint64_t retries = 0;              // requests sent again after a connection failure
  std::uint64_t sent = 0;                 // requests written (retries count again)
  std::uint64_t reused = 0;               // of which on a connection that had carried one before
  std::uint64_t waited = 0;               // requests that waited for a connection
  std::uint64_t bytes_received = 0;       // response bodies
  std::uint64_t callback_exceptions = 0;  // callbacks that threw (swallowed)

  void merge(const ClientStats& other) noexcept;
  // The fields' table (heartwheel/common/stat_fields.h): names, the
  // Prometheus families heartwheel_http_client_*.
  static StatTable<ClientStats> fields() noexcept;
};

// Appends the heartwheel_http_client_* families (ClientStats' table,
// unlabelled; every family: lib/src/metrics/README.md) into any sink.
// Throws as the sink (TextWriter: std::logic_error if `out` already has one
// of them). Threads: any (it reads a copy of Client::stats()).
void write_metrics(MetricSink& out, const ClientStats& stats);

class Client final : private net::Handler {
 public:
  // Validates (std::invalid_argument). Adds the servers; connects on start().
  Client(LoopWheel& wheel, ClientOptions options);
  ~Client() override;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  void start();
  // Fails every request waiting or in flight (errc::shutting_down; their
  // callbacks run from here) and closes the connections.
  void stop();

  // Sends `request`; `done` runs once with the response or the error (see
  // the header comment). Returns an error (and never calls `done`) only
  // for what is refused at once.
  std::error_code request(ClientRequest request, ResponseCallback done);
  // Shorthands. `timeout` 0: ClientOptions::timeout.
  std::error_code get(std::string target, ResponseCallback done, Duration timeout = Duration{0});
  std::error_code post(std::string target, std::string body, Headers headers, ResponseCallback done,
                       Duration timeout = Duration{0});

  // Replaces the servers (net::Pool::set_endpoints: added ones warm up,
  // removed ones finish their requests).
  void set_servers(const std::vector<std::string>& servers);

  // Requests accepted and not completed (waiting or on a connection).
  std::size_t in_flight() const noexcept { return in_flight_; }
  const ClientStats& stats() const noexcept { return stats_; }
  const net::Pool& pool() const noexcept { return pool_; }
  const ClientOptions& options() const noexcept { return options_; }

 private:
  struct Call;
  struct Session;
  // net::Handler (the pool passes each connection's events on).
  void on_open(net::Connection& conn) override;
  void on_data(net::Connection& conn, std::string_view data) override;
  net::DeadlineAction on_deadline(net::Connection& conn, net::DeadlineEvent event) override;
  void on_eof(net::Connection& conn) override;
  void on_close(net::Connection& conn, net::CloseReason reason, std::error_code error) override;

  // client.cpp
  void dispatch();
  bool start_on(Call* call, net::PooledConnection* lease);
  void wait(Call* call, bool front);
  void unwait(Call* call) noexcept;
  void waited_too_long(Call* call);
  void connect_failed(std::error_code error);
  void complete(Call* call, std::error_code error, ClientResponse* response);
  static void on_call_timer(TimerEntry& entry);
  // client_connection.cpp
  void finish_on(Session& s, std::error_code error, bool retryable);
  void response_done(Session& s, std::size_t extra_bytes);
  static Session* session_of(const net::Connection& conn) noexcept;

  LoopWheel& wheel_;
  ClientOptions options_;
  ClientStats stats_;
  net::Pool pool_;
  Session* sessions_ = nullptr;  // every open connection's state
  Call* wait_head_ = nullptr;    // requests waiting for a connection (FIFO)
  Call* wait_tail_ = nullptr;
  std::size_t in_flight_ = 0;
  std::error_code last_connect_error_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace heartwheel::http
