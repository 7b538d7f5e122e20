// A lock holder in a process of its own, for redis_lock_test.cpp to kill
// (SIGKILL) and freeze (SIGSTOP): takes one redis::Lock and reports on
// stdout, one line each:
//   locked TOKEN            the lock is ours, with its fencing token
//   lost TOKEN REASON       on_lost ran (REASON: the error's message)
//   unlocked RESULT         after SIGUSR1: unlock()'s outcome ("ok" or the
//                           error's message), or "refused: MESSAGE"
// and exits 0 on SIGTERM.
//   usage: redis_lock_holder PORT NAME LEASE_MS
#include <heartwheel/redis/client.h>
#include <heartwheel/redis/lock.h>
#include <heartwheel/timer/loop_wheel.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace redis = heartwheel::redis;

namespace {

void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

std::string text(std::error_code ec) { return ec ? ec.message() : "ok"; }

struct Holder {
  uv_loop_t* loop;
  redis::Lock* lock;
  std::string name;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: redis_lock_holder PORT NAME LEASE_MS\n");
    return 2;
  }
  uv_loop_t* loop = uv_default_loop();
  {
    heartwheel::LoopWheel wheel(loop, {.tick = std::chrono::milliseconds(1)});
    redis::ClientOptions co;
    co.connector.port = std::atoi(argv[1]);
    redis::Client client(wheel, co);
    client.start();
    redis::Lock lock(wheel, client,
                     {.lease = std::chrono::milliseconds(std::atoi(argv[3])),
                      .on_lost = [](std::string_view, std::uint64_t token, std::error_code why) {
                        say("lost " + std::to_string(token) + " " + why.message());
                      }});
    Holder holder{loop, &lock, argv[2]};
    if (auto refused = lock.lock(holder.name, [](std::error_code ec, std::uint64_t token) {
          say(ec ? "failed " + ec.message() : "locked " + std::to_string(token));
        })) {
      say("failed " + refused.message());
      return 1;
    }
    uv_signal_t on_usr1, on_term;
    uv_signal_init(loop, &on_usr1);
    uv_signal_init(loop, &on_term);
    on_usr1.data = on_term.data = &holder;
    uv_signal_start(
        &on_usr1,
        [](uv_signal_t* s, int) {
          auto* h = static_cast<Holder*>(s->data);
          if (auto ec = h->lock->unlock(h->name, [](std::error_code e) { say("unlocked " + text(e)); }))
            say("unlocked refused: " + ec.message());
        },
        SIGUSR1);
    uv_signal_start(
        &on_term, [](uv_signal_t* s, int) { uv_stop(static_cast<Holder*>(s->data)->loop); }, SIGTERM);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_close(reinterpret_cast<uv_handle_t*>(&on_usr1), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&on_term), nullptr);
  }
  uv_run(loop, UV_RUN_DEFAULT);
  return 0;
}
