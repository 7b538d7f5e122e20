// tls::Session after a server's TLS 1.3 handshake: the SSL object traded
// for the record layer (see session.h, "After a server's handshake", and
// record_layer.h).
#include <heartwheel/tls/session.h>
#include <openssl/ssl.h>

#include <new>
#include <optional>

#include "failure_detail.h"
#include "own_records.h"
#include "traffic_secrets.h"

namespace heartwheel::tls {

bool Session::drop_ssl(std::string_view tickets) noexcept {
  const ContextOptions& options = context_->options();
  if (!options.free_ssl_after_handshake || !SSL_is_server(ssl_) ||
      SSL_version(ssl_) != TLS1_3_VERSION || SSL_has_pending(ssl_) == 1) {
    return false;
  }
  const std::optional<detail::Suite> suite = detail::suite_of(SSL_get_current_cipher(ssl_));
  const detail::TrafficSecrets* secrets = detail::traffic_secrets(ssl_);
  const std::optional<std::uint64_t> written = detail::count_records(tickets);
  if (!suite || !secrets || !written) return false;
  std::uint8_t alpn = detail::OwnRecords::kNoAlpn;
  const unsigned char* selected = nullptr;
  unsigned int selected_size = 0;
  SSL_get0_alpn_selected(ssl_, &selected, &selected_size);
  if (selected) {  // always one of ours (select_alpn): kept as its index
    const std::string_view name(reinterpret_cast<const char*>(selected), selected_size);
    for (std::size_t i = 0; i < options.alpn.size() && i < detail::OwnRecords::kNoAlpn; ++i) {
      if (options.alpn[i] == name) alpn = static_cast<std::uint8_t>(i);
    }
    if (alpn == detail::OwnRecords::kNoAlpn) return false;
  }
  auto* own = new (std::nothrow) detail::OwnRecords;
  if (!own) return false;
  const char* sni = SSL_get_servername(ssl_, TLSEXT_NAMETYPE_host_name);
  try {
    if (sni) own->server_name = sni;
  } catch (...) {  // bad_alloc
    delete own;
    return false;
  }
  if (!own->records.start(*suite, *secrets, *written)) {
    delete own;
    return false;
  }
  own->alpn = alpn;
  own->resumed = SSL_session_reused(ssl_) == 1;
  detail::free_ssl(ssl_, true);  // the secrets' block is wiped with it
  records_ = own;
  own_records_ = true;
  return true;
}

FeedResult Session::feed_records(std::string_view ciphertext, std::span<char> plaintext_out,
                                 std::string& ciphertext_out) {
  FeedResult r;
  const detail::RecordLayer::Read got =
      records_->records.read(ciphertext, plaintext_out, ciphertext_out);
  r.consumed = got.consumed;
  r.plaintext = got.plaintext;
  r.plaintext_out_full = r.plaintext == plaintext_out.size();
  if (got.peer_closed) {
    peer_closed_ = true;
    r.peer_closed = true;
  }
  if (got.error != 0) {
    fail_with(detail::classify(got.error), got.error);
    r.failed = true;
  }
  return r;
}

}  // namespace heartwheel::tls
