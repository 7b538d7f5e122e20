// See api.h.
#include "api.h"

#include <heartwheel/pubsub/broker.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "bounded_json.h"
#include "protocol.h"

namespace pushsrv {

using Json = nlohmann::json;

std::string error_json(std::string_view code, std::string_view message) {
  return Json{{"error", {{"code", code}, {"message", message}}}}.dump();
}

std::string accepted_json(std::string_view id, std::int64_t due_ms) {
  return Json{{"id", id}, {"due_ms", due_ms}}.dump();
}

std::string published_json(std::string_view id, std::int64_t due_ms, std::uint64_t offset,
                           std::string_view epoch) {
  return Json{{"id", id}, {"due_ms", due_ms}, {"offset", offset}, {"epoch", epoch}}.dump();
}

std::variant<PublishRequest, ApiError> parse_publish(std::string_view body,
                                                     const heartwheel::pubsub::Limits& limits,
                                                     heartwheel::Duration max_delay,
                                                     std::size_t max_depth) {
  heartwheel::cli::BoundedJson parsed = heartwheel::cli::parse_bounded_json(body, max_depth);
  if (parsed.status == heartwheel::cli::BoundedJson::Status::too_deep)
    return ApiError{400, "too_deep",
                    "the body nests arrays and objects more than " + std::to_string(max_depth) +
                        " deep"};
  if (parsed.status != heartwheel::cli::BoundedJson::Status::ok)
    return ApiError{400, "bad_json", "the body is not JSON"};
  const Json req = std::move(parsed.value);
  if (!req.is_object())
    return ApiError{400, "bad_request",
                    "the body is a JSON object: {\"channel\":\"c\",\"data\":...,\"delay_ms\":N}"};
  PublishRequest out;
  const auto channel = req.find("channel");
  if (channel == req.end() || !channel->is_string())
    return ApiError{400, "bad_request", "\"channel\" must be a string"};
  out.channel = channel->get<std::string>();
  if (const std::error_code ec = heartwheel::pubsub::validate_channel(out.channel, limits))
    return ApiError{400, chat::error_code_name(ec), ec.message()};
  const auto data = req.find("data");
  if (data == req.end())
    return ApiError{400, "bad_request", "\"data\" is required (any JSON value)"};
  out.data = data->dump();
  if (out.data.size() > limits.max_data_bytes)
    return ApiError{400, "data_too_large",
                    "\"data\" is " + std::to_string(out.data.size()) + " bytes of JSON; at most " +
                        std::to_string(limits.max_data_bytes)};
  if (const auto delay = req.find("delay_ms"); delay != req.end() && !delay->is_null()) {
    const auto max_ms = std::chrono::duration_cast<std::chrono::milliseconds>(max_delay).count();
    if (!delay->is_number_integer() || delay->get<std::int64_t>() < 0 ||
        delay->get<std::int64_t>() > max_ms)
      return ApiError{400, "bad_request",
                      "\"delay_ms\" must be an integer from 0 to " + std::to_string(max_ms)};
    out.delay_ms = delay->get<std::int64_t>();
  }
  if (const auto key = req.find("idempotency_key"); key != req.end() && !key->is_null()) {
    if (!key->is_string() ||
        !heartwheel::pubsub::is_caller_idempotency_key(key->get<std::string>()))
      return ApiError{400, "bad_request",
                      "\"idempotency_key\" must be a string of 1 to 256 bytes without control "
                      "characters"};
    // A delayed push is stored under an id of its own, which a retry
    // cannot know: cancel the first one by its id instead.
    if (out.delay_ms > 0)
      return ApiError{400, "bad_request",
                      "\"idempotency_key\" is for immediate publishes (no delay_ms); a delayed "
                      "push is retried safely by cancelling the first one's id"};
    out.idempotency_key = key->get<std::string>();
  }
  return out;
}

bool is_json_content_type(const std::string* value) {
  if (value == nullptr) return false;
  std::string_view v(*value);
  v = v.substr(0, v.find(';'));
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  constexpr std::string_view kJson = "application/json";
  if (v.size() != kJson.size()) return false;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(v[i])) != kJson[i]) return false;
  return true;
}

std::string_view id_from_path(std::string_view path) {
  constexpr std::string_view kPrefix = "/publish/";
  if (path.substr(0, kPrefix.size()) != kPrefix) return {};
  const std::string_view id = path.substr(kPrefix.size());
  if (id.empty() || id.size() > 128) return {};
  for (const char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-'))
      return {};
  return id;
}

}  // namespace pushsrv
