// jws_json.h (private) - reading a JWS's two JSON parts (the JOSE header and
// the claims) with nlohmann-json's SAX interface: no document is built, the
// claims are written straight into the caller's structs.
#pragma once

#include <heartwheel/auth/claims.h>
#include <heartwheel/auth/error.h>

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace heartwheel::auth::detail {

// The header's "alg", copied into a small buffer (a longer one cannot be an
// algorithm this layer knows; `truncated` says so).
struct HeaderAlg {
  std::array<char, 16> buffer{};
  std::size_t size = 0;
  bool truncated = false;
  std::string_view name() const noexcept { return {buffer.data(), size}; }
};

// Reads the JOSE header: a JSON object with a string "alg" (once), no
// "crit" (no extension is understood, RFC 7515 4.1.11); other members are
// ignored. Errors: malformed.
Error read_header(std::string_view json, HeaderAlg& alg);

// Where the claims go; a null target means the claim is not read (it is then
// ignored like any unknown claim).
struct ClaimTargets {
  std::string* user = nullptr;                  // sub
  std::string* channel = nullptr;               // channel
  std::string* info = nullptr;                  // info, as compact JSON text
  std::vector<std::string>* channels = nullptr; // channels
  std::optional<WallTime>* expires = nullptr;   // exp
  std::optional<WallTime>* not_before = nullptr;// nbf
  std::optional<WallTime>* issued_at = nullptr; // iat
  // Centrifugo's claims (docs/centrifugo.md).
  std::string* b64info = nullptr;                // b64info, as written (the caller decodes it)
  std::string* meta = nullptr;                   // meta, as compact JSON text
  std::vector<std::string>* subs = nullptr;      // the keys of the subs object (channel names)
  std::optional<WallTime>* expire_at = nullptr;  // expire_at (0: the epoch)
};

// Reads the claims: a JSON object; each known claim at most once and of its
// type (strings; NumericDates; an array of valid channel names; an object
// whose keys are valid channel names; info and meta any JSON). Targets are
// assigned (absent claims: cleared). Errors: malformed, naming the claim.
Error read_claims(std::string_view json, const ClaimTargets& targets);

}  // namespace heartwheel::auth::detail
