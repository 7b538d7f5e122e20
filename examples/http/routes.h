// The example server's routes: GET / (short text), POST /echo (echoes the
// body), GET /delay?ms=N (answers after N ms from a wheel entry: no thread
// sleeps, the loop keeps serving others meanwhile).
#pragma once

#include <heartwheel/http/session.h>

namespace heartwheel_example {

// The longest /delay accepted; longer values are clamped (the request timeout
// usually answers 503 first anyway).
inline constexpr std::chrono::milliseconds kMaxDelay{60'000};

heartwheel::http::Handler make_routes();

}  // namespace heartwheel_example
