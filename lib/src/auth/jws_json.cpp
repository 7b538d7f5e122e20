// Reading the JOSE header and the claims with SAX events (jws_json.h).
//
// Each reader is a nlohmann-json SAX handler: the parser validates the JSON
// (syntax, UTF-8 in strings, finite numbers, nothing after the value) and
// calls the handler per token; a handler that finds a claim of the wrong type
// records why and returns false, which stops the parse. Only the top-level
// object's members are claims; deeper values are skipped, except `info` and
// `meta`, which are written back as compact JSON text, `channels`, and the
// keys of `subs`.
#include "jws_json.h"

#include <heartwheel/auth/channel_name.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>

namespace heartwheel::auth::detail {

namespace {

using json = nlohmann::json;

Error malformed(std::string message) { return Error{errc::malformed, std::move(message)}; }

// The parts of the SAX interface every reader handles the same way.
struct SaxBase {
  int depth = 0;      // 1 inside the top-level object
  Error error;        // why the handler stopped the parse
  std::string_view part;  // "header" or "payload", for messages

  bool fail(std::string message) {
    if (error.ok()) error = malformed(std::move(message));
    return false;
  }
  bool binary(json::binary_t&) { return fail(std::string(part) + " holds binary data"); }
  bool parse_error(std::size_t position, const std::string&, const json::exception& e) {
    // nlohmann's what() is "[json.exception.parse_error.101] parse error at
    // line 1, column 2: syntax error while parsing value - ...; last read:
    // '...'": keep the explanation. It quotes the token's bytes, which may be
    // anything: only printable ASCII goes on, so the message can travel in
    // JSON and logs as it is.
    std::string_view what = e.what();
    if (const std::size_t colon = what.find(": "); colon != std::string_view::npos)
      what.remove_prefix(colon + 2);
    std::string m = std::string(part) + " is not valid JSON (byte " + std::to_string(position) +
                    "): ";
    for (const char c : what) m += (c >= 0x20 && c < 0x7f) ? c : '?';
    return fail(std::move(m));
  }
  // Called for every value at depth 0: only an object may be there.
  bool top_level_scalar() { return fail(std::string(part) + " is not a JSON object"); }
};

// ---------------------------------------------------------------------------
// The JOSE header.

struct HeaderReader : SaxBase {
  HeaderAlg* alg = nullptr;
  bool in_alg = false;
  bool seen_alg = false;

  bool value() {  // any value that is not the alg string
    if (depth == 0) return top_level_scalar();
    if (in_alg) return fail("header \"alg\" is not a string");
    return true;
  }
  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(json::number_integer_t) { return value(); }
  bool number_unsigned(json::number_unsigned_t) { return value(); }
  bool number_float(json::number_float_t, const json::string_t&) { return value(); }
  bool string(json::string_t& s) {
    if (depth == 0) return top_level_scalar();
    if (!in_alg) return true;
    in_alg = false;
    alg->truncated = s.size() > alg->buffer.size();
    alg->size = alg->truncated ? alg->buffer.size() : s.size();
    s.copy(alg->buffer.data(), alg->size);
    return true;
  }
  bool start_object(std::size_t) {
    if (in_alg) return fail("header \"alg\" is not a string");
    ++depth;
    return true;
  }
  bool end_object() {
    --depth;
    return true;
  }
  bool start_array(std::size_t) {
    if (depth == 0) return top_level_scalar();
    if (in_alg) return fail("header \"alg\" is not a string");
    ++depth;
    return true;
  }
  bool end_array() {
    --depth;
    return true;
  }
  bool key(json::string_t& k) {
    if (depth != 1) return true;
    if (k == "alg") {
      if (seen_alg) return fail("header has \"alg\" twice");
      seen_alg = in_alg = true;
    } else if (k == "crit") {
      return fail("header has \"crit\": no JWS extension is supported");
    }
    return true;
  }
};

// ---------------------------------------------------------------------------
// The claims.

enum class Claim : std::uint8_t {
  other,
  sub,
  channel,
  info,
  channels,
  exp,
  nbf,
  iat,
  b64info,
  meta,
  subs,
  expire_at
};

constexpr std::string_view claim_name(Claim c) noexcept {
  switch (c) {
    case Claim::sub: return "sub";
    case Claim::channel: return "channel";
    case Claim::info: return "info";
    case Claim::channels: return "channels";
    case Claim::exp: return "exp";
    case Claim::nbf: return "nbf";
    case Claim::iat: return "iat";
    case Claim::b64info:
      return "b64info";
    case Claim::meta:
      return "meta";
    case Claim::subs:
      return "subs";
    case Claim::expire_at:
      return "expire_at";
    case Claim::other: break;
  }
  return "";
}

// Appends `s` as a JSON string literal. The parser checked the UTF-8; only
// the quote, the backslash and control characters need escaping.
void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      constexpr char hex[] = "0123456789abcdef";
      out += "\\u00";
      out += hex[u >> 4];
      out += hex[u & 0xf];
    } else {
      out += c;
    }
  }
  out += '"';
}

