// key_file.h (private) - reading a key, secret or config file once, with
// errors a person can act on.
#pragma once

#include <string>
#include <string_view>

namespace heartwheel::auth::detail {

// The whole file at `path`. `what` names it in errors ("HMAC secret file").
// Throws std::invalid_argument "<what> <path>: <why>" when the path is empty,
// the file is missing, unreadable, a directory or larger than `max_bytes`.
// An empty file is returned as "" (the caller says why that is wrong).
std::string read_small_file(const std::string& path, std::string_view what,
                            std::size_t max_bytes = 1 << 20);

// `text` without its trailing CR and LF characters (a file written by echo).
std::string_view trim_trailing_newlines(std::string_view text) noexcept;

}  // namespace heartwheel::auth::detail
