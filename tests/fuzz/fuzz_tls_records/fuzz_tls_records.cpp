// Fuzz target: a TLS 1.3 server session's own record layer after its
// handshake (lib/src/tls/record_layer.h), on records this target seals.
// Input: plan byte + options byte + directives (common/fuzz_input.h).
//
// Options byte:
//   bits 0-1  the suite: 0 AES-128-GCM, 1 AES-256-GCM, 2 and 3 ChaCha20-Poly1305
//   bits 2-4  the caller's plaintext buffer: 16 << (bits 2-4) bytes (16..2048),
//             so records larger than it go through the layer's pending plaintext
//
// Directives, until the input ends:
//   kind:u8 length:u8 bytes[length]
//   kind bit 0 clear: a TLSInnerPlaintext (content, type, padding), sealed
//     under the client's current key; when it is exactly a KeyUpdate at the
//     record's end, the client's key moves on after it (as a client's does).
//     kind bit 1: the outer type is the kind's bits 2-7 instead of 23;
//     without bit 1, bits 2-7 nonzero repeat the bytes that many times (large records).
//   kind bit 0 set: the bytes as they are (headers, garbage, truncation).
//
// The stream is fed to one layer in the planned reads and to another in one
// piece. Both must give the same plaintext, error, peer_closed and output
// bytes; the plaintext must be a prefix of the application data sealed (the
// content of every record of type 23, in order), and all of it when the
// layer neither failed nor saw close_notify and the stream is only whole
// records sealed with the outer type 23;
// a failed or closed layer takes no more input; every output record opens
// under the server's key.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/fuzz_input.h"
#include "record_layer.h"  // lib/src/tls (private)

namespace d = heartwheel::tls::detail;

