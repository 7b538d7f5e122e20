// zlib's raw streams for permessage-deflate. See zstream.h.
#include "zstream.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <new>

namespace heartwheel::ws::detail {

namespace {
// Bytes inflated per zlib call: the stack buffer the output passes through
// on its way into the message (appending keeps the message's growth ours
// and bounded by the limit, where zlib writing into it would need it sized
// first).
constexpr std::size_t kChunk = 16 * 1024;

Bytef* bytes(const char* p) noexcept { return reinterpret_cast<Bytef*>(const_cast<char*>(p)); }
}  // namespace

Inflater::Inflater(int window_bits) {
  if (inflateInit2(&z_, -window_bits) != Z_OK) throw std::bad_alloc();
}

Inflater::~Inflater() { inflateEnd(&z_); }

void Inflater::reset() noexcept { inflateReset(&z_); }

Inflater::Result Inflater::inflate(std::string_view in, std::string& out, std::size_t limit) {
  assert(in.size() <= std::numeric_limits<uInt>::max());
  z_.next_in = bytes(in.data());
  z_.avail_in = static_cast<uInt>(in.size());
  char chunk[kChunk];
  for (;;) {
    z_.next_out = reinterpret_cast<Bytef*>(chunk);
    z_.avail_out = kChunk;
    const int rc = ::inflate(&z_, Z_SYNC_FLUSH);
    const std::size_t n = kChunk - z_.avail_out;
    if (n > 0) {
      const std::size_t size = out.size();
      const std::size_t room = limit - std::min(limit, size);
      if (size + std::min(n, room) > out.capacity())  // geometric, never past the limit
        out.reserve(std::min(limit, std::max(size + n, 2 * out.capacity())));
      // What fits goes in even when more came: the caller judges those
      // bytes (UTF-8) before the excess, as if they had come one by one.
      out.append(chunk, std::min(n, room));
      if (n > room) return Result::too_big;
    }
    if (rc == Z_STREAM_END) {
      // The sender ended the stream (a BFINAL block, RFC 7692 7.2.3.3):
      // what follows, if anything, starts a new one.
      inflateReset(&z_);
      if (z_.avail_in == 0) return Result::ok;
      continue;
    }
    if (rc == Z_BUF_ERROR) return Result::ok;  // no progress possible: all input used
    if (rc != Z_OK) return Result::bad_data;   // Z_DATA_ERROR (Z_NEED_DICT cannot be: raw)
    if (z_.avail_in == 0 && z_.avail_out != 0) return Result::ok;
  }
}

Deflater::Deflater(int level, int window_bits, int mem_level) : window_bits_(window_bits) {
  if (deflateInit2(&z_, level, Z_DEFLATED, -window_bits, mem_level, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::bad_alloc();
}

Deflater::~Deflater() { deflateEnd(&z_); }

void Deflater::reset() noexcept { deflateReset(&z_); }

void Deflater::compress(std::string_view in, std::string& out) {
  const std::size_t start = out.size();
  // deflateBound is for a finished stream; the sync flush adds its empty
  // stored block (5 bytes) at most, and a second round takes any rest.
  std::size_t room = deflateBound(&z_, static_cast<uLong>(in.size())) + 16;
  z_.next_in = bytes(in.data());
  z_.avail_in = static_cast<uInt>(in.size());
  for (;;) {
    const std::size_t size = out.size();
    out.resize(size + room);
    z_.next_out = reinterpret_cast<Bytef*>(out.data() + size);
    z_.avail_out = static_cast<uInt>(room);
    const int rc = ::deflate(&z_, Z_SYNC_FLUSH);
    out.resize(out.size() - z_.avail_out);
    assert(rc == Z_OK || rc == Z_BUF_ERROR);
    (void)rc;
    if (z_.avail_in == 0 && z_.avail_out != 0) break;
    room = kChunk;
  }
  // A sync flush ends with an empty stored block: 00 00 ff ff.
  assert(out.size() >= start + 4 &&
         std::string_view(out).substr(out.size() - 4) == std::string_view(kDeflateTail, 4));
  (void)start;
  out.resize(out.size() - 4);
}

}  // namespace heartwheel::ws::detail
