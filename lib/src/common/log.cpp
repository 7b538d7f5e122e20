// See heartwheel/common/log.h.
#include <heartwheel/common/log.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

namespace heartwheel::log {

namespace {

Options& config() noexcept {
  static Options o;
  return o;
}

thread_local int t_loop = -1;

std::string executable_name() {
#ifdef __GLIBC__
  return program_invocation_short_name;
#else
  return "heartwheel";
#endif
}

const std::string& program_name() {
  const Options& o = config();
  if (!o.program.empty()) return o.program;
  static const std::string exe = executable_name();
  return exe;
}

// "2026-11-28T10:11:12.345Z": UTC, milliseconds, as RFC 3339 has it.
std::string timestamp(std::int64_t ms) {
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char buf[96];  // room for any int the compiler can imagine in each field
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buf;
}

// A JSON string; bytes that are not UTF-8 become U+FFFD rather than an
// exception (a peer's bytes may end up in a message).
std::string json_string(std::string_view s) {
  return nlohmann::json(std::string(s))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool needs_quotes(std::string_view v) {
  if (v.empty()) return true;
  for (char c : v)
    if (c == ' ' || c == '"' || c == '=' || c == '\t' || c == '\n') return true;
  return false;
}

void to_stderr(std::string_view line) {
  std::string out(line);
  out += '\n';
  // One write(2): lines of two threads never interleave.
  const char* p = out.data();
  std::size_t left = out.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace

std::string_view to_string(Level level) noexcept {
  switch (level) {
    case Level::debug:
      return "debug";
    case Level::info:
      return "info";
    case Level::warning:
      return "warning";
    case Level::error:
      return "error";
  }
  return "info";
}

std::string_view to_string(Format format) noexcept {
  return format == Format::json ? "json" : "text";
}

std::optional<Level> parse_level(std::string_view text) noexcept {
  if (text == "debug") return Level::debug;
  if (text == "info") return Level::info;
  if (text == "warning" || text == "warn") return Level::warning;
  if (text == "error") return Level::error;
  return std::nullopt;
}

std::optional<Format> parse_format(std::string_view text) noexcept {
  if (text == "text") return Format::text;
  if (text == "json") return Format::json;
  return std::nullopt;
}

void configure(Options options) { config() = std::move(options); }

const Options& options() noexcept { return config(); }

bool enabled(Level level) noexcept {
  return static_cast<int>(level) >= static_cast<int>(config().level);
}

void set_thread_loop(int index) noexcept { t_loop = index; }

std::string format_line(const Options& options, std::int64_t time_ms, int loop, Level level,
                        std::string_view message, std::initializer_list<Field> fields) {
  const std::string& program = options.program.empty() ? program_name() : options.program;
  std::string line;
  line.reserve(64 + message.size());
  if (options.format == Format::json) {
    line += "{\"time\":\"" + timestamp(time_ms) + "\",\"level\":\"";
    line += to_string(level);
    line += "\",\"program\":" + json_string(program);
    if (loop >= 0) line += ",\"loop\":" + std::to_string(loop);
    line += ",\"msg\":" + json_string(message);
    for (const Field& f : fields) {
      line += ',' + json_string(f.key) + ':';
      line += f.number ? f.value : json_string(f.value);
    }
    line += '}';
    return line;
  }
  line += timestamp(time_ms) + ' ' + program + ": ";
  if (level != Level::info) {
    line += to_string(level);
    line += ": ";
  }
  line += message;
  if (loop >= 0) line += " loop=" + std::to_string(loop);
  for (const Field& f : fields) {
    line += ' ';
    line += f.key;
    line += '=';
    line += needs_quotes(f.value) ? json_string(f.value) : f.value;
  }
  return line;
}

void write(Level level, std::string_view message, std::initializer_list<Field> fields) noexcept {
  if (!enabled(level)) return;
  try {
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    const Options& o = config();
    const std::string line = format_line(o, now, t_loop, level, message, fields);
    if (o.sink)
      o.sink(line);
    else
      to_stderr(line);
  } catch (...) {
    // A log line is never worth an exception across a loop.
  }
}

}  // namespace heartwheel::log
