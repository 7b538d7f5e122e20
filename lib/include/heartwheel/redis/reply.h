// heartwheel/redis/reply.h - one Redis reply (RESP2), as a plain value.
//
// What it is
//   The tree a reply is made of: nil, a status ("+OK"), an error ("-ERR
//   ..."), an integer, a bulk string (binary-safe) or an array of replies.
//   ReplyReader (reader.h) builds them straight from the bytes Redis sent;
//   callbacks get them by value (move them to keep them). encode() writes the
//   RESP bytes of a reply back, which tests and the fuzz target use.
//
// Cost: about 72 bytes per node plus the string's and the array's heap
//   buffers (a std::string keeps up to 15 bytes inline).
// Threads: a plain value. Distinct objects: safe; shared objects: const only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace heartwheel::redis {

enum class ReplyType : std::uint8_t { nil, status, error, integer, string, array };

// "nil", "status", "error", "integer", "string", "array".
const char* to_string(ReplyType type) noexcept;

class Reply {
 public:
  // A nil reply ("$-1" or "*-1").
  Reply() = default;

  static Reply status(std::string text);
  static Reply error(std::string text);
  static Reply integer(std::int64_t value);
  static Reply string(std::string bytes);
  static Reply array(std::vector<Reply> elements);

  ReplyType type() const noexcept { return type_; }
  bool is_nil() const noexcept { return type_ == ReplyType::nil; }
  bool is_error() const noexcept { return type_ == ReplyType::error; }
  bool is_string() const noexcept { return type_ == ReplyType::string; }
  bool is_array() const noexcept { return type_ == ReplyType::array; }
  bool is_integer() const noexcept { return type_ == ReplyType::integer; }
  bool is_status() const noexcept { return type_ == ReplyType::status; }

  // The bytes of a status, error or bulk string; empty for other types.
  std::string_view str() const noexcept { return str_; }
  // Moves the bytes out (status, error, string); the reply keeps an empty string.
  std::string take_str() noexcept { return std::move(str_); }
  // The value of an integer reply; 0 for other types.
  std::int64_t integer() const noexcept { return integer_; }
  // The elements of an array; empty for other types.
  const std::vector<Reply>& elements() const noexcept { return elements_; }
  std::vector<Reply>& elements() noexcept { return elements_; }
  std::size_t size() const noexcept { return elements_.size(); }
  // Precondition: is_array() and i < size().
  const Reply& operator[](std::size_t i) const noexcept { return elements_[i]; }

  // True when `str()` equals `text` ignoring ASCII case (status and string
  // replies): reply.is("pong").
  bool is(std::string_view text) const noexcept;

  bool operator==(const Reply&) const = default;

 private:
  friend struct ReplyBuilder;  // reader.cpp builds replies in place
  ReplyType type_ = ReplyType::nil;
  std::int64_t integer_ = 0;
  std::string str_;
  std::vector<Reply> elements_;
};

// The reply's RESP2 bytes ("$-1\r\n" for nil). Status and error texts must
// not contain CR or LF (Redis never sends such); they are written as given.
std::string encode(const Reply& reply);
// A one-line rendering for logs and test failures: nil, +OK, -ERR x, (42),
// "bytes" (C escapes), [a, b].
std::string to_debug_string(const Reply& reply);

}  // namespace heartwheel::redis
