// The --channels-config file: strict reading into a ChannelPolicy
// (channel_policy.h has the contract).
#include <heartwheel/auth/channel_name.h>
#include <heartwheel/auth/channel_policy.h>

#include <nlohmann/json.hpp>
#include <array>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "key_file.h"

namespace heartwheel::auth {

namespace {

using json = nlohmann::json;

[[noreturn]] void fail(std::string_view source, const std::string& where, std::string_view why) {
  std::string m(source);
  m.append(": ");
  if (!where.empty()) m.append(where).append(": ");
  m.append(why);
  throw std::invalid_argument(m);
}

// "line L, column C" of byte offset `byte` (1-based, as editors count).
std::string line_and_column(std::string_view text, std::size_t byte) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// Parses `text`, refusing a key repeated in one object (nlohmann keeps the
// last one silently; a config whose two "subscribe" keys disagree must not
// load as either).
json parse_strict(std::string_view text, std::string_view source) {
  std::vector<std::set<std::string>> keys;  // per open object
  std::string repeated;
  const json::parser_callback_t callback = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: keys.emplace_back(); break;
      case json::parse_event_t::object_end: keys.pop_back(); break;
      case json::parse_event_t::key:
        if (!keys.back().insert(parsed.get<std::string>()).second && repeated.empty())
          repeated = parsed.get<std::string>();
        break;
      default: break;
    }
    return true;
  };
  json doc;
  try {
    doc = json::parse(text.begin(), text.end(), callback);
  } catch (const json::parse_error& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 3,
    // column 5: ..."; keep its explanation, name the place once.
    std::string what = e.what();
    const std::size_t colon = what.find(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    fail(source, "", "not valid JSON at " + line_and_column(text, e.byte ? e.byte - 1 : 0) +
                         ": " + what);
  }
  if (!repeated.empty()) fail(source, "", "key \"" + repeated + "\" appears twice in one object");
  return doc;
}

std::string type_name(const json& v) { return v.type_name(); }

template <class Rule, std::size_t N>
Rule read_rule(const json& v, const std::string& where, std::string_view source,
               const std::array<std::pair<std::string_view, Rule>, N>& table) {
  std::string choices;
  for (const auto& [name, rule] : table) {
    if (!choices.empty()) choices += ", ";
    choices += name;
  }
  if (!v.is_string()) fail(source, where, "must be a string, one of " + choices);
  const auto& s = v.get_ref<const std::string&>();
  for (const auto& [name, rule] : table)
    if (s == name) return rule;
  fail(source, where, "\"" + s + "\" is not one of " + choices);
}

bool read_bool(const json& v, const std::string& where, std::string_view source) {
  if (!v.is_boolean()) fail(source, where, "must be true or false, not " + type_name(v));
  return v.get<bool>();
}

constexpr std::array<std::pair<std::string_view, SubscribeRule>, 3> kSubscribeRules = {{
    {"any", SubscribeRule::any}, {"user", SubscribeRule::user}, {"token", SubscribeRule::token}}};
constexpr std::array<std::pair<std::string_view, PublishRule>, 3> kPublishRules = {{
    {"none", PublishRule::none},
    {"user", PublishRule::user},
    {"subscriber", PublishRule::subscriber}}};

NamespaceRules read_namespace(const json& v, const std::string& where, std::string_view source) {
  if (!v.is_object()) fail(source, where, "must be an object, not " + type_name(v));
  NamespaceRules rules;
  bool named = false;
  for (const auto& [key, value] : v.items()) {
    const std::string at = where + "." + key;
    if (key == "name") {
      if (!value.is_string()) fail(source, at, "must be a string (\"\" is the default namespace)");
      rules.name = value.get<std::string>();
      if (!is_valid_namespace_name(rules.name))
        fail(source, at,
             "\"" + rules.name +
                 "\" is not a namespace name: printable ASCII without ':', '#', '\"' or '\\', "
                 "at most 255 bytes (\"\" is the default namespace)");
      named = true;
    } else if (key == "subscribe") {
      rules.subscribe = read_rule(value, at, source, kSubscribeRules);
    } else if (key == "publish") {
      rules.publish = read_rule(value, at, source, kPublishRules);
    } else if (key == "history") {
      rules.history = read_bool(value, at, source);
    } else if (key == "presence") {
      rules.presence = read_bool(value, at, source);
    } else {
      fail(source, where,
           "unknown key \"" + key + "\" (known: name, subscribe, publish, history, presence)");
    }
  }
  if (!named) fail(source, where, "has no \"name\" (\"\" is the default namespace)");
  return rules;
}

}  // namespace

ChannelPolicy ChannelPolicy::from_json(std::string_view text, std::string_view source) {
  const json doc = parse_strict(text, source);
  if (!doc.is_object())
    fail(source, "", "must be a JSON object {\"namespaces\": [...]}, not " + type_name(doc));
  for (const auto& [key, value] : doc.items())
    if (key != "namespaces") fail(source, "", "unknown key \"" + key + "\" (known: namespaces)");
  const auto it = doc.find("namespaces");
  if (it == doc.end()) fail(source, "", "has no \"namespaces\" array");
  if (!it->is_array()) fail(source, "namespaces", "must be an array, not " + type_name(*it));

  std::vector<NamespaceRules> namespaces;
  std::vector<std::string> places;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const std::string where = "namespaces[" + std::to_string(i) + "]";
    NamespaceRules rules = read_namespace((*it)[i], where, source);
    for (std::size_t j = 0; j < namespaces.size(); ++j)
      if (namespaces[j].name == rules.name)
        fail(source, where,
             "namespace \"" + rules.name + "\" is already defined by " + places[j]);
    namespaces.push_back(std::move(rules));
    places.push_back(where);
  }
  return ChannelPolicy(std::move(namespaces));
}

ChannelPolicy ChannelPolicy::from_file(const std::string& path) {
  const std::string text = detail::read_small_file(path, "channels config");
  if (detail::trim_trailing_newlines(text).empty())
    throw std::invalid_argument("channels config " + path + ": empty");
  return from_json(text, path);
}

}  // namespace heartwheel::auth
