// Reading from a testing::Peer until a given number of bytes arrived, with
// the host's virtual time moving so the connection's queued writes go out:
// shared by the write-path tests (connection_shared_write_test.cpp,
// connection_send_batch_test.cpp).
#pragma once

#include <heartwheel/testing/host.h>

#include <chrono>
#include <cstddef>
#include <string>

namespace heartwheel::testing {

// Reads until `n` bytes arrived or 10,000 steps of 1 ms passed (the caller
// checks what came).
inline std::string read_exactly(Host& host, Peer& peer, std::size_t n) {
  std::string got;
  for (int i = 0; i < 10000 && got.size() < n; ++i) {
    got += peer.received();
    host.run_for(std::chrono::milliseconds(1));
  }
  return got;
}

}  // namespace heartwheel::testing
