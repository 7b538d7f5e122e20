// Fuzz target: net::ProxyHeaderParser. Input: plan byte + stream
// (common/fuzz_input.h). The stream is fed in the planned reads; the outcome
// must equal one-piece parsing (status, error, bytes consumed, every header
// field), the parser must never take a byte past the header nor more than
// 536 (107 for v1), and a finished parser must take nothing more.
#include <heartwheel/net/proxy_protocol.h>

#include <cstring>

#include "common/fuzz_input.h"

using namespace heartwheel::net;

namespace {

bool same_ssl(const ProxySsl& a, const ProxySsl& b) {
  return a.client == b.client && a.verify == b.verify && a.version == b.version && a.cn == b.cn &&
         a.cipher == b.cipher && a.sig_alg == b.sig_alg && a.key_alg == b.key_alg &&
         a.other == b.other;
}

bool same(const ProxyHeader& a, const ProxyHeader& b) {
  return a.version == b.version && a.command == b.command && a.family == b.family &&
         a.transport == b.transport && std::memcmp(&a.source, &b.source, sizeof a.source) == 0 &&
         std::memcmp(&a.destination, &b.destination, sizeof a.destination) == 0 &&
         a.alpn == b.alpn && a.authority == b.authority && a.crc32c == b.crc32c &&
         a.unique_id == b.unique_id && a.netns == b.netns &&
         a.ssl.has_value() == b.ssl.has_value() && (!a.ssl || same_ssl(*a.ssl, *b.ssl)) &&
         a.tlvs == b.tlvs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string_view stream = fuzz::as_view(data + 1, size - 1);

  ProxyHeaderParser split;
  fuzz::Reads reads(data[0], stream);
  std::string_view piece;
  std::size_t consumed = 0;
  bool finished = false;
  while (reads.next(piece)) {
    const ProxyFeedResult r = split.feed(piece);
    FUZZ_CHECK(r.consumed <= piece.size());
    if (finished) FUZZ_CHECK(r.consumed == 0);
    if (r.status == ProxyParseStatus::need_more) FUZZ_CHECK(r.consumed == piece.size());
    consumed += r.consumed;
    finished = r.status != ProxyParseStatus::need_more;
  }

  ProxyHeaderParser whole;
  const ProxyFeedResult w = whole.feed(stream);
  FUZZ_CHECK(w.status == split.status());
  FUZZ_CHECK(whole.error() == split.error());
  FUZZ_CHECK(w.consumed == consumed);
  FUZZ_CHECK(consumed <= kProxyMaxHeaderBytes);
  FUZZ_CHECK((split.status() == ProxyParseStatus::failed) == static_cast<bool>(split.error()));
  if (split.status() == ProxyParseStatus::failed) FUZZ_CHECK(!split.error().message().empty());
  if (split.status() != ProxyParseStatus::complete) return 0;

  const ProxyHeader& h = split.header();
  FUZZ_CHECK(same(h, whole.header()));
  FUZZ_CHECK(consumed == split.header_bytes());
  FUZZ_CHECK(h.version == 1 || h.version == 2);
  if (h.version == 1) FUZZ_CHECK(consumed <= kProxyV1MaxLine && stream[consumed - 1] == '\n');
  FUZZ_CHECK(h.has_addresses() == (h.source.ss_family != AF_UNSPEC));
  FUZZ_CHECK(h.source.ss_family == h.destination.ss_family);
  FUZZ_CHECK(h.source_text().empty() != h.has_addresses());
  (void)h.destination_text();
  if (h.unique_id) FUZZ_CHECK(h.unique_id->size() <= kProxyUniqueIdMax);
  return 0;
}
