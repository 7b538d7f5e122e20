// edge_reader.h - a loop's connections read in the order their data came.
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
// the loop watches the set's descriptor with one uv_poll_t, so the loop
// wakes when any member has new data, and the reader then hands each ready
// connection to Connection::read_ready in arrival order. A short read means
// the socket is empty and its next data is a new edge, except after the
// peer's FIN: data and FIN that came together are one edge, so once epoll
// says the peer ended (EPOLLRDHUP) the connection reads on to the end.
// Writing, shutdown and closing stay libuv's: a member's socket is still its
// uv_tcp_t.
//
// One per loop: every Server, Connector and testing::Host on a loop shares
// it (a program with a Redis link, a cluster's masters and a server has one
// epoll descriptor per loop, not one per host). Made by the loop's first
// connection that reads through one, or by a Server that starts listening
// (hold), closed (its uv_poll_t too) when the last member leaves and no
// Server listening on the loop holds it, so a loop whose servers stopped
// listening and whose connections all closed keeps no handle of ours. A
// listening server holds it because its next connection is coming: made and
// closed per connection, a server that has one client at a time (a
// sequence of short TLS connections) paid eight system calls more per
// connection (epoll_create1, the uv_poll_t's adds and removes, close:
// docs/bench-history/tls.md). Found by its loop in a list of the thread's
// readers (a thread runs one loop, rarely a few): the lookup is on start,
// pause, re-arm, leave, hold and release, never per read.
//
// Stale events. A batch of events is taken from the set at once; a callback
// of an earlier connection in the batch may close a later one (it leaves the
// set), and a connection may even be made and join meanwhile. Today a closed
// connection's memory is freed only in a later loop phase, so its pointer
// in the batch still names it; the reader does not lean on that. Every
// leave during a batch bumps the reader's generation and records who left;
// every event compares the batch's generation with the reader's (one
// compare while nobody left) and, when they differ, is dropped if its
// connection left during the batch (nginx's instance bit, for memory that
// is not a fixed array of slots). A dropped event is counted
// (stale_events()); an event that is kept is asserted to name a member.
//
// Fallback: when no set can be made or watched (epoll_create1 or
// uv_poll_start failing: out of descriptors) or a socket not added, start()
// returns false and the connection reads through uv_read_start; so does
// every connection when the environment says HEARTWHEEL_EDGE_READS=0
// (edge_reads_enabled(): the test command's level-triggered pass, or an
// operator ruling the edge path out).
//
// Threads: the loop's thread; a loop's connections are read on one thread
// (the one that runs it). Linux only, as the project (epoll).
#pragma once
#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace heartwheel::net {
class Connection;
}

namespace heartwheel::net::detail {

class EdgeReader {
 public:
  // `conn` (socket `fd`, on `loop`) starts reading through `loop`'s reader
  // (made if there is none): its next data, or data already waiting, makes
  // the loop call conn.read_ready() once. `member`: conn is in the set
  // already (it paused; see stop). False: no reader could be made or the
  // socket not added; the caller reads through libuv instead.
  static bool start(uv_loop_t* loop, int fd, Connection& conn, bool member) noexcept;
  // conn, a member of `loop`'s reader, stopped reading (paused): it stays in
  // the set, and read_ready leaves what it is told of in the socket until
  // start.
  static void stop(uv_loop_t* loop) noexcept;
  // conn, reading, spent a turn's reads with data perhaps left, which no new
  // edge would report: the kernel looks again and queues it behind the
  // connections waiting. False: it could not (the caller closes conn).
  static bool rearm(uv_loop_t* loop, int fd, Connection& conn) noexcept;
  // conn (not reading: stop first) leaves the set before its socket `fd`
  // closes (-1: already gone); events for it still in the batch being
  // dispatched are dropped. The last member to leave closes the reader.
  static void leave(uv_loop_t* loop, int fd, const Connection& conn) noexcept;

  // A Server starts listening on `loop` (its thread): the loop's reader is
  // made if there is none and stays while held, with no member. False: edge
  // reads are off or no reader could be made (nothing is held; connections
  // try again). Each true is paired with one release, on the same thread.
  static bool hold(uv_loop_t* loop) noexcept;
  // The server stopped listening: the reader closes if it has no member and
  // no other holder.
  static void release(uv_loop_t* loop) noexcept;

  // The reader of `loop` on this thread, or nullptr.
  static EdgeReader* find(uv_loop_t* loop) noexcept;
  // False when the environment has HEARTWHEEL_EDGE_READS=0 (read once):
  // every connection then reads through libuv.
  static bool edge_reads_enabled() noexcept;
  // Tests: the next `n` start() or hold() calls that would make a reader on
  // this thread fail as epoll_create1 would (the fallback path).
  static void refuse_next_for_testing(unsigned n) noexcept;
  // How many full reads a connection makes per wake-up before it is
  // re-armed (Connection::read_ready): 32, as libuv's uv_read_start.
  static int reads_per_turn() noexcept;
  // Tests: `n` reads per turn on this thread (0: back to 32). A socket
  // holds far less than 32 reads of 64 KiB, so only with a lower bound can
  // a test spend a turn's reads with everything the peer sent already in
  // the socket, where the re-arm is the only way to the rest
  // (edge_reader_test.cpp).
  static void set_reads_per_turn_for_testing(int n) noexcept;

  std::size_t members() const noexcept { return members_; }
  // Events dropped because their connection left during the batch.
  std::uint64_t stale_events() const noexcept { return stale_events_; }

 private:
  explicit EdgeReader(uv_loop_t* loop) noexcept : loop_(loop) {}
  static EdgeReader* make(uv_loop_t* loop) noexcept;
  bool watch(int op, int fd, Connection& conn) noexcept;
  // Out of the thread's list, the handle closed; freed in on_closed (or at
  // the end of the batch being dispatched).
  void close() noexcept;
  // close() once no member and no listening server needs the reader.
  void close_if_unused() noexcept {
    if (members_ == 0 && holders_ == 0) close();
  }
  bool left_in_batch(const Connection* conn) const noexcept;
  static void on_ready(uv_poll_t* poll, int status, int events);
  static void on_closed(uv_handle_t* handle);

  uv_poll_t poll_;
  uv_loop_t* loop_;
  EdgeReader* next_ = nullptr;  // the thread's list of readers
  int epfd_ = -1;
  std::size_t members_ = 0;  // in the set
  std::size_t holders_ = 0;  // listening servers (hold)
  // Members reading now. Only while there are some does the watch keep the
  // loop alive, as a stream libuv reads does (a paused one does not).
  std::size_t reading_ = 0;
  // Bumped by every leave; a batch remembers the value it started with.
  std::uint64_t generation_ = 0;
  std::uint64_t stale_events_ = 0;
  bool dispatching_ = false;
  std::vector<const Connection*> left_;  // left during the batch being dispatched
};

}  // namespace heartwheel::net::detail
