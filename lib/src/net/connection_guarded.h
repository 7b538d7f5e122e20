// Connection::guarded, shared by connection.cpp and connection_write.cpp
// (private to lib/src/net): runs a handler callback so that no exception
// crosses the loop; a throwing handler closes its connection (reason error)
// and is counted in handler_exceptions.
#pragma once

#include <heartwheel/common/error.h>
#include <heartwheel/net/connection.h>

namespace heartwheel::net {

template <class F>
bool Connection::guarded(F&& f) noexcept {
  try {
    f();
    return true;
  } catch (...) {
    ++stats().handler_exceptions;
    close(CloseReason::error, make_error_code(errc::protocol_error));
    return false;
  }
}

}  // namespace heartwheel::net
