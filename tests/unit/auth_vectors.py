#!/usr/bin/python3
"""Token vectors for tests/unit/auth_*_test.cpp, made by a real JWT
implementation (Debian's python3-jwt, PyJWT), not by heartwheel's code.

  /usr/bin/python3 tests/unit/auth_vectors.py --write tests/unit/auth_vectors.json
      makes fresh keys and tokens and rewrites the committed file (keys are
      random, so every run differs; the tests only need them consistent);
  /usr/bin/python3 tests/unit/auth_vectors.py --check tests/unit/auth_vectors.json
      decodes every vector with PyJWT again and checks that PyJWT agrees with
      the expectation written next to it where PyJWT can judge (signatures,
      claims, algorithms) - run by ctest/meson as auth_vectors_pyjwt.

Times are relative to a fixed NOW (the tests pass it as the verification
time), so the file never goes stale. Each vector: name, the key to verify
with, the token, the expected error code ("ok" or an auth::errc name), and
for valid connection tokens the claims the verifier must read.
"""
import base64
import datetime
import json
import random
import sys

try:
    import jwt
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
    from cryptography.x509.oid import NameOID
    from jwt.algorithms import HMACAlgorithm
except ImportError as e:  # 77: the test runners' "skipped"
    print(f"auth_vectors.py: needs python3-jwt and python3-cryptography ({e})", file=sys.stderr)
    sys.exit(77)

NOW = 1700000000
HOUR = 3600


def pem_public(key, fmt=serialization.PublicFormat.SubjectPublicKeyInfo):
    return key.public_key().public_bytes(serialization.Encoding.PEM, fmt).decode()


def pem_private(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def self_signed_certificate(key):
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "heartwheel test")])
    start = datetime.datetime(2023, 1, 1)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(1)
            .not_valid_before(start).not_valid_after(start + datetime.timedelta(days=3650))
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM).decode()


class UncheckedHMAC(HMACAlgorithm):
    """PyJWT's HMAC with its PEM-key guard removed: how an attacker signs an
    HS256 token with the server's RSA public key as the secret (the
    algorithm-confusion attack PyJWT itself refuses to take part in)."""

    def prepare_key(self, key):
        return key.encode() if isinstance(key, str) else key


