// cli/config_file.h - --config FILE and --print-config for every program
// (cli::parse adds them): the same settings as the flags, one spelling for
// both, in a TOML file as CLI11 reads it.
//
//   # /etc/heartwheel/chat.toml
//   listen = "0.0.0.0:8000"       # --listen 0.0.0.0:8000
//   workers = 4                   # --workers 4
//   no-join-leave = true          # a flag
//   origin = ["https://a.example", "https://b.example"]   # repeatable
//
// Keys are the long flag names without "--". Flags on the command line
// override the file (CLI11: a value from the command line is never replaced
// by one from the file). A key that is no flag of the program is a usage
// error naming the key, the file and its line ("FILE:3: unknown key
// 'workrs'"), checked before anything starts. --print-config writes the
// effective configuration (the file, the command line and the defaults a
// flag states in --help) as such a file on stdout and exits 0; feeding it
// back with --config gives the same configuration.
//
// Threads: from main() only.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace heartwheel::cli {

// Registers --config FILE and --print-config on `app`. `print` is set by
// --print-config.
void add_config_flags(CLI::App& app, bool& print);

// Checks the keys of the config file named on the command line (--config
// FILE or --config=FILE), if any, against `app`'s options. Throws
// std::invalid_argument "FILE:LINE: unknown key 'KEY' (...)" for the first
// one that is not a flag of `app`, or "cannot read FILE" when it cannot be
// read. Call before app.parse(): CLI11 itself would only say "INI was not
// able to parse KEY".
void check_config_keys(const CLI::App& app, int argc, const char* const* argv);

// The effective configuration of a parsed `app` as a config file: one
// "key = value" line per option that was given (file or command line) or
// states a default, in --help's order, --config and --print-config left out.
std::string effective_config(const CLI::App& app);

}  // namespace heartwheel::cli
