// heartwheel/redis/command.h - a Redis command, encoded once; Lua scripts.
//
// Command
//   The RESP bytes of one command ("*3\r\n$3\r\nSET\r\n..."), encoded at
//   construction by hiredis's redisFormatCommandArgv (binary-safe: any bytes
//   in any argument). Build one from a brace list, any range of strings, or
//   Script::call:
//     client.command({"SET", key, value}, done);
//     client.command({"XADD", stream, "MAXLEN", "~", "1000", "*", "d", data}, done);
//     std::vector<std::string> args = ...;  client.command(Command::from(args), done);
//   Numbers are arguments like any other: std::to_string(n).
//   A command that would break a command link's one-reply-per-command order
//   (SUBSCRIBE and the other pub/sub commands, MONITOR, HELLO, RESET,
//   CLIENT REPLY) is marked, and Client::command refuses it (not_allowed).
//
// Routing (Redis Cluster)
//   Each command knows its key's hash slot (slot.h), found at construction
//   from the command's name: most commands name their key first (GET k,
//   XADD k ..., SPUBLISH channel ...); EVAL / EVALSHA / FCALL by their first
//   KEYS (none when numkeys is 0); XREAD / XREADGROUP by the first stream
//   after STREAMS; OBJECT / XINFO / XGROUP / MEMORY by the argument after
//   the subcommand; ZUNION / ZINTER / ZDIFF / SINTERCARD / ZINTERCARD /
//   LMPOP / ZMPOP after numkeys. Server commands (PING, INFO, CLUSTER,
//   SCRIPT, WAIT, PUBLISH, CONFIG, ...) have none and go to any master. For
//   anything else, or to override the rule, route_by(key). A single-server
//   Client ignores the slot.
//
// Script
//   A Lua script and its SHA-1 (computed here, as Redis does). call() makes
//   an EVALSHA command that remembers the script. A Client sends SCRIPT
//   LOAD ahead of a script's first call on each connection (Redis runs a
//   connection's commands in order, so the calls find it cached and run in
//   the order they were made); when Redis still answers NOSCRIPT (its
//   cache emptied while connected: SCRIPT FLUSH), the Client sends the same
//   call once more as EVAL, which also caches the script, and the caller
//   gets that reply. Scripts are cheap handles (the source is shared), copy
//   them freely.
//
// Cost: one allocation for the bytes (plus one for hiredis's buffer, copied
//   once); a Script call also shares the script's source.
// Threads: plain values; a const Script may be used from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace heartwheel::redis {

class Script;

class Command {
 public:
  // Encodes `args` (the first is the command's name). Throws
  // std::invalid_argument for an empty list, std::bad_alloc if hiredis
  // cannot allocate.
  Command(std::initializer_list<std::string_view> args);  // NOLINT: implicit on purpose
  explicit Command(std::span<const std::string_view> args);
  // Any range of things convertible to std::string_view.
  template <class Range>
  static Command from(const Range& args) {
    std::vector<std::string_view> views;
    for (const auto& a : args) views.emplace_back(a);
    return Command(std::span<const std::string_view>(views));
  }

  // The encoded bytes.
  std::string_view bytes() const noexcept { return bytes_; }
  std::size_t size() const noexcept { return bytes_.size(); }
  // The command's name as given (the first argument).
  std::string_view name() const noexcept;
  // True for commands a command link refuses (see above).
  bool breaks_reply_order() const noexcept { return breaks_order_; }
  // The script an EVALSHA made by Script::call runs (for the NOSCRIPT
  // fallback); null for other commands.
  const std::shared_ptr<const std::string>& script_source() const noexcept { return script_; }

  // EVAL with the script's source in place of EVALSHA and its SHA-1.
  // Precondition: script_source() is set.
  Command as_eval() const;

  // The hash slot this command is routed by (see "Routing"); -1: it has no
  // key and may go to any master.
  int slot() const noexcept { return slot_; }
  // Routes by `key` instead (its slot); returns *this.
  Command& route_by(std::string_view key) noexcept;

 private:
  friend class Script;
  Command() = default;
  void encode(std::span<const std::string_view> args);

  std::string bytes_;
  std::shared_ptr<const std::string> script_;
  std::uint32_t name_offset_ = 0;
  std::uint32_t name_size_ = 0;
  std::int32_t slot_ = -1;
  bool breaks_order_ = false;
};

class Script {
 public:
  // Keeps `source` and computes its SHA-1 (OpenSSL's libcrypto). Throws
  // std::runtime_error if libcrypto fails.
  explicit Script(std::string source);

  const std::string& source() const noexcept { return *source_; }
  // 40 lowercase hex digits, as SCRIPT LOAD returns.
  const std::string& sha1() const noexcept { return sha1_; }

  // EVALSHA sha1 numkeys keys... args...
  Command call(std::initializer_list<std::string_view> keys,
               std::initializer_list<std::string_view> args = {}) const;
  Command call(std::span<const std::string_view> keys,
               std::span<const std::string_view> args) const;

 private:
  std::shared_ptr<const std::string> source_;
  std::string sha1_;
};

}  // namespace heartwheel::redis
