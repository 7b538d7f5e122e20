// edge_reader.h - a host's connections read in the order their data came.
//
// libuv polls the streams it reads level-triggered: every descriptor
// epoll_wait reported goes straight back on the kernel's ready list, so the
// next epoll_wait serves the connections it served last time first, in the
// same order, ahead of connections whose data came earlier. Under a steady
// load of many small requests that is a tail: the same connections wait
// behind the others turn after turn. Edge-triggered, a descriptor joins the
// list when its data arrives, first come first served, as nginx polls.
// (docs/bench-history/http.md, "Reading in arrival order", measured the
// difference: p99 of a keep-alive HTTP load.)
//
// An EdgeReader is an epoll set of its own whose members are edge-triggered;
// the host's loop watches the set's descriptor with one uv_poll_t, so the
// loop wakes when any member has new data, and the reader then hands each
// ready connection to Connection::read_ready in arrival order. A short read
// means the socket is empty and its next data is a new edge, except after
// the peer's FIN: data and FIN that came together are one edge, so once
// epoll says the peer ended (EPOLLRDHUP) the connection reads on to the end.
// Writing, shutdown and closing stay libuv's: a member's socket is still its
// uv_tcp_t.
//
// One per host, made by the host's first connection that reads through it
// and closed (its uv_poll_t too) when the last member leaves, so a host whose
// connections all closed leaves no handle of ours on its loop.
// Threads: the host's loop thread. Linux only: elsewhere start() returns
// false and connections read through uv_read_start.
#pragma once
#include <uv.h>

#include <cstddef>

namespace heartwheel::net {
class Connection;
}

namespace heartwheel::net::detail {

class EdgeReader {
 public:
  // `conn` (socket `fd`, on `loop`) starts reading through the reader
  // `*slot` (the host's pointer; made if null): its next data, or data
  // already waiting, makes the loop call conn.read_ready() once. `member`:
  // conn is in the set already (it paused; see stop). False: no reader could
  // be made or the socket not added; the caller reads through libuv instead.
  static bool start(EdgeReader*& slot, uv_loop_t* loop, int fd, Connection& conn,
                    bool member) noexcept;
  // conn, a member, stopped reading (paused): it stays in the set, and
  // read_ready leaves what it is told of in the socket until start.
  static void stop(EdgeReader* reader) noexcept;
  // conn, reading, spent a turn's reads with data perhaps left, which no new
  // edge would report: the kernel looks again and queues it behind the
  // connections waiting. False: it could not (the caller closes conn).
  static bool rearm(EdgeReader* reader, int fd, Connection& conn) noexcept;
  // `fd` (not reading: stop first) leaves the set before its socket closes;
  // the last member to leave closes the reader and nulls the host's pointer.
  static void leave(EdgeReader*& slot, int fd) noexcept;

 private:
  explicit EdgeReader(EdgeReader*& slot) noexcept : slot_(&slot) {}
  bool watch(int op, int fd, Connection& conn) noexcept;
  // Nulls the host's pointer and closes the handle; freed in on_closed.
  void close() noexcept;
  static void on_ready(uv_poll_t* poll, int status, int events);
  static void on_closed(uv_handle_t* handle);

  uv_poll_t poll_;
  EdgeReader** slot_;  // the host's pointer to this reader
  int epfd_ = -1;
  std::size_t members_ = 0;  // in the set
  // Members reading now. Only while there are some does the watch keep the
  // loop alive, as a stream libuv reads does (a paused one does not).
  std::size_t reading_ = 0;
};

}  // namespace heartwheel::net::detail
