// fanout-floor: finishing a send the kernel did not take whole.
#pragma once

#include <string_view>

namespace fanout_floor {

// Writes `rest` to the non-blocking socket `fd`, waiting with poll() for
// room. Throws std::runtime_error on a write error (the receiver is gone).
void send_rest(int fd, std::string_view rest);

}  // namespace fanout_floor