def confused_jws():
    jws = jwt.PyJWS()
    jws.unregister_algorithm("HS256")
    jws.register_algorithm("HS256", UncheckedHMAC(HMACAlgorithm.SHA256))
    return jws


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make():
    secret = "heartwheel-test-secret-0123456789abcdef"  # 39 bytes
    other_secret = "another-secret-of-enough-length-0123456789"
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    rsa_other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    rsa_short = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    ec256 = ec.generate_private_key(ec.SECP256R1())
    ec256_other = ec.generate_private_key(ec.SECP256R1())
    ec384 = ec.generate_private_key(ec.SECP384R1())
    ec521 = ec.generate_private_key(ec.SECP521R1())
    ec_k1 = ec.generate_private_key(ec.SECP256K1())
    ed = ed25519.Ed25519PrivateKey.generate()

    keys = {
        "hmac": secret,
        "rsa": pem_public(rsa_key),
        "rsa_pkcs1": pem_public(rsa_key, serialization.PublicFormat.PKCS1),
        "ec256": pem_public(ec256),
        "ec384": pem_public(ec384),
        "ec521": pem_public(ec521),
    }
    # Files a key loader must refuse, with the reason the test looks for.
    bad_keys = {
        "rsa_1024": pem_public(rsa_short),
        "ec_secp256k1": pem_public(ec_k1),
        "ed25519": pem_public(ed),
        "rsa_private": pem_private(rsa_key),
        "ec_private": pem_private(ec256),
        "certificate": self_signed_certificate(ec256),
    }
    signing = {"hmac": secret, "rsa": rsa_key, "ec256": ec256, "ec384": ec384, "ec521": ec521}

    claims = {"sub": "alice", "iat": NOW, "exp": NOW + HOUR,
              "info": {"name": "Alice \u00e9\u2028", "tags": ["a", "b"], "n": 1.5, "k": -7,
                       "q": "say \"hi\"\\\n", "z": None, "t": True, "nested": {"e": [], "o": {}}},
              "channels": ["news", "dm:#alice,bob"]}
    vectors = []

    def add(name, key, token, expect, **extra):
        v = {"name": name, "key": key, "token": token, "expect": expect}
        v.update(extra)
        vectors.append(v)

    def sign(payload, alg, key_name, headers=None):
        return jwt.encode(payload, signing[key_name], algorithm=alg, headers=headers)

    # Valid tokens, every algorithm.
    for alg, key_name in [("HS256", "hmac"), ("HS384", "hmac"), ("HS512", "hmac"),
                          ("RS256", "rsa"), ("RS384", "rsa"), ("RS512", "rsa"),
                          ("ES256", "ec256"), ("ES384", "ec384"), ("ES512", "ec521")]:
        add(alg.lower() + "_valid", key_name, sign(claims, alg, key_name), "ok", claims=claims)
    add("rs256_valid_pkcs1_key", "rsa_pkcs1", sign(claims, "RS256", "rsa"), "ok", claims=claims)

    minimal = {"sub": "bob"}
    add("hs256_no_exp", "hmac", sign(minimal, "HS256", "hmac"), "ok", claims=minimal)
    add("hs256_anonymous", "hmac", sign({"exp": NOW + HOUR}, "HS256", "hmac"), "ok",
        claims={"exp": NOW + HOUR})
    add("hs256_empty_sub", "hmac", sign({"sub": ""}, "HS256", "hmac"), "ok", claims={"sub": ""})
    for info in ["text", 42, 12345678901234567890, -0.25, True, None, [1, [2, [3]]], {}]:
        c = {"sub": "carol", "info": info}
        add("hs256_info_" + json.dumps(info).replace(" ", ""), "hmac", sign(c, "HS256", "hmac"),
            "ok", claims=c)
    c = {"sub": "dave", "exp": NOW + 10.5, "nbf": NOW - 0.5, "iat": NOW - 1.25}
    add("hs256_fractional_times", "hmac", sign(c, "HS256", "hmac"), "ok", claims=c)
    c = {"sub": "erin", "aud": "x", "iss": "y", "jti": "z", "custom": {"deep": [1]}}
    add("hs256_unknown_claims_ignored", "hmac", sign(c, "HS256", "hmac"), "ok",
        claims={"sub": "erin"})
    add("hs256_extra_header_fields", "hmac",
        sign(minimal, "HS256", "hmac", headers={"kid": "k1", "jku": "https://evil.example/k"}),
        "ok", claims=minimal)

    # Times (the tests use a leeway of 5 s unless a case says otherwise).
    add("hs256_expired", "hmac", sign({"sub": "a", "exp": NOW - 60}, "HS256", "hmac"), "expired")
    add("hs256_expired_within_leeway", "hmac",
        sign({"sub": "a", "exp": NOW - 3}, "HS256", "hmac"), "ok", claims={"sub": "a", "exp": NOW - 3})
    add("hs256_exp_is_now", "hmac", sign({"sub": "a", "exp": NOW}, "HS256", "hmac"), "ok",
        claims={"sub": "a", "exp": NOW})
    add("hs256_not_yet_valid", "hmac", sign({"sub": "a", "nbf": NOW + 60}, "HS256", "hmac"),
        "not_yet_valid")
    add("hs256_nbf_within_leeway", "hmac", sign({"sub": "a", "nbf": NOW + 3}, "HS256", "hmac"),
        "ok", claims={"sub": "a"})
    add("es256_expired", "ec256", sign({"sub": "a", "exp": NOW - 60}, "ES256", "ec256"), "expired")

    # Signatures that do not verify.
    add("hs256_other_secret", "hmac",
        jwt.encode(minimal, other_secret, algorithm="HS256"), "bad_signature")
    add("rs256_other_key", "rsa", jwt.encode(minimal, rsa_other, algorithm="RS256"),
        "bad_signature")
    add("es256_other_key", "ec256", jwt.encode(minimal, ec256_other, algorithm="ES256"),
        "bad_signature")
    valid = sign(claims, "HS256", "hmac")
    h, p, s = valid.split(".")
    forged = b64(json.dumps(dict(claims, sub="mallory")).encode())
    add("hs256_payload_swapped", "hmac", ".".join([h, forged, s]), "bad_signature")
    valid_es = sign(claims, "ES256", "ec256")
    eh, ep, es = valid_es.split(".")
    raw = bytearray(base64.urlsafe_b64decode(es + "=="))
    raw[5] ^= 0x01
    add("es256_signature_bit_flipped", "ec256", ".".join([eh, ep, b64(bytes(raw))]),
        "bad_signature")
    add("es256_signature_truncated", "ec256", ".".join([eh, ep, b64(bytes(raw[:63]))]),
        "bad_signature")

    # Algorithms.
    add("alg_none", "hmac", jwt.encode(minimal, None, algorithm="none"), "wrong_algorithm")
    add("alg_none_against_rsa", "rsa", jwt.encode(minimal, None, algorithm="none"),
        "wrong_algorithm")
    confused = confused_jws()
    add("hs256_signed_with_rsa_public_pem", "rsa",
        confused.encode(json.dumps(minimal).encode(), keys["rsa"], algorithm="HS256"),
        "wrong_algorithm")
    add("hs256_signed_with_ec_public_pem", "ec256",
        confused.encode(json.dumps(minimal).encode(), keys["ec256"], algorithm="HS256"),
        "wrong_algorithm")
    add("rs256_against_hmac", "hmac", sign(minimal, "RS256", "rsa"), "wrong_algorithm")
    add("es256_against_rsa", "rsa", sign(minimal, "ES256", "ec256"), "wrong_algorithm")
    add("es384_against_p256", "ec256", sign(minimal, "ES384", "ec384"), "wrong_algorithm")
    add("ps256_unsupported", "rsa", jwt.encode(minimal, rsa_key, algorithm="PS256"),
        "wrong_algorithm")

    # Malformed tokens (the signature is real; the structure or JSON is wrong).
    jws = jwt.PyJWS()
    for name, payload in [("payload_not_json", b"not json"),
                          ("payload_array", b"[1,2]"),
                          ("payload_trailing_garbage", b'{"sub":"a"} x'),
                          ("duplicate_sub", b'{"sub":"alice","sub":"admin"}'),
                          ("duplicate_exp", b'{"exp":1,"exp":9999999999}'),
                          ("sub_not_string", b'{"sub":42}'),
                          ("exp_not_number", b'{"exp":"tomorrow"}'),
                          ("nbf_null", b'{"nbf":null}'),
                          ("channels_not_array", b'{"channels":"news"}'),
                          ("channels_not_strings", b'{"channels":["a",1]}'),
                          ("channels_nested", b'{"channels":[["a"]]}'),
                          ("channels_bad_name", b'{"channels":["has space"]}'),
                          ("invalid_utf8", b'{"sub":"\xff"}')]:
        add("hs256_" + name, "hmac", jws.encode(payload, secret, algorithm="HS256"), "malformed")
    add("hs256_crit_header", "hmac",
        sign(minimal, "HS256", "hmac", headers={"crit": ["exp"]}), "malformed")
    add("hs256_padded_signature", "hmac", valid + "=", "malformed")
    add("hs256_padded_header", "hmac", h + "=." + p + "." + s, "malformed")
    add("hs256_four_parts", "hmac", valid + ".x", "malformed")
    add("hs256_two_parts", "hmac", h + "." + p, "malformed")
    add("hs256_empty_signature", "hmac", h + "." + p + ".", "malformed")
    add("hs256_whitespace", "hmac", h + "." + p[:5] + " " + p[5:] + "." + s, "malformed")
    add("hs256_standard_base64_alphabet", "hmac", h + "." + p + "." + s[:-2] + "+" + s[-1],
        "malformed")
    # 32 bytes are 43 characters whose last one carries 2 unused bits, zero in
    # the canonical spelling: set one. A lenient decoder reads the same MAC
    # and accepts the token.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    assert len(s) == 43 and alphabet.index(s[-1]) % 4 == 0
    add("hs256_noncanonical_signature", "hmac",
        h + "." + p + "." + s[:-1] + alphabet[alphabet.index(s[-1]) | 1], "malformed")
    add("header_not_json", "hmac", b64(b"{alg") + "." + p + "." + s, "malformed")
    add("header_without_alg", "hmac", b64(b'{"typ":"JWT"}') + "." + p + "." + s, "malformed")
    add("header_alg_not_string", "hmac", b64(b'{"alg":256}') + "." + p + "." + s, "malformed")

    # Subscription tokens: checked for channel "private:room" and user "alice".
    sub_claims = {"sub": "alice", "channel": "private:room", "exp": NOW + HOUR}
    add("sub_valid", "hmac", sign(sub_claims, "HS256", "hmac"), "ok", kind="subscription",
        claims=sub_claims)
    add("sub_valid_es256", "ec256", sign(sub_claims, "ES256", "ec256"), "ok",
        kind="subscription", claims=sub_claims)
    add("sub_wrong_channel", "hmac", sign(dict(sub_claims, channel="private:other"), "HS256",
                                          "hmac"), "wrong_channel", kind="subscription")
    add("sub_wrong_user", "hmac", sign(dict(sub_claims, sub="bob"), "HS256", "hmac"),
        "wrong_user", kind="subscription")
    add("sub_no_sub_for_alice", "hmac", sign({"channel": "private:room"}, "HS256", "hmac"),
        "wrong_user", kind="subscription")
    add("sub_expired", "hmac", sign(dict(sub_claims, exp=NOW - 60), "HS256", "hmac"), "expired",
        kind="subscription")
    add("sub_no_channel", "hmac", sign({"sub": "alice"}, "HS256", "hmac"), "malformed",
        kind="subscription")
    add("sub_channel_not_string", "hmac", sign({"sub": "alice", "channel": 7}, "HS256", "hmac"),
        "malformed", kind="subscription")

    random_payloads(vectors, secret)

    return {"generator": "tests/unit/auth_vectors.py, PyJWT " + jwt.__version__,
            "now": NOW, "leeway_seconds": 5, "subscription_channel": "private:room",
            "subscription_user": "alice", "keys": keys, "bad_keys": bad_keys,
            "other_secret": other_secret, "vectors": vectors}


