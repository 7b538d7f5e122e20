// Private: redis::Client's state (see heartwheel/redis/client.h).
//
//   buffer_     commands waiting for a connection, in order; one wheel entry
//               (buffer_timer_) at their earliest deadline
//   in_flight_  commands sent, in order; Redis answers the front next.
//               Entries that timed out stay (expired) until their reply comes
//   marks_      the suffix minima of the in-flight deadlines: (seq,
//               deadline) pairs with increasing seq and deadline; its front
//               is the earliest deadline in flight and sits in the
//               connection's request_timeout slot
//
//   held_       durable writes (CommandOptions::durable, wait_replicas > 0)
//               that Redis answered, waiting for a WAIT sent after them
//               (client_wait.cpp): group commit, one WAIT in flight at a
//               time, covering every durable write sent before it
#pragma once

#include <heartwheel/redis/client.h>
#include <heartwheel/timer/timer_entry.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client_impl.h"
#include "link.h"

namespace heartwheel::redis::detail {

struct Pending {
  Callback done;  // empty: the application did not ask, or a PING
  TimePoint deadline = kNever;
  std::optional<Command> keep;  // while buffered; in flight only for retry / the script fallback
  std::uint64_t seq = 0;        // in_flight_ position: front().seq + index
  bool ping = false;            // the heartbeat's PING: its reply is only life
  bool retry = false;
  bool expired = false;  // timed out: the callback ran; the reply will be discarded
  bool durable = false;  // answered only once a WAIT after it answers
  bool wait = false;     // the link's WAIT for the durable writes before it
  bool script_load = false;  // SCRIPT LOAD ahead of a script's first call on this connection
};

// The link's own (a PING, a WAIT, a SCRIPT LOAD): never counted, never reported.
inline bool internal(const Pending& p) noexcept { return p.ping || p.wait || p.script_load; }

// A durable write Redis answered, waiting for a WAIT sent after it.
struct Held {
  std::uint64_t seq = 0;  // its in_flight_ seq: a WAIT with a higher seq covers it
  Callback done;
  Reply reply;
};

class ClientCore final : public Link, public ClientImpl {
 public:
  ClientCore(LoopWheel& wheel, ClientOptions options);
  ~ClientCore() override;

  void start() override;
  void stop() override;
  bool started() const noexcept override { return started_; }
  std::error_code command(Command command, Callback done, CommandOptions options) override;
  bool connected() const noexcept override { return connection() != nullptr; }
  std::size_t in_flight() const noexcept override { return in_flight_.size() + held_.size(); }
  std::size_t buffered() const noexcept override { return buffer_.size(); }
  void flush() override { Link::flush(); }
  LinkStats stats() const noexcept override;
  std::vector<MasterStats> masters() const override { return {}; }
  const ClientOptions& options() const noexcept override { return options_; }

 private:
  struct BufferTimer : TimerEntry {
    BufferTimer() : TimerEntry(&fire) {}
    static void fire(TimerEntry& e);
    ClientCore* owner = nullptr;
  };
  // A callback to run once the state is consistent again.
  struct Outcome {
    Callback done;
    std::error_code error;
    Reply reply;
  };

  // Link
  void link_opened(net::Connection& conn) override;
  void link_reply(net::Connection& conn, Reply&& reply) override;
  void link_closed(net::CloseReason reason, std::error_code error) override;
  void send_ping(net::Connection& conn) override;
  void load_script(const std::shared_ptr<const std::string>& source);
  void forget_connection() noexcept;
  net::DeadlineAction link_deadline(net::Connection& conn, net::DeadlineEvent event) override;

  // client.cpp
  void transmit(Pending&& p, Command&& command);
  void deliver(Pending&& p, Reply&& reply);
  // client_wait.cpp: durable writes and their WAITs
  void sent_durable(const Pending& p);
  void send_wait();
  void hold(Pending&& p, Reply&& reply);
  void deliver_wait(Pending&& p, Reply&& reply);
  // Settles the held writes a WAIT with `seq` covers.
  void settle(std::uint64_t seq, std::error_code ec, std::vector<Outcome>& outcomes);
  void fail_held(std::error_code ec, std::vector<Outcome>& outcomes);
  void run(std::vector<Outcome>& outcomes) noexcept;
  // client_deadlines.cpp: the in-flight deadlines on the request slot
  void push_in_flight(Pending&& p);
  Pending pop_in_flight();
  void update_request_slot();
  void expire_in_flight(TimePoint now);
  void rebuild_marks();
  // client_buffer.cpp: commands waiting for a connection
  void push_buffer(Pending&& p, bool front = false);
  void send_buffer();
  void arm_buffer_timer();
  void expire_buffer();

  struct Mark {
    std::uint64_t seq;
    TimePoint deadline;
  };

  ClientOptions options_;
  Command wait_command_;  // WAIT wait_replicas wait_timeout_ms
  std::deque<Held> held_;
  bool wait_in_flight_ = false;
  std::uint64_t last_durable_ = 0;  // seq + 1 of the last durable write sent (0: none)
  std::uint64_t last_wait_ = 0;     // seq of the last WAIT sent
  TimePoint uncovered_due_ = kNever;  // earliest deadline of the durable writes after it
  std::deque<Pending> buffer_;
  std::size_t buffer_bytes_ = 0;
  BufferTimer buffer_timer_;
  TimePoint buffer_due_ = kNever;  // when buffer_timer_ fires (kNever: not armed)
  std::deque<Pending> in_flight_;
  std::deque<Mark> marks_;
  // The scripts sent with SCRIPT LOAD on this connection (the shared
  // sources of their Script; held, so no other source takes an address).
  std::vector<std::shared_ptr<const std::string>> scripts_loaded_;
  std::uint64_t next_seq_ = 0;
  bool started_ = false;
};

}  // namespace heartwheel::redis::detail
