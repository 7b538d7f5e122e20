// Fuzz target: rpc::FrameDecoder. Input: plan byte + stream
// (common/fuzz_input.h). The stream is decoded in the planned reads with a
// 4 KiB maximum frame length; the frames and the error must equal those of
// one-piece decoding, re-encoding the frames must give back exactly the bytes
// they came from, and the decoder never buffers more than one frame.
#include <heartwheel/rpc/frame.h>

#include <string>
#include <vector>

#include "common/fuzz_input.h"

using namespace heartwheel::rpc;

namespace {

constexpr std::size_t kMaxFrame = 4096;

struct Decoded {
  std::vector<std::string> frames;  // each re-encoded
  std::error_code error;
};

void drain(FrameDecoder& d, std::string_view in, Decoded& out) {
  std::error_code ec;
  while (auto f = d.next(in, ec)) {
    FUZZ_CHECK(f->payload.size() + kMinFrameLength <= d.max_frame_length());
    out.frames.push_back(encode_frame(f->type, f->id, f->payload));
    FUZZ_CHECK(d.buffered() <= kHeaderSize + kMaxFrame);
  }
  if (ec) {
    FUZZ_CHECK(d.failed());
    if (!out.error) out.error = ec;
    return;
  }
  FUZZ_CHECK(in.empty());  // without an error every byte is taken
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string_view stream = fuzz::as_view(data + 1, size - 1);

  FrameDecoder split_decoder(kMaxFrame);
  Decoded split;
  fuzz::Reads reads(data[0], stream);
  std::string_view piece;
  while (reads.next(piece)) {
    drain(split_decoder, piece, split);
    if (reads.random() % 8 == 0) split_decoder.shrink(0);
  }

  FrameDecoder whole_decoder(kMaxFrame);
  Decoded whole;
  drain(whole_decoder, stream, whole);

  FUZZ_CHECK(split.frames == whole.frames);
  FUZZ_CHECK(split.error == whole.error);
  std::string reencoded;
  for (const auto& f : whole.frames) reencoded += f;
  FUZZ_CHECK(stream.substr(0, reencoded.size()) == reencoded);
  if (!whole.error) FUZZ_CHECK(whole_decoder.buffered() == stream.size() - reencoded.size());
  return 0;
}