# Randomized payloads (a fixed seed, so --write is reproducible for these):
# claims of the right and the wrong types, repeated claims, any JSON in info
# and in unknown claims, escapes, non-ASCII, random whitespace. The expected
# verdict and claims are computed here, by Python's json module and the rules
# of token_verifier.h, independently of the C++ reader they test.
STRING_PIECES = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u0001", "\u001f", "\u007f",
                 "\u00e9", "\u2028", "\U0001F600", "#", ":", ",", "{", "]"]
KNOWN = ["sub", "exp", "nbf", "iat", "info", "channels"]


def random_string(rng, max_pieces=6):
    return "".join(rng.choice(STRING_PIECES) for _ in range(rng.randint(0, max_pieces)))


def random_channel(rng):
    alphabet = "abcxyz019:#,-_.!~"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))


def random_json(rng, depth=0):
    kinds = ["int", "bigint", "float", "string", "bool", "null"]
    if depth < 4:
        kinds += ["list", "dict"]
    kind = rng.choice(kinds)
    if kind == "int":
        return rng.randint(-1000, 1000)
    if kind == "bigint":
        return rng.choice([2**63 - 1, -2**63, 2**64 - 1, 10**30])
    if kind == "float":
        return rng.choice([0.5, -2.25, 1e300, -1e-300, 123456.789, 0.1])
    if kind == "string":
        return random_string(rng)
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "list":
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {random_string(rng, 3) + str(i): random_json(rng, depth + 1)
            for i in range(rng.randint(0, 4))}


