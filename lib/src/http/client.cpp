// http::Client: accepting requests, the wait for a connection, writing a
// request on one, and finishing it (heartwheel/http/client.h). What the
// connections bring back is client_connection.cpp's.
#include <heartwheel/common/error.h>
#include <heartwheel/http/client.h>
#include <heartwheel/http/deadlines.h>
#include <heartwheel/net/connection.h>

#include <stdexcept>

#include "client_call.h"

namespace heartwheel::http {

namespace {

bool idempotent_method(std::string_view m) noexcept {
  return m == "GET" || m == "HEAD" || m == "OPTIONS" || m == "PUT" || m == "DELETE" || m == "TRACE";
}

bool valid(const ClientRequest& r) noexcept {
  if (!is_token(r.method)) return false;
  if (r.target.empty() || (r.target[0] != '/' && r.target != "*")) return false;
  if (!is_field_text(r.target) || r.target.find(' ') != std::string::npos) return false;
  for (const Header& h : r.headers)
    if (!is_token(h.name) || !is_field_text(h.value)) return false;
  return true;
}

bool has_header(const Headers& headers, std::string_view name) noexcept {
  return find_header(headers, name) != nullptr;
}

}  // namespace

net::PoolOptions ClientOptions::default_pool_options() {
  net::PoolOptions o;
  o.connections_per_endpoint = 4;
  o.max_calls_per_connection = 1;
  o.connector.connect_timeout = std::chrono::seconds(2);
  o.connector.backoff_initial = std::chrono::milliseconds(20);
  o.connector.backoff_max = std::chrono::seconds(5);
  return o;
}

void ClientOptions::validate() const {
  if (timeout.count() <= 0) throw std::invalid_argument("http client: timeout must be positive");
  if (max_in_flight == 0)
    throw std::invalid_argument("http client: max_in_flight must be at least 1");
  if (max_body_bytes == 0)
    throw std::invalid_argument("http client: max_body_bytes must be positive");
  if (max_head_bytes < 64)
    throw std::invalid_argument("http client: max_head_bytes must be at least 64");
  if (idle_timeout.count() < 0)
    throw std::invalid_argument("http client: idle_timeout must not be negative");
  if (!is_field_text(host)) throw std::invalid_argument("http client: host has a line break");
  for (const Header& h : headers)
    if (!is_token(h.name) || !is_field_text(h.value))
      throw std::invalid_argument("http client: header '" + h.name + "' is not a valid header");
  pool.validate();
}

namespace {
net::PoolOptions client_pool_options(const ClientOptions& o) {
  net::PoolOptions p = o.pool;
  p.max_calls_per_connection = 1;  // HTTP/1.1 without pipelining
  p.ping = nullptr;                // no ping in HTTP/1.1: probes are trial requests
  return p;
}
}  // namespace

Client::Client(LoopWheel& wheel, ClientOptions options)
    : wheel_(wheel),
      options_((options.validate(), std::move(options))),
      pool_(wheel, static_cast<net::Handler&>(*this), [this] {
        net::PoolOptions p = client_pool_options(options_);
        p.on_available = [this] { dispatch(); };
        p.on_connect_error = [this](const std::string&, std::error_code ec, Duration) {
          connect_failed(ec);
        };
        return p;
      }()) {
  pool_.set_endpoints(options_.servers);
}

Client::~Client() {
  // Dropped without callbacks (the header says: stop() first for them).
  while (wait_head_) {
    Call* c = wait_head_;
    unwait(c);
    delete c;
  }
  while (sessions_) {
    Session* s = sessions_;
    sessions_ = s->next;
    delete s->call;
    s->conn->set_user_data(nullptr);
    delete s;
  }
}

void Client::start() {
  if (started_ || stopped_) return;
  started_ = true;
  pool_.start();
}

void Client::stop() {
  if (stopped_) return;
  stopped_ = true;
  while (wait_head_) {
    Call* c = wait_head_;
    unwait(c);
    complete(c, make_error_code(errc::shutting_down), nullptr);
  }
  pool_.stop();  // the requests on connections fail in on_close
}

void Client::set_servers(const std::vector<std::string>& servers) { pool_.set_endpoints(servers); }

std::error_code Client::get(std::string target, ResponseCallback done, Duration timeout) {
  ClientRequest r;
  r.target = std::move(target);
  r.timeout = timeout;
  return request(std::move(r), std::move(done));
}

std::error_code Client::post(std::string target, std::string body, Headers headers,
                             ResponseCallback done, Duration timeout) {
  ClientRequest r;
  r.method = "POST";
  r.target = std::move(target);
  r.body = std::move(body);
  r.headers = std::move(headers);
  r.timeout = timeout;
  return request(std::move(r), std::move(done));
}

std::error_code Client::request(ClientRequest request, ResponseCallback done) {
  if (!started_ || stopped_) return make_error_code(errc::closed);
  if (!valid(request) || !done) return make_error_code(errc::invalid_argument);
  if (in_flight_ >= options_.max_in_flight) {
    ++stats_.refused;
    return make_error_code(errc::limit_reached);
  }
  auto* c = new Call(*this);
  c->deadline = deadline_after(wheel_.now(),
                               request.timeout.count() > 0 ? request.timeout : options_.timeout);
  c->idempotent = request.idempotent || idempotent_method(request.method);
  c->head_request = request.method == "HEAD";
  c->request = std::move(request);
  c->done = std::move(done);
  ++in_flight_;
  ++stats_.requests;
  if (!wait_head_) {  // none waiting before it: straight to a connection if one is free
    std::error_code ec;
    if (net::PooledConnection* lease = pool_.acquire(ec); lease && start_on(c, lease)) return {};
  }
  ++stats_.waited;
  wait(c, false);
  // Every server refusing: fail it soon (from the wheel, never from here).
  if (pool_.down() && last_connect_error_) wheel_.schedule(*c, Duration{0});
  return {};
}

bool Client::start_on(Call* c, net::PooledConnection* lease) {
  net::Connection* conn = lease->connection();
  Session* s = conn ? session_of(*conn) : nullptr;
  const TimePoint now = wheel_.now();
  if (!s || s->call || c->deadline <= now) {
    pool_.release(*lease, net::CallOutcome::cancelled);
    return false;
  }
  const ClientRequest& r = c->request;
  std::string head;
  head.reserve(128 + r.target.size());
  head.append(r.method).append(" ").append(r.target).append(" HTTP/1.1\r\n");
  if (!has_header(r.headers, "Host"))
    head.append("Host: ")
        .append(options_.host.empty() ? lease->address() : options_.host)
        .append("\r\n");
  for (const Header& h : options_.headers)
    if (!has_header(r.headers, h.name))
      head.append(h.name).append(": ").append(h.value).append("\r\n");
  for (const Header& h : r.headers) {
    if (iequals(h.name, "Content-Length") || iequals(h.name, "Transfer-Encoding")) continue;
    head.append(h.name).append(": ").append(h.value).append("\r\n");
  }
  if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH")
    head.append("Content-Length: ").append(std::to_string(r.body.size())).append("\r\n");
  head.append("\r\n");

  s->call = c;
  c->lease = lease;
  ++c->attempts;
  s->parser.expect(c->head_request);
  conn->clear_deadline(deadline::keepalive_timeout);
  conn->begin_request(c->deadline - now);
  if (const std::error_code ec = conn->write({head, r.body})) {
    // The connection is closing (or its queue is full): try elsewhere.
    s->call = nullptr;
    c->lease = nullptr;
    --c->attempts;
    conn->end_request();
    pool_.release(*lease, net::CallOutcome::cancelled);
    return false;
  }
  ++stats_.sent;
  if (s->requests++ > 0) ++stats_.reused;
  return true;
}

void Client::wait(Call* c, bool front) {
  if (front) {
    c->next = wait_head_;
    c->prev = nullptr;
    (wait_head_ ? wait_head_->prev : wait_tail_) = c;
    wait_head_ = c;
  } else {
    c->prev = wait_tail_;
    c->next = nullptr;
    (wait_tail_ ? wait_tail_->next : wait_head_) = c;
    wait_tail_ = c;
  }
  wheel_.schedule_at(*c, c->deadline);
}

void Client::unwait(Call* c) noexcept {
  wheel_.cancel(*c);
  (c->prev ? c->prev->next : wait_head_) = c->next;
  (c->next ? c->next->prev : wait_tail_) = c->prev;
  c->prev = c->next = nullptr;
}

void Client::dispatch() {
  while (wait_head_) {
    std::error_code ec;
    net::PooledConnection* lease = pool_.acquire(ec);
    if (!lease) return;
    Call* c = wait_head_;
    unwait(c);
    if (!start_on(c, lease)) {
      wait(c, true);
      return;
    }
  }
}

void Client::on_call_timer(TimerEntry& entry) {
  Call* c = static_cast<Call*>(&entry);
  c->owner->waited_too_long(c);
}

void Client::waited_too_long(Call* c) {
  if (pool_.down() && last_connect_error_) {
    unwait(c);
    ++stats_.connection_errors;
    complete(c, last_connect_error_, nullptr);
  } else if (wheel_.now() >= c->deadline) {
    unwait(c);
    ++stats_.timed_out;
    complete(c, make_error_code(errc::timed_out), nullptr);
  } else {
    wheel_.schedule_at(*c, c->deadline);  // a server came back meanwhile: wait on
  }
}

void Client::connect_failed(std::error_code error) {
  last_connect_error_ = error;
  if (!pool_.down()) return;
  // Every server refuses: the waiting requests learn it now, not at their
  // deadlines.
  while (wait_head_) {
    Call* c = wait_head_;
    unwait(c);
    ++stats_.connection_errors;
    complete(c, error, nullptr);
  }
}

void Client::complete(Call* c, std::error_code error, ClientResponse* response) {
  --in_flight_;
  if (error) ++stats_.errors;
  ResponseCallback done = std::move(c->done);
  ClientResponse none;
  none.attempts = c->attempts;
  delete c;
  try {
    done(error, response ? *response : none);
  } catch (...) {  // no exception crosses the loop
    ++stats_.callback_exceptions;
  }
}

}  // namespace heartwheel::http
