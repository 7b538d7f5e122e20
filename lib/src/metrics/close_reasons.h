// A counter family of connections closed by net::CloseReason, every named
// reason written (zeros included), as the net and WebSocket writers both
// need it.
// Internal to lib/src/metrics.
#pragma once

#include <heartwheel/metrics/text_writer.h>
#include <heartwheel/net/close_reason.h>

#include <array>
#include <cstdint>
#include <string_view>

namespace heartwheel::metrics {

inline void write_close_reasons(TextWriter& out, std::string_view name, std::string_view help,
                                const net::CloseReasonCounts& closed) {
  out.family(name, Type::counter, help);
  for (std::size_t i = 0; i < closed.size(); ++i) {
    const auto reason = static_cast<net::CloseReason>(i);
    if (net::is_named(reason)) out.sample(closed[i], {{"reason", net::to_string(reason)}});
  }
}

}  // namespace heartwheel::metrics
