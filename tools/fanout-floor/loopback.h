// fanout-floor: the sending side's sockets. A listener on 127.0.0.1 (port 0)
// and the accepted connections, set up as heartwheel's connections are
// (non-blocking, TCP_NODELAY).
//
// Threads: the calling thread only.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstddef>
#include <vector>

namespace fanout_floor {

class ReceiverFleet;

// Listens on 127.0.0.1, a port the kernel picks. Returns the socket and
// fills `address`. Throws std::runtime_error on failure.
int listen_loopback(sockaddr_in& address);

// Accepts `n` connections on `listener` while `fleet` connects them. Throws
// std::runtime_error when a receiver failed, accept() fails, or `timeout`
// passes first.
std::vector<int> accept_all(int listener, std::size_t n, const ReceiverFleet& fleet,
                            std::chrono::milliseconds timeout);

// Raises the soft limit of open files to the hard one; returns the limit.
std::size_t raise_open_files_limit();

}  // namespace fanout_floor
