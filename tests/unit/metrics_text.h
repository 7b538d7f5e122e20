// What the metrics tests read from an exposition: its family names and
// whole lines.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace metrics_text {

// The family names of an exposition, in order (from its TYPE lines).
inline std::vector<std::string> families(const std::string& text) {
  std::vector<std::string> names;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) != 0) continue;
    names.push_back(line.substr(7, line.find(' ', 7) - 7));
  }
  return names;
}

// Whether `line` is one whole line of `text`.
inline bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

}  // namespace metrics_text
