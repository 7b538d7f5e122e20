// See log_flags.h.
#include "log_flags.h"

#include <heartwheel/common/log.h>

#include <CLI/CLI.hpp>
#include <stdexcept>

namespace heartwheel::cli {

void add_log_flags(CLI::App& app, LogFlags& flags) {
  app.add_option("--log-format", flags.format,
                 "text (a line: TIME NAME: [LEVEL: ]WHAT key=value...) or json (one object a "
                 "line: time, level, program, loop, msg and the fields)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--log-level", flags.level,
                 "the least severe lines written: debug, info, warning or error")
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}))
      ->capture_default_str();
}

void apply_log_flags(const LogFlags& flags, const std::string& program) {
  const auto format = log::parse_format(flags.format);
  if (!format)
    throw std::invalid_argument("--log-format: text or json, not '" + flags.format + "'");
  const auto level = log::parse_level(flags.level);
  if (!level) throw std::invalid_argument("--log-level: debug, info, warning or error");
  log::Options o = log::options();
  o.format = *format;
  o.level = *level;
  o.program = program;
  log::configure(std::move(o));
}

}  // namespace heartwheel::cli