template <class Int>
void append_integer(std::string& out, Int v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// NumericDates beyond +-9e9 s (years 1684 and 2255) are held at those bounds:
// the system clock's nanoseconds end in 2262, and no token needs more.
constexpr double kMaxNumericDate = 9e9;

WallTime numeric_date(double seconds) noexcept {
  seconds = std::fmax(-kMaxNumericDate, std::fmin(kMaxNumericDate, seconds));
  return WallTime(std::chrono::duration_cast<WallTime::duration>(
      std::chrono::duration<double>(seconds)));
}

constexpr bool is_time(Claim c) noexcept {
  return c == Claim::exp || c == Claim::nbf || c == Claim::iat || c == Claim::expire_at;
}

constexpr std::string_view expected_type(Claim c) noexcept {
  if (c == Claim::channels) return "an array of channel names";
  if (c == Claim::subs) return "an object whose keys are channel names";
  if (is_time(c)) return "a number (seconds since 1970, RFC 7519 NumericDate)";
  return "a string";
}

struct ClaimsReader : SaxBase {
  const ClaimTargets* targets = nullptr;
  Claim current = Claim::other;  // the top-level member whose value is being read
  std::uint32_t seen = 0;        // bit per Claim
  std::size_t channel_count = 0; // channels kept (the vector's elements are reused)

  // `info` and `meta` are copied as compact JSON (into raw()): `info_level`
  // containers deep inside it (0 = not inside a container of it); bit L of
  // `info_need_comma` says that level L already has an element.
  int info_level = 0;
  std::uint64_t info_need_comma = 0;
  bool info_after_key = false;
  static constexpr int kMaxInfoLevel = 63;

  bool mismatch() {
    return fail("claim \"" + std::string(claim_name(current)) + "\" must be " +
                std::string(expected_type(current)));
  }

  // --- info and meta (so depth >= 1): written back as text
  bool in_info() const noexcept { return current == Claim::info || current == Claim::meta; }
  std::string& raw() const noexcept {
    return current == Claim::meta ? *targets->meta : *targets->info;
  }
  void info_separator() {
    if (info_after_key) {
      info_after_key = false;
      return;
    }
    if (info_level == 0) return;
    const std::uint64_t bit = std::uint64_t{1} << info_level;
    if (info_need_comma & bit) raw().push_back(',');
    info_need_comma |= bit;
  }
  template <class Write>
  bool info_scalar(Write&& write) {
    info_separator();
    write(raw());
    if (info_level == 0) current = Claim::other;  // info was this scalar
    return true;
  }

  // --- scalars
  // Not a string nor a number: null, true, false.
  bool other_scalar(std::string_view text) {
    if (depth == 0) return top_level_scalar();
    if (in_info()) return info_scalar([&](std::string& out) { out.append(text); });
    if (current == Claim::channels || (depth == 1 && current != Claim::other)) return mismatch();
    return true;
  }
  bool number(double value) {
    if (depth == 0) return top_level_scalar();
    if (current == Claim::channels || (depth == 1 && current != Claim::other && !is_time(current)))
      return mismatch();
    if (depth == 1 && is_time(current)) {
      std::optional<WallTime>* target = current == Claim::exp         ? targets->expires
                                        : current == Claim::nbf       ? targets->not_before
                                        : current == Claim::expire_at ? targets->expire_at
                                                                      : targets->issued_at;
      *target = numeric_date(value);
      current = Claim::other;
    }
    return true;
  }
  bool null() { return other_scalar("null"); }
  bool boolean(bool b) { return other_scalar(b ? "true" : "false"); }
  bool number_integer(json::number_integer_t v) {
    if (in_info()) return info_scalar([&](std::string& out) { append_integer(out, v); });
    return number(static_cast<double>(v));
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (in_info()) return info_scalar([&](std::string& out) { append_integer(out, v); });
    return number(static_cast<double>(v));
  }
  bool number_float(json::number_float_t v, const json::string_t& text) {
    // Inside info: the number as written.
    if (in_info()) return info_scalar([&](std::string& out) { out.append(text); });
    return number(v);
  }
  bool string(json::string_t& s) {
    if (depth == 0) return top_level_scalar();
    if (in_info()) return info_scalar([&](std::string& out) { append_json_string(out, s); });
    if (current == Claim::channels) {
      if (depth != 2) return mismatch();
      if (!is_valid_channel_name(s))
        return fail("claim \"channels\" holds an invalid channel name (element " +
                    std::to_string(channel_count) +
                    "): 1-255 bytes of printable ASCII without '\"' or '\\'");
      auto& v = *targets->channels;
      if (channel_count < v.size())
        v[channel_count].assign(s);
      else
        v.emplace_back(s);
      ++channel_count;
      return true;
    }
    if (depth > 1 || current == Claim::other) return true;
    if (current == Claim::channel && !is_valid_channel_name(s))
      return fail("claim \"channel\" is not a valid channel name");
    if (current == Claim::sub) {
      targets->user->assign(s);
    } else if (current == Claim::channel) {
      targets->channel->assign(s);
    } else if (current == Claim::b64info) {
      targets->b64info->assign(s);
    } else {
      return mismatch();  // a time, subs
    }
    current = Claim::other;
    return true;
  }

  // --- containers
  bool open(char bracket) {
    if (depth == 0) {
      if (bracket == '[') return top_level_scalar();
      ++depth;
      return true;
    }
    ++depth;
    if (in_info()) {
      if (info_level == kMaxInfoLevel)
        return fail("claim \"" + std::string(claim_name(current)) + "\" is nested deeper than " +
                    std::to_string(kMaxInfoLevel));
      info_separator();
      raw().push_back(bracket);
      ++info_level;
      info_need_comma &= ~(std::uint64_t{1} << info_level);
      return true;
    }
    // Only "channels" (an array) and "subs" (an object) may open one; unknown
    // claims may hold anything.
    if (current == Claim::channels) return bracket == '[' && depth == 2 ? true : mismatch();
    if (current == Claim::subs) return bracket == '{' || depth > 2 ? true : mismatch();
    return current == Claim::other ? true : mismatch();
  }
  bool close(char bracket) {
    --depth;
    if (in_info()) {
      raw().push_back(bracket);
      if (--info_level == 0) current = Claim::other;  // the whole info value is done
    } else if (depth == 1) {
      current = Claim::other;
    }
    return true;
  }
  bool start_object(std::size_t) { return open('{'); }
  bool end_object() { return close('}'); }
  bool start_array(std::size_t) { return open('['); }
  bool end_array() { return close(']'); }

  bool key(json::string_t& k) {
    if (in_info()) {
      info_separator();
      append_json_string(raw(), k);
      raw().push_back(':');
      info_after_key = true;
      return true;
    }
    if (depth == 2 && current == Claim::subs) {
      if (!is_valid_channel_name(k))
        return fail(
            "claim \"subs\" holds an invalid channel name: 1-255 bytes of printable "
            "ASCII without '\"' or '\\'");
      targets->subs->push_back(k);
      return true;
    }
    if (depth != 1) return true;
    Claim c = Claim::other;
    if (k == "sub" && targets->user) c = Claim::sub;
    else if (k == "channel" && targets->channel) c = Claim::channel;
    else if (k == "info" && targets->info) c = Claim::info;
    else if (k == "channels" && targets->channels) c = Claim::channels;
    else if (k == "exp" && targets->expires) c = Claim::exp;
    else if (k == "nbf" && targets->not_before) c = Claim::nbf;
    else if (k == "iat" && targets->issued_at) c = Claim::iat;
    else if (k == "b64info" && targets->b64info)
      c = Claim::b64info;
    else if (k == "meta" && targets->meta)
      c = Claim::meta;
    else if (k == "subs" && targets->subs)
      c = Claim::subs;
    else if (k == "expire_at" && targets->expire_at)
      c = Claim::expire_at;
    if (c != Claim::other) {
      const std::uint32_t bit = 1u << static_cast<unsigned>(c);
      if (seen & bit) return fail("claim \"" + std::string(k) + "\" appears twice");
      seen |= bit;
    }
    current = c;
    return true;
  }
};

}  // namespace

