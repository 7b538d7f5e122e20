// cli/log_flags.h - --log-format and --log-level for every program (cli::parse
// adds them), written into the process log (heartwheel/common/log.h).
//
//   --log-format text|json   text (default): "TIME NAME: [LEVEL: ]WHAT k=v";
//                            json: one object a line (time, level, program,
//                            loop, msg, fields)
//   --log-level LEVEL        debug, info (default), warning, error
//
// Usage errors ("NAME: error: WHAT", exit 2) and --help are not logs and do
// not change with these; neither do the "listening on" lines on stdout.
// Threads: from main() only, before any other thread starts.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace heartwheel::cli {

struct LogFlags {
  std::string format = "text";
  std::string level = "info";
};

// Registers --log-format and --log-level (checked values: a bad one is a
// usage error naming the flag).
void add_log_flags(CLI::App& app, LogFlags& flags);

// Configures the process log from `flags`, naming the program `program`.
// Throws std::invalid_argument naming the flag for a value it does not know.
void apply_log_flags(const LogFlags& flags, const std::string& program);

}  // namespace heartwheel::cli
