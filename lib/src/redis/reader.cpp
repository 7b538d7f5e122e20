// ReplyReader: hiredis's redisReader with object callbacks that build
// redis::Reply values in place (reader.h). The only file besides command.cpp
// that includes hiredis.
//
// How hiredis calls us (0.14, read.c): one create* call per node, in stream
// order; a child's task->parent->obj is the array we returned for its parent;
// the root's object is kept in r->reply and handed out by
// redisReaderGetReply, or given to freeObject on an error or when the reader
// is freed. So only roots are heap objects; children are elements of their
// parent's vector. Appending to a vector can move its elements, but hiredis
// only appends to the innermost open array, whose ancestors' vectors do not
// grow until it is complete: every pointer hiredis holds stays valid.
// The callbacks are C: no exception may leave them, so a failed allocation
// returns NULL, which hiredis reports as REDIS_ERR_OOM.
#include <heartwheel/common/error.h>
#include <heartwheel/redis/reader.h>
#include <hiredis.h>

#include <new>
#include <utility>

namespace heartwheel::redis {

struct ReplyBuilder {
  static Reply* node(const redisReadTask* task) {
    if (task->parent == nullptr) return new Reply();
    auto* parent = static_cast<Reply*>(task->parent->obj);
    return &parent->elements_.emplace_back();
  }
  static void* create_string(const redisReadTask* task, char* str, std::size_t len) noexcept {
    try {
      Reply* r = node(task);
      r->type_ = task->type == REDIS_REPLY_ERROR    ? ReplyType::error
                 : task->type == REDIS_REPLY_STATUS ? ReplyType::status
                                                    : ReplyType::string;
      r->str_.assign(str, len);
      return r;
    } catch (...) {
      return nullptr;
    }
  }
  static void* create_array(const redisReadTask* task, int /*elements: untrusted*/) noexcept {
    try {
      Reply* r = node(task);
      r->type_ = ReplyType::array;
      return r;
    } catch (...) {
      return nullptr;
    }
  }
  static void* create_integer(const redisReadTask* task, long long value) noexcept {
    try {
      Reply* r = node(task);
      r->type_ = ReplyType::integer;
      r->integer_ = value;
      return r;
    } catch (...) {
      return nullptr;
    }
  }
  static void* create_nil(const redisReadTask* task) noexcept {
    try {
      return node(task);
    } catch (...) {
      return nullptr;
    }
  }
  static void free_object(void* root) noexcept { delete static_cast<Reply*>(root); }
};

namespace {
redisReplyObjectFunctions kBuildReplies = {
    &ReplyBuilder::create_string, &ReplyBuilder::create_array, &ReplyBuilder::create_integer,
    &ReplyBuilder::create_nil,    &ReplyBuilder::free_object,
};
}  // namespace

struct ReplyReader::Hiredis {
  Hiredis() : reader(redisReaderCreateWithFunctions(&kBuildReplies)) {
    if (!reader) throw std::bad_alloc();
  }
  ~Hiredis() { redisReaderFree(reader); }
  Hiredis(const Hiredis&) = delete;
  Hiredis& operator=(const Hiredis&) = delete;
  redisReader* reader;
};

ReplyReader::ReplyReader(std::size_t max_reply_bytes)
    : r_(std::make_unique<Hiredis>()), max_(max_reply_bytes) {}

ReplyReader::~ReplyReader() = default;
ReplyReader::ReplyReader(ReplyReader&&) noexcept = default;
ReplyReader& ReplyReader::operator=(ReplyReader&&) noexcept = default;

void ReplyReader::reset() {
  r_ = std::make_unique<Hiredis>();
  fed_ = reply_start_ = 0;
  error_.clear();
}

std::uint64_t ReplyReader::consumed() const noexcept {
  const redisReader* r = r_->reader;
  return fed_ - static_cast<std::uint64_t>(r->len - r->pos);
}

void ReplyReader::fail(std::error_code ec) {
  if (!error_) error_ = ec;
}

std::string_view ReplyReader::error_message() const noexcept {
  if (error_ != errc::protocol_error) return {};
  return r_->reader->errstr;
}

std::error_code ReplyReader::feed(std::string_view bytes) {
  if (error_ || bytes.empty()) return error_;
  if (redisReaderFeed(r_->reader, bytes.data(), bytes.size()) != REDIS_OK) {
    fail(r_->reader->err == REDIS_ERR_PROTOCOL
             ? make_error_code(errc::protocol_error)
             : std::make_error_code(std::errc::not_enough_memory));
    return error_;
  }
  fed_ += bytes.size();
  return error_;
}

bool ReplyReader::next(Reply& out) {
  if (error_) return false;
  void* obj = nullptr;
  if (redisReaderGetReply(r_->reader, &obj) != REDIS_OK) {
    fail(r_->reader->err == REDIS_ERR_PROTOCOL
             ? make_error_code(errc::protocol_error)
             : std::make_error_code(std::errc::not_enough_memory));
    return false;
  }
  if (obj == nullptr) {
    // Everything fed from reply_start_ on belongs to the incomplete reply.
    if (fed_ - reply_start_ > max_) fail(make_error_code(errc::frame_too_large));
    return false;
  }
  std::unique_ptr<Reply> root(static_cast<Reply*>(obj));
  const std::uint64_t end = consumed();
  if (end - reply_start_ > max_) {
    fail(make_error_code(errc::frame_too_large));
    return false;
  }
  reply_start_ = end;
  ++replies_;
  out = std::move(*root);
  return true;
}

}  // namespace heartwheel::redis
