// heartwheel/common/log.h - the one log of a heartwheel process: levels, a
// timestamp, the loop, fields; a text line by default or one JSON object a
// line, on stderr.
//
// What it is
//   Every library warning and every program's own lines go through here, so
//   an operator sets the format and the level once (--log-format,
//   --log-level: programs/cli/log_flags.h) and a log pipeline parses every
//   line the same way. What is not a log stays outside: a program's usage
//   errors ("NAME: error: WHAT", exit 2), --help, and the "listening on
//   HOST:PORT" lines on stdout that scripts wait for.
//
//   text (the default), one line each:
//     2026-11-28T10:11:12.345Z heartwheel-chat: warning: redis: connection refused loop=1
//     node=a:6379
//   "LEVEL: " is written for debug, warning and error; info lines have none,
//   so the lines a person reads stay as they were ("NAME: signal 15, ...").
//   A field's value with a space, '"' or '=' is written quoted.
//   json, one object a line (keys in this order, then the fields'):
//     {"time":"2026-11-28T10:11:12.345Z","level":"warning","program":"heartwheel-chat",
//      "loop":1,"msg":"redis: connection refused","node":"a:6379"}
//   "loop" is the worker loop the line comes from (runtime::Workers sets it on
//   each worker thread: set_thread_loop), absent elsewhere.
//
// Ownership and threads: configure() from main() before any other thread
//   starts (it is not synchronised); write() from any thread: each line is
//   formatted whole and written with one call, so lines of two threads never
//   mix. The sink runs on the writing thread.
// Cost: a line below the level costs one comparison (enabled()); a written
//   one a string built and one write(2) (stderr is unbuffered).
// Errors: write() never throws (a failed allocation or write loses the line).
// Dependencies: none in this header beyond the standard library.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace heartwheel::log {

enum class Level : int { debug = 0, info = 1, warning = 2, error = 3 };
enum class Format { text, json };

// "debug", "info", "warning", "error" (as --log-level takes them).
std::string_view to_string(Level level) noexcept;
std::string_view to_string(Format format) noexcept;
// The inverse; "warn" is also taken for warning. nullopt for anything else.
std::optional<Level> parse_level(std::string_view text) noexcept;
std::optional<Format> parse_format(std::string_view text) noexcept;

// One key and its value. A number is written unquoted in JSON.
struct Field {
  std::string_view key;
  std::string value;
  bool number = false;
};
inline Field field(std::string_view key, std::string_view value) {
  return {key, std::string(value), false};
}
inline Field field(std::string_view key, std::int64_t value) {
  return {key, std::to_string(value), true};
}
inline Field field(std::string_view key, std::uint64_t value) {
  return {key, std::to_string(value), true};
}
inline Field field(std::string_view key, int value) {
  return field(key, static_cast<std::int64_t>(value));
}
inline Field field(std::string_view key, unsigned value) {
  return field(key, static_cast<std::uint64_t>(value));
}

// Where whole lines go, without their newline. Default: stderr.
using Sink = std::function<void(std::string_view line)>;

struct Options {
  Level level = Level::info;  // lines below it are dropped
  Format format = Format::text;
  // Names the process in every line; empty: the executable's name.
  std::string program{};
  Sink sink{};  // empty: stderr
};

// Replaces the configuration. Preconditions: no other thread writes (call
// from main() first, or from a test between runs).
void configure(Options options);
// The configuration in force.
const Options& options() noexcept;

// True when a line at `level` would be written.
bool enabled(Level level) noexcept;

// Writes one line (above). Any thread.
void write(Level level, std::string_view message,
           std::initializer_list<Field> fields = {}) noexcept;

inline void debug(std::string_view m, std::initializer_list<Field> f = {}) noexcept {
  write(Level::debug, m, f);
}
inline void info(std::string_view m, std::initializer_list<Field> f = {}) noexcept {
  write(Level::info, m, f);
}
inline void warning(std::string_view m, std::initializer_list<Field> f = {}) noexcept {
  write(Level::warning, m, f);
}
inline void error(std::string_view m, std::initializer_list<Field> f = {}) noexcept {
  write(Level::error, m, f);
}

// The calling thread's loop in every line it writes ("loop": index); -1:
// none (the default).
void set_thread_loop(int index) noexcept;

// The line write() would produce for these values (no newline) at `time_ms`
// milliseconds since the Unix epoch: what tests compare with.
std::string format_line(const Options& options, std::int64_t time_ms, int loop, Level level,
                        std::string_view message, std::initializer_list<Field> fields);

}  // namespace heartwheel::log
