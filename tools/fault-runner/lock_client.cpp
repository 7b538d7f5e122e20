// heartwheel-fault-lock: a redis::Lock holder for the fault runner's
// lock-partition scenario (tools/fault-runner/README.md). It takes the lock,
// writes to a fenced store (fenced_store.py) with the lock's fencing token
// every --write-every while held() says it holds the lock, lets go after
// --hold, waits --pause and takes it again, until SIGTERM. Every step is one
// JSON line in --out, stamped with CLOCK_MONOTONIC milliseconds (the clock of
// every process of a run):
//   {"type":"acquire","phase":"ok","token":N}   lock()'s callback: got it
//   {"type":"acquire","phase":"fail","error":E} lock()'s callback: an error
//   {"type":"lost","token":N,"why":E}           on_lost
//   {"type":"release","token":N,"result":R}     unlock()'s outcome
//   {"type":"write","phase":"invoke","token":N,"seq":S}    sent to the store
//   {"type":"write","phase":"ok"|"fail","seq":S,...}        the store's answer
// Store protocol, one line each way: "W TOKEN WRITER SEQ\n" -> "OK\n" or
// "STALE MAX\n" (a token below MAX, the highest it accepted).
//   usage: heartwheel-fault-lock --redis HOST:PORT --store HOST:PORT --id A --out FILE
//          [--name N] [--lease D] [--hold D] [--pause D] [--write-every D]
#include <heartwheel/common/duration_parse.h>
#include <heartwheel/net/connector.h>
#include <heartwheel/redis/client.h>
#include <heartwheel/redis/lock.h>
#include <heartwheel/timer/loop_wheel.h>
#include <time.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_program.h"

namespace hw = heartwheel;
namespace redis = heartwheel::redis;
using namespace std::chrono_literals;

namespace {

struct Options {
  std::string redis = "127.0.0.1:6379", store, id, out, name = "faults";
  hw::Duration lease = 2s, hold = 3s, pause = 500ms, write_every = 100ms;
};

double now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

std::pair<std::string, int> host_port(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) throw CLI::ValidationError("HOST:PORT", text);
  return {text.substr(0, colon), std::stoi(text.substr(colon + 1))};
}

class Holder final : public hw::net::Handler {
 public:
  Holder(uv_loop_t* loop, const Options& o)
      : o_(o),
        wheel_(loop, {.tick = 1ms}),
        client_(wheel_, client_options(o)),
        locks_(wheel_, client_,
               {.lease = o.lease,
                .owner = o.id,
                .on_lost =
                    [this](std::string_view, std::uint64_t token, std::error_code why) {
                      log({{"type", "lost"}, {"token", token}, {"why", why.message()}});
                      holding_ = false;
                      later(o_.pause, [this] { take(); });
                    }}),
        store_(wheel_, *this, store_options(o)),
        tick_(this) {
    out_ = std::fopen(o.out.c_str(), "a");
    if (!out_) throw std::runtime_error("cannot open " + o.out);
  }
  ~Holder() override {
    wheel_.cancel(tick_);
    wheel_.cancel(wait_);
    if (out_) std::fclose(out_);
  }

  void start() {
    client_.start();
    store_.start();
    take();
    wheel_.schedule(tick_, o_.write_every);
  }

  void on_data(hw::net::Connection&, std::string_view data) override {
    buffer_.append(data);
    for (std::size_t nl; (nl = buffer_.find('\n')) != std::string::npos; buffer_.erase(0, nl + 1)) {
      const std::string line = buffer_.substr(0, nl);
      if (pending_.empty()) continue;
      const auto [token, seq] = pending_.front();
      pending_.pop_front();
      if (line == "OK")
        log({{"type", "write"}, {"phase", "ok"}, {"token", token}, {"seq", seq}});
      else
        log({{"type", "write"},
             {"phase", "fail"},
             {"token", token},
             {"seq", seq},
             {"error", line},
             {"definite", true}});
    }
  }
  void on_close(hw::net::Connection&, hw::net::CloseReason, std::error_code ec) override {
    // Writes in flight on a closed connection: the store may have taken them.
    for (const auto& [token, seq] : pending_)
      log({{"type", "write"},
           {"phase", "fail"},
           {"token", token},
           {"seq", seq},
           {"error", "connection closed: " + ec.message()},
           {"definite", false}});
    pending_.clear();
    buffer_.clear();
  }

 private:
  struct Tick : hw::TimerEntry {
    explicit Tick(Holder* h) : hw::TimerEntry(&fire), holder(h) {}
    static void fire(hw::TimerEntry& e) { static_cast<Tick&>(e).holder->write(); }
    Holder* holder;
  };
  struct Wait : hw::TimerEntry {
    Wait() : hw::TimerEntry(&fire) {}
    static void fire(hw::TimerEntry& e) {
      auto f = std::move(static_cast<Wait&>(e).then);
      f();
    }
    std::function<void()> then;
  };

