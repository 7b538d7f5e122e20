// Command: encoding with hiredis's redisFormatCommandArgv, and which commands
// a command link refuses (command.h).
#include <heartwheel/redis/command.h>
#include <heartwheel/redis/slot.h>
#include <hiredis.h>

#include <array>
#include <new>
#include <stdexcept>
#include <string>

namespace heartwheel::redis {

namespace {

bool equals_upper(std::string_view s, std::string_view upper) noexcept {
  if (s.size() != upper.size()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i] >= 'a' && s[i] <= 'z' ? static_cast<char>(s[i] - 32) : s[i];
    if (c != upper[i]) return false;
  }
  return true;
}

// Commands after which replies no longer come one per command (pub/sub mode,
// MONITOR's stream, CLIENT REPLY OFF/SKIP), or that change what the link set
// up (HELLO switches the protocol, RESET drops AUTH and SELECT).
bool breaks_order(std::span<const std::string_view> args) noexcept {
  static constexpr std::array<std::string_view, 9> kNames = {
      "SUBSCRIBE",    "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE",
      "SUNSUBSCRIBE", "MONITOR",    "HELLO",      "RESET"};
  for (const auto name : kNames)
    if (equals_upper(args[0], name)) return true;
  return args.size() >= 2 && equals_upper(args[0], "CLIENT") && equals_upper(args[1], "REPLY");
}

bool is_one_of(std::string_view name, std::initializer_list<std::string_view> upper) noexcept {
  for (const auto u : upper)
    if (equals_upper(name, u)) return true;
  return false;
}

// The argument holding a numkeys at `at`, the first key after it; -1 when
// the count is not a positive number.
int key_after_numkeys(std::span<const std::string_view> args, std::size_t at) noexcept {
  if (args.size() <= at + 1 || args[at].empty() || args[at] == "0") return -1;
  for (const char c : args[at])
    if (c < '0' || c > '9') return -1;
  return static_cast<int>(at + 1);
}

// Which argument is the command's key (command.h, "Routing"); -1: none.
int key_index(std::span<const std::string_view> args) noexcept {
  const std::string_view name = args[0];
  if (is_one_of(name, {"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"}))
    return key_after_numkeys(args, 2);
  if (is_one_of(name, {"ZUNION", "ZINTER", "ZDIFF", "SINTERCARD", "ZINTERCARD", "LMPOP", "ZMPOP"}))
    return key_after_numkeys(args, 1);
  if (is_one_of(name, {"BLMPOP", "BZMPOP"})) return key_after_numkeys(args, 2);
  if (is_one_of(name, {"XREAD", "XREADGROUP"})) {
    for (std::size_t i = 1; i + 1 < args.size(); ++i)
      if (equals_upper(args[i], "STREAMS")) return static_cast<int>(i + 1);
    return -1;
  }
  if (is_one_of(name, {"OBJECT", "XINFO", "XGROUP", "MEMORY"}))
    return args.size() > 2 ? 2 : -1;
  if (is_one_of(name, {"PING",     "ECHO",    "INFO",    "TIME",      "WAIT",     "ASKING",
                       "READONLY", "READWRITE", "CLUSTER", "SCRIPT",  "FUNCTION", "CONFIG",
                       "CLIENT",   "COMMAND", "AUTH",    "SELECT",    "DBSIZE",   "FLUSHALL",
                       "FLUSHDB",  "KEYS",    "SCAN",    "RANDOMKEY", "PUBLISH",  "PUBSUB",
                       "LASTSAVE", "SAVE",    "BGSAVE",  "BGREWRITEAOF", "DEBUG", "SLOWLOG",
                       "LATENCY",  "MULTI",   "EXEC",    "DISCARD",   "UNWATCH",  "QUIT",
                       "SHUTDOWN", "ROLE",    "LOLWUT",  "ACL",       "MODULE",   "REPLICAOF",
                       "SLAVEOF",  "FAILOVER", "SWAPDB", "MONITOR",   "HELLO",    "RESET",
                       "SUBSCRIBE", "PSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE"}))
    return -1;
  return args.size() > 1 ? 1 : -1;
}

// Where the argument after the one ending at `at` starts, in RESP bytes we
// encoded ("$len\r\n<bytes>\r\n" each).
std::size_t skip_argument(std::string_view bytes, std::size_t at) {
  const std::size_t crlf = bytes.find("\r\n", at);
  const std::size_t len = std::stoul(std::string(bytes.substr(at + 1, crlf - at - 1)));
  return crlf + 2 + len + 2;
}

}  // namespace

Command::Command(std::initializer_list<std::string_view> args) {
  encode(std::span<const std::string_view>(args.begin(), args.size()));
}

Command::Command(std::span<const std::string_view> args) { encode(args); }

void Command::encode(std::span<const std::string_view> args) {
  if (args.empty()) throw std::invalid_argument("redis: a command needs at least its name");
  std::vector<const char*> argv;
  std::vector<std::size_t> argvlen;
  argv.reserve(args.size());
  argvlen.reserve(args.size());
  for (const auto a : args) {
    argv.push_back(a.data() ? a.data() : "");
    argvlen.push_back(a.size());
  }
  char* out = nullptr;
  const int n =
      redisFormatCommandArgv(&out, static_cast<int>(args.size()), argv.data(), argvlen.data());
  if (n < 0 || out == nullptr) throw std::bad_alloc();
  try {
    bytes_.assign(out, static_cast<std::size_t>(n));
  } catch (...) {
    redisFreeCommand(out);
    throw;
  }
  redisFreeCommand(out);
  // "*<argc>\r\n$<len>\r\n<name>": the name follows the second CRLF.
  const std::size_t first = bytes_.find("\r\n");
  name_offset_ = static_cast<std::uint32_t>(bytes_.find("\r\n", first + 2) + 2);
  name_size_ = static_cast<std::uint32_t>(args[0].size());
  breaks_order_ = breaks_order(args);
  const int key = key_index(args);
  slot_ = key < 0 ? -1 : key_slot(args[static_cast<std::size_t>(key)]);
}

Command& Command::route_by(std::string_view key) noexcept {
  slot_ = key_slot(key);
  return *this;
}

std::string_view Command::name() const noexcept {
  return std::string_view(bytes_).substr(name_offset_, name_size_);
}

Command Command::as_eval() const {
  if (!script_) throw std::logic_error("redis: as_eval() needs a command made by Script::call");
  const std::string_view b = bytes_;
  // Keep "*<argc>\r\n", replace "EVALSHA" and the SHA-1, keep the rest.
  const std::size_t header = b.find("\r\n") + 2;
  const std::size_t sha_at = name_offset_ + name_size_ + 2;
  const std::size_t rest = skip_argument(b, sha_at);
  Command c;
  c.bytes_.reserve(b.size() + script_->size());
  c.bytes_.append(b.substr(0, header));
  c.bytes_.append("$4\r\nEVAL\r\n$");
  c.name_offset_ = static_cast<std::uint32_t>(header + 4);
  c.name_size_ = 4;
  c.bytes_.append(std::to_string(script_->size())).append("\r\n");
  c.bytes_.append(*script_).append("\r\n");
  c.bytes_.append(b.substr(rest));
  c.slot_ = slot_;
  return c;
}

}  // namespace heartwheel::redis