Error read_header(std::string_view text, HeaderAlg& alg) {
  HeaderReader r;
  r.part = "header";
  r.alg = &alg;
  alg = HeaderAlg{};
  const bool ok = json::sax_parse(text.data(), text.data() + text.size(), &r);
  if (!ok) return r.error.ok() ? malformed("header is not valid JSON") : std::move(r.error);
  if (!r.seen_alg) return malformed("header has no \"alg\"");
  return {};
}

Error read_claims(std::string_view text, const ClaimTargets& targets) {
  if (targets.user) targets.user->clear();
  if (targets.channel) targets.channel->clear();
  if (targets.info) targets.info->clear();
  if (targets.expires) targets.expires->reset();
  if (targets.not_before) targets.not_before->reset();
  if (targets.issued_at) targets.issued_at->reset();
  if (targets.b64info) targets.b64info->clear();
  if (targets.meta) targets.meta->clear();
  if (targets.subs) targets.subs->clear();
  if (targets.expire_at) targets.expire_at->reset();
  ClaimsReader r;
  r.part = "payload";
  r.targets = &targets;
  const bool ok = json::sax_parse(text.data(), text.data() + text.size(), &r);
  if (targets.channels) targets.channels->resize(r.channel_count);
  if (!ok) return r.error.ok() ? malformed("payload is not valid JSON") : std::move(r.error);
  return {};
}

}  // namespace heartwheel::auth::detail
