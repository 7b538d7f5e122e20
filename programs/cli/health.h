// cli/health.h - what a server program's /readyz says (the metrics
// listener's readiness: metrics::EndpointOptions::ready) and its --pid-file.
//
// Ready means: listening (the endpoint starts once the workers listen), its
// Redis reachable when it has one, and not draining (a signal, or a
// restart's successor took over: net/restart.h). /healthz is the endpoint's
// own: alive while it answers.
//
// Threads: readiness() returns a function for the endpoint's thread; the
// rest from main() only.
#pragma once

#include <functional>
#include <string>

namespace heartwheel::cli {

// The readiness check: "" when ready, else the reason ("draining", "redis
// unreachable"). `redis_up` (may be empty: no Redis) runs on the endpoint's
// thread and must be safe there (RedisBroker::stats() is).
std::function<std::string()> readiness(std::function<bool()> redis_up = {});

// --pid-file: remembers FILE (apply_server_flags calls it); write_pid_file()
// then replaces it with this process's pid, as announce_listening does once
// the workers listen (so a restart's successor rewrites it when it takes
// over). Throws std::runtime_error naming the file when it cannot be written.
void set_pid_file(std::string path);
void write_pid_file();

}  // namespace heartwheel::cli