  static redis::ClientOptions client_options(const Options& o) {
    redis::ClientOptions co;
    const auto [host, port] = host_port(o.redis);
    co.connector.host = host;
    co.connector.port = port;
    co.command_timeout = o.lease;  // a renewal that has not come by the lease is moot
    return co;
  }
  static hw::net::ConnectorOptions store_options(const Options& o) {
    hw::net::ConnectorOptions so;
    const auto [host, port] = host_port(o.store);
    so.host = host;
    so.port = port;
    so.backoff_max = 500ms;
    return so;
  }

  void log(nlohmann::json e) {
    e["t"] = now_ms();
    e["proc"] = o_.id;
    std::fprintf(out_, "%s\n", e.dump().c_str());
    std::fflush(out_);
  }

  void later(hw::Duration d, std::function<void()> f) {
    wheel_.cancel(wait_);
    wait_.then = std::move(f);
    wheel_.schedule(wait_, d);
  }

  void take() {
    const auto refused = locks_.lock(o_.name, [this](std::error_code ec, std::uint64_t token) {
      if (ec) {
        log({{"type", "acquire"}, {"phase", "fail"}, {"error", ec.message()}});
        later(o_.pause, [this] { take(); });
        return;
      }
      log({{"type", "acquire"}, {"phase", "ok"}, {"token", token}});
      holding_ = true;
      token_ = token;
      later(o_.hold, [this] { give_back(); });
    });
    if (refused) {
      log({{"type", "acquire"}, {"phase", "fail"}, {"error", refused.message()}});
      later(o_.pause, [this] { take(); });
    }
  }

  void give_back() {
    if (!holding_) return;
    holding_ = false;
    const auto token = token_;
    const auto refused = locks_.unlock(o_.name, [this, token](std::error_code ec) {
      log({{"type", "release"}, {"token", token}, {"result", ec ? ec.message() : "ok"}});
    });
    if (refused) log({{"type", "release"}, {"token", token}, {"result", refused.message()}});
    later(o_.pause, [this] { take(); });
  }

  // What Kleppmann's client does: check the lock, then write with its token.
  // The check can be stale by the time the write lands (the write may sit in
  // a partitioned network): the store's fence is what makes that safe.
  void write() {
    wheel_.schedule(tick_, o_.write_every);
    if (!holding_ || !locks_.held(o_.name) || !store_.connected()) return;
    const auto seq = ++seq_;
    log({{"type", "write"}, {"phase", "invoke"}, {"token", token_}, {"seq", seq}});
    pending_.emplace_back(token_, seq);
    store_.connection()->write("W " + std::to_string(token_) + " " + o_.id + " " +
                               std::to_string(seq) + "\n");
  }

  const Options& o_;
  hw::LoopWheel wheel_;
  redis::Client client_;
  redis::Lock locks_;
  hw::net::Connector store_;
  Tick tick_;
  Wait wait_;
  std::FILE* out_ = nullptr;
  bool holding_ = false;
  std::uint64_t token_ = 0, seq_ = 0;
  std::string buffer_;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> pending_;  // (token, seq) awaiting answers
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "heartwheel-fault-lock: a redis::Lock holder writing to a fenced store with its "
      "fencing token (the fault runner's lock-partition scenario, "
      "tools/fault-runner/README.md). Exit status: 0 after SIGTERM, 1 runtime failure (the "
      "history file cannot be opened), 2 usage error.",
      "heartwheel-fault-lock"};
  auto duration = [&app](const char* name, hw::Duration& into, const char* help) {
    app.add_option_function<std::string>(
        name,
        [&into, name](const std::string& t) {
          try {
            into = hw::parse_duration(t);
          } catch (const std::invalid_argument& e) {
            throw CLI::ValidationError(name, e.what());
          }
        },
        help);
  };
  app.add_option("--redis", o.redis, "Redis HOST:PORT")->required();
  app.add_option("--store", o.store, "the fenced store's HOST:PORT")->required();
  app.add_option("--id", o.id, "this holder's name (the lock's owner, the store's writer)")
      ->required();
  app.add_option("--out", o.out, "history file (JSON lines, appended)")->required();
  app.add_option("--name", o.name, "the lock's name");
  duration("--lease", o.lease, "the lock's lease (default 2s)");
  duration("--hold", o.hold, "how long to keep the lock before unlock (default 3s)");
  duration("--pause", o.pause, "wait after a release, a loss or an error (default 500ms)");
  duration("--write-every", o.write_every, "a store write this often while held (default 100ms)");
  if (auto status = hw::cli::parse(app, argc, argv)) return *status;
  return hw::cli::run(app, [&] {
    uv_loop_t* loop = uv_default_loop();
    uv_signal_t on_term;
    {
      Holder holder(loop, o);
      holder.start();
      uv_signal_init(loop, &on_term);
      on_term.data = loop;
      uv_signal_start(
          &on_term, [](uv_signal_t* s, int) { uv_stop(static_cast<uv_loop_t*>(s->data)); },
          SIGTERM);
      uv_run(loop, UV_RUN_DEFAULT);
      uv_close(reinterpret_cast<uv_handle_t*>(&on_term), nullptr);
    }
    uv_run(loop, UV_RUN_DEFAULT);
    return 0;
  });
}
