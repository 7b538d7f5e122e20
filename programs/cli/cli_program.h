// cli/cli_program.h - one exit status convention and one error format for every
// heartwheel program (programs/, examples/ and tools/).
//
// Exit status: 0 success; 1 a runtime failure (cannot bind, a worker died, a
// file cannot be written); 2 a usage error (unknown flag, bad value, flags
// that contradict each other), detected before the program starts its work.
// Programs may define further statuses above 2 for documented outcomes
// (heartwheel-load: 3 = --expect-idle-close not met).
//
// Errors go to stderr as ONE line, "NAME: error: WHAT", so scripts can grep
// them and people see which program complained. A usage error adds
// " (see NAME --help)".
//
// Typical main():
//   CLI::App app{"what it does", "heartwheel-echo"};
//   ... add options ...
//   if (auto status = heartwheel::cli::parse(app, argc, argv)) return *status;
//   Setup s;
//   try { s = make_setup(flags); }   // values checked here are usage errors
//   catch (const std::exception& e) { return heartwheel::cli::usage_error(app, e.what()); }
//   return heartwheel::cli::run(app, [&] { return serve(s); });
//
// Threads: call from main() only (writes to stderr, no shared state).
#pragma once

#include <heartwheel/common/time.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace CLI {
class App;
}

namespace heartwheel::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the run failed
inline constexpr int kExitUsage = 2;    // the command line is wrong; nothing was started

// Parses argv into `app` (whose name must be set: CLI::App{description, name}).
// Adds the flags every program takes first: --config FILE and --print-config
// (config_file.h), --log-format and --log-level (log_flags.h, applied to the
// process log once parsed).
// Returns nullopt when the program should go on, otherwise the status main()
// returns at once: 0 after --help or --print-config (printed on stdout), 2
// after a usage error (CLI11's own, an unknown key of the config file with
// its line, or any exception an option callback threw), printed as
// "NAME: error: WHAT (see NAME --help)".
std::optional<int> parse(CLI::App& app, int argc, const char* const* argv);

// Prints "NAME: error: WHAT (see NAME --help)" on stderr; returns kExitUsage.
int usage_error(const CLI::App& app, std::string_view what);

// Prints "NAME: error: WHAT" on stderr; returns kExitFailure.
int failure(const CLI::App& app, std::string_view what);

// heartwheel::parse_duration(text) for the value of `flag`; a refusal
// (std::invalid_argument) names the flag: "--read-idle: invalid duration '5x': ...".
Duration parse_duration_flag(std::string_view flag, std::string_view text);

// Runs the body of main(): returns what `body` returns; an exception that
// escapes it is printed with failure() and gives kExitFailure.
int run(const CLI::App& app, const std::function<int()>& body);

// Writes --pid-file (health.h) if given, then runtime::announce("listening",
// host, port), then "metrics on ADDRESS" unless `metrics_address` is empty
// (a metrics::Endpoint's address(), formatted): every server program's
// stdout, which scripts and tests wait for.
void announce_listening(std::string_view host, int port, std::string_view metrics_address = {});

// Replaces the file at `path` with `text` by writing PATH.tmp and renaming it,
// so a reader (a test, a dashboard polling --stats-json) never sees half a
// file. Throws std::runtime_error naming the file when either step fails.
void write_file_atomically(const std::string& path, std::string_view text);

}  // namespace heartwheel::cli
