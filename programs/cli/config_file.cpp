// See config_file.h.
#include "config_file.h"

#include <CLI/CLI.hpp>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace heartwheel::cli {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// The file named by --config on the command line; empty without one.
std::string config_path(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") break;
    if (a == "--config" && i + 1 < argc) return argv[i + 1];
    if (a.rfind("--config=", 0) == 0) return std::string(a.substr(9));
  }
  return {};
}

bool is_config_key(const CLI::App& app, const std::string& key) {
  const CLI::Option* o = app.get_option_no_throw("--" + key);
  return o != nullptr && o->get_configurable();
}

// A number as it is, anything else a TOML literal string: no escapes to
// get wrong (CLI11 reads '...' as is).
std::string toml_string(const std::string& v) {
  static const std::regex number(R"(-?[0-9]+(\.[0-9]+)?)");
  if (std::regex_match(v, number)) return v;
  if (v.find('\'') == std::string::npos) return "'" + v + "'";
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A default not to print: an option this one excludes was given (an old
// name and its new one), so both in the file would be refused.
bool excluded_by_given(const CLI::Option& o) {
  for (const CLI::Option* other : o.get_excludes())
    if (other->count() > 0) return true;
  return false;
}

}  // namespace

void add_config_flags(CLI::App& app, bool& print) {
  app.set_config("--config", "",
                 "FILE: read settings from a TOML file, one key per flag (the long name without "
                 "--: listen = \"0.0.0.0:8000\"; a list for a repeatable flag); flags given on the "
                 "command line override it; a key that is no flag is an error naming its line")
      ->configurable(false);
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.add_flag("--print-config", print,
               "print the effective configuration (file, flags and defaults) as a config file "
               "on stdout and exit")
      ->configurable(false);
}

void check_config_keys(const CLI::App& app, int argc, const char* const* argv) {
  const std::string path = config_path(argc, argv);
  if (path.empty()) return;
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("--config: cannot read " + path);
  std::string section;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    std::string_view s = trim(text);
    if (s.empty() || s.front() == '#' || s.front() == ';') continue;
    if (s.front() == '[') {
      const auto end = s.find(']');
      section = std::string(trim(s.substr(1, end == std::string_view::npos ? 0 : end - 1)));
      if (section == "default") section.clear();
      continue;
    }
    const auto eq = s.find_first_of("=:");
    if (eq == std::string_view::npos) continue;  // a continued list's line
    std::string key(trim(s.substr(0, eq)));
    if (key.empty() || key.front() == '"' || key.front() == '\'' || key.front() == ']') continue;
    if (!section.empty()) key = section + "." + key;
    if (!is_config_key(app, key))
      throw std::invalid_argument(path + ":" + std::to_string(line) + ": unknown key '" + key +
                                  "' (a key is a long flag without its --)");
  }
}

std::string effective_config(const CLI::App& app) {
  std::string out = "# " + app.get_name() + " --print-config\n";
  for (const CLI::Option* o : app.get_options()) {
    if (!o->get_configurable() || o->get_lnames().empty()) continue;
    const std::string key = o->get_lnames().front();
    if (key == "help") continue;
    std::vector<std::string> values;
    const bool flag = o->get_expected_max() == 0;  // add_flag: expected(0)
    if (o->count() > 0) {
      if (flag) {
        values.push_back(o->as<bool>() ? "true" : "false");
      } else {
        values = o->results();
      }
    } else if (!flag && o->get_items_expected_max() <= 1 && !o->get_default_str().empty() &&
               !excluded_by_given(*o)) {
      values.push_back(o->get_default_str());
    } else {
      continue;
    }
    out += key + " = ";
    const bool list = o->get_items_expected_max() > 1;
    if (flag) {
      out += values.front();
    } else if (list) {
      out += "[";
      for (std::size_t i = 0; i < values.size(); ++i)
        out += (i ? ", " : "") + toml_string(values[i]);
      out += "]";
    } else {
      out += toml_string(values.back());
    }
    out += "\n";
  }
  return out;
}

}  // namespace heartwheel::cli