def is_number(v):
    return type(v) in (int, float)  # not bool


def valid_channel(v):
    return isinstance(v, str) and 1 <= len(v.encode()) <= 255 and \
        all(0x21 <= ord(c) <= 0x7e and c not in "\"\\" for c in v)


def random_claim(rng, name):
    """A value for claim `name`: mostly of its type, sometimes not."""
    if rng.random() < 0.25:
        return random_json(rng)
    if name == "sub":
        return random_string(rng)
    if name in ("exp", "nbf", "iat"):
        base = {"exp": NOW + HOUR, "nbf": NOW - HOUR, "iat": NOW}[name]
        return base + rng.choice([0, 1, 59, 0.5, 7.25])
    if name == "info":
        return random_json(rng)
    return [random_channel(rng) if rng.random() < 0.9 else random_json(rng)
            for _ in range(rng.randint(0, 4))]


def expected_verdict(pairs):
    seen = set()
    for k, _ in pairs:
        if k in KNOWN:
            if k in seen:
                return "malformed", None
            seen.add(k)
    claims = dict(pairs)  # unknown repeated keys: ignored by the reader
    if "sub" in claims and not isinstance(claims["sub"], str):
        return "malformed", None
    for t in ("exp", "nbf", "iat"):
        if t in claims and not is_number(claims[t]):
            return "malformed", None
    if "channels" in claims and not (isinstance(claims["channels"], list) and
                                     all(valid_channel(c) for c in claims["channels"])):
        return "malformed", None
    # exp and nbf at NOW with a 5 s leeway (NumericDates held within +-9e9 s).
    def clamp(t):
        return max(-9e9, min(9e9, t))
    if "exp" in claims and NOW >= clamp(claims["exp"]) + 5:
        return "expired", None
    if "nbf" in claims and NOW < clamp(claims["nbf"]) - 5:
        return "not_yet_valid", None
    return "ok", {k: v for k, v in claims.items() if k in ("sub", "exp", "iat", "info", "channels")}


