// See cli_program.h.
#include "cli_program.h"

#include <heartwheel/common/duration_parse.h>
#include <heartwheel/runtime/serve.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <string>

#include "config_file.h"
#include "health.h"
#include "log_flags.h"

namespace heartwheel::cli {

namespace {

// One line even when a message spans several (CLI11 joins some with '\n').
std::string one_line(std::string_view text) {
  std::string out(text);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  for (char& ch : out)
    if (ch == '\n') ch = ' ';
  return out;
}

}  // namespace

int usage_error(const CLI::App& app, std::string_view what) {
  const std::string& name = app.get_name();
  std::fprintf(stderr, "%s: error: %s (see %s --help)\n", name.c_str(), one_line(what).c_str(),
               name.c_str());
  return kExitUsage;
}

int failure(const CLI::App& app, std::string_view what) {
  std::fprintf(stderr, "%s: error: %s\n", app.get_name().c_str(), one_line(what).c_str());
  return kExitFailure;
}

std::optional<int> parse(CLI::App& app, int argc, const char* const* argv) {
  // One app per process parses (main()'s): the operating flags' values live
  // here, for the process.
  static LogFlags log_flags;
  static bool print_config = false;
  try {
    if (app.get_option_no_throw("--config") == nullptr) {
      add_config_flags(app, print_config);
      add_log_flags(app, log_flags);
    }
    check_config_keys(app, argc, argv);
    app.parse(argc, argv);
    apply_log_flags(log_flags, app.get_name());
    if (print_config) {
      std::fputs(effective_config(app).c_str(), stdout);
      std::fflush(stdout);
      return kExitOk;
    }
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    // --help and friends are "errors" with status 0: CLI11 prints them.
    if (e.get_exit_code() == 0) return app.exit(e);
    return usage_error(app, e.what());
  } catch (const std::exception& e) {
    // An option callback refused its value (a duration, an address list...).
    return usage_error(app, e.what());
  }
}

Duration parse_duration_flag(std::string_view flag, std::string_view text) {
  try {
    return parse_duration(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(flag) + ": " + e.what());
  }
}

void write_file_atomically(const std::string& path, std::string_view text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot rename " + tmp + " to " + path);
}

void announce_listening(std::string_view host, int port, std::string_view metrics_address) {
  write_pid_file();  // before anyone is told: a restart's predecessor drains then
  runtime::announce("listening", host, port);
  if (metrics_address.empty()) return;
  std::printf("metrics on %.*s\n", static_cast<int>(metrics_address.size()),
              metrics_address.data());
  std::fflush(stdout);
}

int run(const CLI::App& app, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return failure(app, e.what());
  }
}

}  // namespace heartwheel::cli