namespace {

struct Run {
  std::string plaintext;
  std::string out;
  std::uint32_t error = 0;
  bool peer_closed = false;
  std::size_t consumed = 0;
};

void start(d::RecordLayer& layer, d::Suite suite) {
  d::TrafficSecrets s;
  const std::size_t n = d::secret_size(suite);
  std::memset(s.client, 0x11, n);
  std::memset(s.server, 0x22, n);
  s.client_size = s.server_size = static_cast<std::uint8_t>(n);
  FUZZ_CHECK(layer.start(suite, s, 0));
}

Run feed(d::Suite suite, std::string_view stream, std::size_t buffer_size, fuzz::Reads* reads) {
  d::RecordLayer layer;
  start(layer, suite);
  Run run;
  std::vector<char> buffer(buffer_size);
  std::string_view piece = stream;
  for (bool more = reads ? reads->next(piece) : true; more;
       more = reads ? reads->next(piece) : false) {
    std::string_view in = piece;
    for (;;) {
      const bool was_done = run.error != 0 || run.peer_closed;
      const d::RecordLayer::Read r = layer.read(in, buffer, run.out);
      FUZZ_CHECK(r.consumed <= in.size());
      FUZZ_CHECK(r.plaintext <= buffer.size());
      if (was_done) FUZZ_CHECK(r.consumed == 0 && r.plaintext == 0 && r.error == 0);
      run.plaintext.append(buffer.data(), r.plaintext);
      run.consumed += r.consumed;
      in.remove_prefix(r.consumed);
      if (r.error != 0) run.error = r.error;
      if (r.peer_closed) run.peer_closed = true;
      if (r.plaintext < buffer.size()) break;  // not full: it took what it could
    }
    // Without a stop, every byte is taken (a cut record is held).
    if (run.error == 0 && !run.peer_closed) FUZZ_CHECK(in.empty());
  }
  return run;
}

// The records the layer wrote, opened under the server's key.
void check_output(d::Suite suite, std::string_view out) {
  d::TrafficKeys keys;
  std::memset(keys.secret, 0x22, d::secret_size(suite));
  FUZZ_CHECK(keys.derive(suite));
  while (!out.empty()) {
    FUZZ_CHECK(out.size() >= 5);
    const std::size_t length =
        std::size_t{static_cast<std::uint8_t>(out[3])} << 8 | static_cast<std::uint8_t>(out[4]);
    FUZZ_CHECK(out[0] == 23 && out.size() >= 5 + length && length > d::kTagSize);
    std::string inner(length - d::kTagSize, '\0');
    std::uint8_t nonce[d::kIvSize];
    keys.nonce(nonce);
    FUZZ_CHECK(d::open(suite, keys.key, nonce, out.substr(0, 5), out.substr(5, length),
                       reinterpret_cast<std::uint8_t*>(inner.data())));
    ++keys.seq;
    // A KeyUpdate answer moves the server's key on.
    if (inner == std::string("\x18\x00\x00\x01\x00\x16", 6)) FUZZ_CHECK(keys.update(suite));
    out.remove_prefix(5 + length);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::uint8_t plan = data[0], options = data[1];
  const d::Suite suite = (options & 3) == 0   ? d::Suite::aes_128_gcm_sha256
                         : (options & 3) == 1 ? d::Suite::aes_256_gcm_sha384
                                              : d::Suite::chacha20_poly1305_sha256;
  const std::size_t buffer_size = std::size_t{16} << ((options >> 2) & 7);

  // Seal the directives as the client would.
  d::TrafficKeys client;
  std::memset(client.secret, 0x11, d::secret_size(suite));
  FUZZ_CHECK(client.derive(suite));
  std::string stream, sealed_data;
  bool clean = true;  // only records sealed with the outer type 23: nothing cut or forged
  std::string_view in = fuzz::as_view(data + 2, size - 2);
  while (in.size() >= 2) {
    const std::uint8_t kind = static_cast<std::uint8_t>(in[0]);
    const std::size_t n = std::min<std::size_t>(static_cast<std::uint8_t>(in[1]), in.size() - 2);
    std::string bytes(in.substr(2, n));
    in.remove_prefix(2 + n);
    if (kind & 1) {
      stream += bytes;
      clean = false;
      continue;
    }
    const bool outer_given = (kind & 2) != 0 && (kind >> 2) != 23;  // 23: a normal record
    if (!outer_given && (kind >> 2) != 0) {
      std::string repeated;
      for (int i = 0; i <= kind >> 2; ++i) repeated += bytes;
      bytes = std::move(repeated);
    }
    if (bytes.empty() || bytes.size() > 16384 + 255) continue;
    const std::size_t length = bytes.size() + d::kTagSize;
    std::string record(5 + length, '\0');
    record[0] = static_cast<char>(outer_given ? kind >> 2 : 23);
    record[1] = record[2] = 3;
    record[3] = static_cast<char>(length >> 8);
    record[4] = static_cast<char>(length);
    std::uint8_t nonce[d::kIvSize];
    client.nonce(nonce);
    FUZZ_CHECK(d::seal(suite, client.key, nonce, std::string_view(record).substr(0, 5),
                       std::string_view(bytes).substr(0, bytes.size() - 1),
                       static_cast<std::uint8_t>(bytes.back()),
                       reinterpret_cast<std::uint8_t*>(record.data() + 5)));
    ++client.seq;
    stream += record;
    if (outer_given) {
      clean = false;
      continue;
    }
    // What a layer that accepts this record does with it: the type is the
    // last non-zero byte, the content what precedes it.
    std::size_t end = bytes.size();
    while (end > 0 && bytes[end - 1] == 0) --end;
    if (end == 0) continue;
    const std::string content = bytes.substr(0, end - 1);
    if (bytes[end - 1] == 23) sealed_data += content;
    if (bytes[end - 1] == 22 && content.size() == 5 &&
        content.compare(0, 4, "\x18\x00\x00\x01", 4) == 0 &&
        static_cast<std::uint8_t>(content[4]) <= 1) {
      FUZZ_CHECK(client.update(suite));  // the client's key moves on after its KeyUpdate
    }
  }

  fuzz::Reads reads(plan, stream);
  const Run split = feed(suite, stream, buffer_size, &reads);
  const Run whole = feed(suite, stream, buffer_size, nullptr);
  FUZZ_CHECK(split.plaintext == whole.plaintext);
  FUZZ_CHECK(split.error == whole.error);
  FUZZ_CHECK(split.peer_closed == whole.peer_closed);
  FUZZ_CHECK(split.out == whole.out);
  FUZZ_CHECK(whole.plaintext.size() <= sealed_data.size());
  FUZZ_CHECK(sealed_data.compare(0, whole.plaintext.size(), whole.plaintext) == 0);
  if (whole.error == 0 && !whole.peer_closed) {
    FUZZ_CHECK(whole.consumed == stream.size());            // every byte taken (a cut record held)
    if (clean) FUZZ_CHECK(whole.plaintext == sealed_data);  // whole records only: all of it
  }
  check_output(suite, whole.out);
  return 0;
}