def random_payloads(vectors, secret, count=150):
    rng = random.Random(22)
    jws = jwt.PyJWS()
    ws = ["", " ", "\n", "\t ", "  "]
    for i in range(count):
        names = rng.sample(KNOWN, rng.randint(0, len(KNOWN)))
        names += ["x" + random_string(rng, 2) for _ in range(rng.randint(0, 2))]  # unknown claims
        if rng.random() < 0.15 and names:
            names.append(rng.choice(names))  # a repeated key
        rng.shuffle(names)
        pairs = [(n, random_claim(rng, n) if n in KNOWN else random_json(rng)) for n in names]
        ascii_only = rng.random() < 0.5
        members = [rng.choice(ws) + json.dumps(k, ensure_ascii=ascii_only) + rng.choice(ws) + ":" +
                   rng.choice(ws) + json.dumps(v, ensure_ascii=ascii_only) + rng.choice(ws)
                   for k, v in pairs]
        text = rng.choice(ws) + "{" + ",".join(members) + "}" + rng.choice(ws)
        verdict, claims = expected_verdict(pairs)
        token = jws.encode(text.encode(), secret, algorithm="HS256")
        if claims is None:
            vectors.append({"name": "random_%03d" % i, "key": "hmac", "token": token,
                            "expect": verdict})
        else:
            vectors.append({"name": "random_%03d" % i, "key": "hmac", "token": token,
                            "expect": verdict, "claims": claims})


def pyjwt_key(data, name):
    if name == "hmac":
        return data["keys"]["hmac"]
    return serialization.load_pem_public_key(data["keys"][name].encode())


ALGS = {"hmac": ["HS256", "HS384", "HS512"], "rsa": ["RS256", "RS384", "RS512"],
        "rsa_pkcs1": ["RS256", "RS384", "RS512"], "ec256": ["ES256"], "ec384": ["ES384"],
        "ec521": ["ES512"]}


def check(data):
    """PyJWT must agree with each expectation it can judge: valid tokens decode
    to the recorded claims; bad signatures and algorithms are refused. (Times
    are judged by the tests at NOW; PyJWT only reads the real clock.)"""
    failures = 0
    options = {"verify_exp": False, "verify_nbf": False, "verify_iat": False,
               "verify_aud": False, "verify_iss": False}
    for v in data["vectors"]:
        expect = v["expect"]
        try:
            decoded = jwt.decode(v["token"], pyjwt_key(data, v["key"]), algorithms=ALGS[v["key"]],
                                 options=options)
            verdict = "ok"
        except jwt.InvalidSignatureError:
            verdict = "bad_signature"
        except jwt.InvalidAlgorithmError:
            verdict = "wrong_algorithm"
        except (jwt.DecodeError, jwt.InvalidTokenError):
            verdict = "rejected"
        judged = {"ok": "ok", "expired": "ok", "not_yet_valid": "ok", "wrong_channel": "ok",
                  "wrong_user": "ok", "bad_signature": "bad_signature",
                  "wrong_algorithm": ("wrong_algorithm", "rejected")}.get(expect)
        if judged is None:
            continue  # malformed: PyJWT is more lenient about JSON than the tests demand
        if verdict not in (judged if isinstance(judged, tuple) else (judged,)):
            print(f"{v['name']}: expected {expect}, PyJWT says {verdict}")
            failures += 1
        elif verdict == "ok" and "claims" in v and expect == "ok":
            for claim, value in v["claims"].items():
                if decoded.get(claim) != value:
                    print(f"{v['name']}: claim {claim} is {decoded.get(claim)!r}, "
                          f"recorded {value!r}")
                    failures += 1
    print(f"{len(data['vectors'])} vectors, {failures} disagreements with PyJWT {jwt.__version__}")
    return failures == 0


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("--write", "--check"):
        print(__doc__, file=sys.stderr)
        return 2
    if sys.argv[1] == "--write":
        with open(sys.argv[2], "w", encoding="utf-8") as f:
            json.dump(make(), f, indent=1, ensure_ascii=True)
            f.write("\n")
        return 0
    with open(sys.argv[2], encoding="utf-8") as f:
        return 0 if check(json.load(f)) else 1


if __name__ == "__main__":
    sys.exit(main())
