// The example server's routes: GET / (short text), POST /echo (echoes the
// body), GET /delay?ms=N (answers after N ms from a wheel entry: no thread
// sleeps, the loop keeps serving others meanwhile), GET /bytes?n=N (N bytes:
// a large answer for slow-read tests, tools/slow-attack).
#pragma once

#include <heartwheel/http/session.h>

namespace heartwheel_example {

// The longest /delay accepted; longer values are clamped (the request timeout
// usually answers 503 first anyway).
inline constexpr std::chrono::milliseconds kMaxDelay{60'000};

// The largest /bytes answer; larger values are refused (400).
inline constexpr std::size_t kMaxBytes = 1024 * 1024;

heartwheel::http::Handler make_routes();

}  // namespace heartwheel_example
