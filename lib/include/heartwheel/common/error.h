// heartwheel/common/error.h - the one error vocabulary of the library.
//
// heartwheel::errc names the library's own conditions; heartwheel_category()
// also carries libuv's negative error codes, so one std::error_code type flows
// through every layer: uv_error(UV_ECONNRESET).message() reads
// "connection reset by peer" and .value() is the libuv code.
// Rules: no exception crosses the event loop (callbacks get error codes);
// constructors and configuration validation throw with a message a user can
// act on; after an operation returns an error, none of its callbacks run.
#pragma once

#include <string>
#include <system_error>

namespace heartwheel {

enum class errc {
  ok = 0,
  // Library conditions use positive values; libuv codes are negative.
  closed = 1,           // the connection or server is closed or closing
  limit_reached,        // a configured limit (connections, queue bytes) refused this
  timed_out,            // a deadline passed
  invalid_argument,     // bad configuration or call argument
  protocol_error,       // the peer sent bytes a codec could not accept
  frame_too_large,      // a frame or message exceeded the configured maximum
  shutting_down,        // refused because the server is draining
  unavailable,          // no server could take it: none connected, or all ejected (net::Pool)
  too_large,            // a response or message exceeded the configured size limit
};

const std::error_category& heartwheel_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), heartwheel_category()};
}

// Wraps a libuv return value (negative = error, e.g. UV_EMFILE).
inline std::error_code uv_error(int uv_code) noexcept {
  return {uv_code, heartwheel_category()};
}

// Throws std::system_error("<what>: <libuv message>") when uv_code < 0.
// For setup paths only; never called on the loop's hot path.
void check_uv(int uv_code, const char* what);

// "EMFILE", "ECONNREFUSED", ...: the libuv error name, for counters and JSON.
std::string error_name(const std::error_code& ec);

}  // namespace heartwheel

template <>
struct std::is_error_code_enum<heartwheel::errc> : std::true_type {};
