#include "routes.h"

#include <charconv>
#include <memory>
#include <string>

namespace heartwheel_example {

using heartwheel::Duration;
using heartwheel::TimerEntry;
using heartwheel::TimerService;
using heartwheel::http::Request;
using heartwheel::http::Responder;

namespace {

// One pending /delay answer: a wheel entry that owns its Responder. It frees
// itself when it fires, or when the session gives the request up (closed or
// timed out), so a dropped connection leaves nothing armed.
class DelayedAnswer final : public TimerEntry {
 public:
  static void start(Responder responder, Duration delay, std::string body) {
    TimerService* timers = responder.timers();
    if (timers == nullptr) return;
    auto* self = new DelayedAnswer(std::move(responder), *timers, std::move(body));
    self->responder_.on_abandon([self] {
      self->timers_.cancel(*self);
      delete self;
    });
    timers->schedule(*self, delay);
  }

 private:
  DelayedAnswer(Responder r, TimerService& timers, std::string body)
      : TimerEntry(&fire), responder_(std::move(r)), timers_(timers), body_(std::move(body)) {}

  static void fire(TimerEntry& e) {
    auto* self = static_cast<DelayedAnswer*>(&e);
    self->responder_.respond(200, std::move(self->body_));
    delete self;
  }

  Responder responder_;
  TimerService& timers_;
  std::string body_;
};

void delay(const Request& req, Responder r) {
  const auto ms_text = req.query_param("ms").value_or("0");
  long ms = 0;
  const auto res = std::from_chars(ms_text.data(), ms_text.data() + ms_text.size(), ms);
  if (res.ec != std::errc{} || res.ptr != ms_text.data() + ms_text.size() || ms < 0) {
    r.respond(400, "ms must be a non-negative integer\n");
    return;
  }
  const auto d = std::min(std::chrono::milliseconds(ms), kMaxDelay);
  DelayedAnswer::start(std::move(r), d, "delayed " + std::to_string(d.count()) + " ms\n");
}

// n bytes of 'x', one buffer per worker thread for the size asked last:
// every client of /bytes?n=N gets it by reference (Response::shared_body),
// as nginx sends one file from the page cache to all, so a slow reader holds
// none of it.
std::shared_ptr<const std::string> x_bytes(std::size_t n) {
  thread_local std::shared_ptr<const std::string> last;
  if (!last || last->size() != n) last = std::make_shared<const std::string>(n, 'x');
  return last;
}

void bytes(const Request& req, Responder r) {
  const auto n_text = req.query_param("n").value_or("0");
  std::size_t n = 0;
  const auto res = std::from_chars(n_text.data(), n_text.data() + n_text.size(), n);
  if (res.ec != std::errc{} || res.ptr != n_text.data() + n_text.size() || n > kMaxBytes) {
    r.respond(400, "n must be an integer from 0 to " + std::to_string(kMaxBytes) + "\n");
    return;
  }
  heartwheel::http::Response resp;
  resp.headers.push_back({"Content-Type", "application/octet-stream"});
  resp.shared_body = x_bytes(n);
  r.respond(std::move(resp));
}

}  // namespace

heartwheel::http::Handler make_routes() {
  return [](const Request& req, Responder r) {
    const auto path = req.path();
    if (path == "/") {
      if (req.method != "GET" && req.method != "HEAD") {
        r.respond(405, "use GET\n");
        return;
      }
      r.respond(200, "Hello from heartwheel\n");
    } else if (path == "/echo") {
      if (req.method != "POST") {
        r.respond(405, "use POST\n");
        return;
      }
      heartwheel::http::Response resp;
      resp.headers.push_back({"Content-Type", "application/octet-stream"});
      resp.body = req.body;
      r.respond(std::move(resp));
    } else if (path == "/delay") {
      delay(req, std::move(r));
    } else if (path == "/bytes") {
      if (req.method != "GET" && req.method != "HEAD") {
        r.respond(405, "use GET\n");
        return;
      }
      bytes(req, std::move(r));
    } else {
      r.respond(404, "not found\n");
    }
  };
}

}  // namespace heartwheel_example
