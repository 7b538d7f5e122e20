// Fuzz target: redis::ReplyReader (hiredis's redisReader and our glue that
// builds Reply values). Input: plan byte + stream (common/fuzz_input.h). The
// stream is fed in the planned reads with a 4 KiB maximum reply; the replies
// taken must equal those of one-piece feeding, and so must whether the
// reader failed (reader.h: which error may differ when one reply is both too
// large and malformed); without an error the reader buffers at most one
// reply's limit; each reply, encoded and read back, is itself.
#include <heartwheel/redis/reader.h>

#include <vector>

#include "common/fuzz_input.h"

using namespace heartwheel::redis;

namespace {

constexpr std::size_t kMaxReply = 4096;

struct Read {
  std::vector<Reply> replies;
  bool failed = false;
};

void drain(ReplyReader& reader, Read& out) {
  Reply r;
  while (reader.next(r)) out.replies.push_back(std::move(r));
  if (reader.error()) {
    out.failed = true;
    return;
  }
  FUZZ_CHECK(reader.buffered() <= kMaxReply);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string_view stream = fuzz::as_view(data + 1, size - 1);

  ReplyReader split_reader(kMaxReply);
  Read split;
  fuzz::Reads reads(data[0], stream);
  std::string_view piece;
  while (reads.next(piece)) {
    split_reader.feed(piece);
    drain(split_reader, split);
    if (split.failed) break;
  }

  ReplyReader whole_reader(kMaxReply);
  Read whole;
  whole_reader.feed(stream);
  drain(whole_reader, whole);

  FUZZ_CHECK(split.failed == whole.failed);
  FUZZ_CHECK(split.replies == whole.replies);
  for (const Reply& r : whole.replies) {
    ReplyReader again;
    Reply back;
    again.feed(encode(r));
    FUZZ_CHECK(again.next(back));
    FUZZ_CHECK(back == r);
    FUZZ_CHECK(again.buffered() == 0);
  }
  return 0;
}
