// heartwheel/rpc/reply.h - a REQUEST as the serving side sees it, and the
// handle it answers through.
//
// rpc::NetHandler gives each REQUEST frame to the application as a Request
// (valid during the call) and a Reply (a move-only handle). The application
// answers at once or later, from any callback on the same loop (a wheel
// entry, another connection's read, ...), like http::Responder:
//   respond(payload)  sends RESPONSE with the request's id
//   fail(message)     sends ERROR with the request's id
// The answer joins the connection's batch of frames (see net_handler.h,
// "Batched writes"): answers given in the same loop iteration leave in one
// write.
//
// Exactly one answer per request: the first respond()/fail() wins, later
// calls return false. A Reply destroyed without an answer sends ERROR
// "request not answered" (counted in NetHandlerStats::unanswered), so a
// forgotten request cannot leave a call hanging until its deadline on the
// peer. Replies are answered in any order (the protocol matches by id).
//
// When the answer can no longer be delivered (the connection is closing or
// closed), every call returns false and does nothing, and the on_abandon
// callback runs once, from inside the close (or the handler's destruction). Use it to
// cancel work scheduled for the answer, e.g. a wheel entry; it may destroy
// the Reply itself and whatever holds it, but must not call into the
// NetHandler.
//
// Cost: a Reply is 64 bytes, linked into its connection's list of owed
// answers (no allocation); moving it relinks two neighbours.
// Threads: the connection's loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace heartwheel::net {
class Connection;
}

namespace heartwheel::rpc {

class NetHandler;
namespace detail {
struct Session;
}

// One REQUEST frame. `payload` points into the read buffer: copy what you
// keep beyond the call.
struct Request {
  net::Connection& connection;
  std::uint64_t id;
  std::string_view payload;
};

class Reply {
 public:
  Reply() noexcept = default;
  Reply(Reply&& other) noexcept;
  Reply& operator=(Reply&& other) noexcept;
  Reply(const Reply&) = delete;
  Reply& operator=(const Reply&) = delete;
  ~Reply();

  // RESPONSE with `payload`. False (nothing sent) when inactive.
  bool respond(std::string_view payload);
  // ERROR with `message` (UTF-8 text). False (nothing sent) when inactive.
  bool fail(std::string_view message);

  // True until answered, or until its connection started closing.
  bool active() const noexcept;
  // The request's id (kept after the answer; 0 for a default-constructed Reply).
  std::uint64_t id() const noexcept { return id_; }
  // The connection the answer goes to; nullptr once inactive.
  net::Connection* connection() const noexcept;

  // See above. Replaces an earlier callback. Ignored once answered or
  // abandoned.
  void on_abandon(std::function<void()> callback);

 private:
  friend class NetHandler;
  friend struct detail::Session;
  Reply(detail::Session& session, std::uint64_t id) noexcept;
  void take_place_of(Reply& other) noexcept;
  void unlink() noexcept;
  bool answer(bool ok, std::string_view payload);

  detail::Session* session_ = nullptr;
  Reply* prev_ = nullptr;  // the session's owed answers
  Reply* next_ = nullptr;
  std::uint64_t id_ = 0;
  std::function<void()> on_abandon_;
};

}  // namespace heartwheel::rpc
