#!/usr/bin/env python3
"""Identity and permission against the real heartwheel-chat (issue 22; protocol
version 2, docs/chat-protocol.md): the connect with a token (none, malformed,
bad signature, `none`, HS256 signed with the RSA public key, expired, not yet
valid, valid HS256 / RS256 / ES256), the connect timeout (3008), refresh
before and after expiry (3000 "token expired"), subscribe / publish /
presence / history per namespace, private channels with and without a
subscription token, user-limited channels, server-side subscriptions from
the token's `channels`, and the Origin rule at the handshake (403).

Tokens and keys come from PyJWT and python3-cryptography (Debian's
python3-jwt), never from heartwheel's code.

Usage: chat_auth_test.py PATH/TO/heartwheel-chat [test ...]
Every server binds port 0 and is stopped by PID; a watchdog ends a hung test.
"""
import base64
import hashlib
import hmac
import json
import os
import struct
import sys
import tempfile
import time

from chat_support import CLOSE, RawClient, Server, TEXT, cpu_seconds, run_tests

try:
    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
except ImportError:
    sys.exit("python3-jwt (and python3-cryptography) missing: run tools/install-deps")

SERVER_BINARY = None  # set by run_tests
DIR = tempfile.mkdtemp(prefix="chat-auth-")
SECRET = "an-hmac-secret-of-at-least-32-bytes-for-HS256!"
OTHER_SECRET = "another-secret-of-at-least-32-bytes-0123456789"

CHANNELS = {"namespaces": [
    {"name": "", "subscribe": "user", "publish": "subscriber", "history": True, "presence": True},
    {"name": "public", "subscribe": "any", "publish": "user", "history": True, "presence": True},
    {"name": "private", "subscribe": "token", "publish": "subscriber", "history": True,
     "presence": True},
    {"name": "news", "subscribe": "user", "publish": "none", "history": False,
     "presence": False},
    {"name": "dm", "subscribe": "user", "publish": "subscriber", "history": True,
     "presence": True},
]}


def write(name, data):
    path = os.path.join(DIR, name)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return path


RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())


def public_pem(key):
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)


SECRET_FILE = write("secret", SECRET + "\n")
RSA_FILE = write("rsa.pem", public_pem(RSA_KEY))
EC_FILE = write("ec.pem", public_pem(EC_KEY))
CHANNELS_FILE = write("channels.json", json.dumps(CHANNELS))


def hs256(claims, secret=SECRET):
    return jwt.encode(claims, secret, algorithm="HS256")


def user_token(sub="alice", ttl=3600, **extra):
    now = int(time.time())
    claims = {"sub": sub, "iat": now, "exp": now + ttl}
    claims.update(extra)
    return hs256(claims)


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hs256_with_key_bytes(claims, key):
    """HS256 by hand (hmac module): PyJWT refuses a PEM public key as an HMAC
    secret, which is exactly the algorithm-confusion attack to test."""
    head = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64url(json.dumps(claims).encode())
    mac = hmac.new(key, (head + "." + body).encode(), hashlib.sha256).digest()
    return head + "." + body + "." + b64url(mac)


def auth_server(*flags, key=("--token-hmac-secret-file", SECRET_FILE)):
    return Server(SERVER_BINARY, *key, "--channels-config", CHANNELS_FILE, *flags)


class V2:
    """A raw /ws connection speaking version 2: connect first, then requests."""

    def __init__(self, server, token=None, path="/ws", extra=""):
        self.c = RawClient(server.port, path=path, handshake=False)
        self.status = self.c.handshake(path, extra=extra)
        self.next_id = 1
        self.pushes = []
        self.connected = None
        if token is not None and self.status == 101:
            self.connected = self.request("connect", token=token)

    def request(self, op, **fields):
        rid = self.next_id
        self.next_id += 1
        self.c.send(TEXT, json.dumps(dict(id=rid, op=op, **fields)))
        while True:
            msg = self.c.recv_json()
            if msg.get("id") == rid:
                return msg
            self.pushes.append(msg)

    def push(self):
        return self.pushes.pop(0) if self.pushes else self.c.recv_json()

    def publication(self):
        """The next push that is a publication (presence events skipped)."""
        while True:
            msg = self.push()
            if "offset" in msg:
                return msg

    def close_code(self):
        """The server's close frame: (code, reason); skips data frames."""
        while True:
            op, payload = self.c.recv_message()
            if op == CLOSE:
                return struct.unpack("!H", payload[:2])[0], payload[2:].decode()

    def close(self):
        self.c.close()


def expect_refused(server, token, why, message_part=None):
    v = V2(server, token)
    reply = v.connected
    assert reply["error"]["code"] == "unauthorized", (why, reply)
    if message_part:
        assert message_part in reply["error"]["message"], (why, reply)
    assert v.close_code()[0] == 3000, why
    v.close()


def test_connect_token_matrix():
    now = int(time.time())
    with auth_server() as s:
        # No token; a first message that is not a connect.
        expect_refused(s, "", "no token")
        v = V2(s)
        reply = v.request("subscribe", channel="room")
        assert reply["error"]["code"] == "unauthorized", reply
        assert v.close_code()[0] == 3000
        v.close()
        expect_refused(s, "not.a-token", "malformed")
        expect_refused(s, "a.b", "two parts")
        expect_refused(s, hs256({"sub": "alice"}, OTHER_SECRET), "bad signature", "signature")
        expect_refused(s, jwt.encode({"sub": "alice"}, None, algorithm="none"), "alg none")
        expect_refused(s, jwt.encode({"sub": "alice"}, EC_KEY, algorithm="ES256"),
                       "ES256 to an HMAC key")
        expect_refused(s, hs256({"sub": "alice", "exp": now - 60}), "expired", "expired")
        expect_refused(s, hs256({"sub": "alice", "nbf": now + 60}), "not yet valid")
        # Within the leeway (5 s by default): still accepted.
        v = V2(s, hs256({"sub": "alice", "exp": now - 2}))
        assert v.connected["ok"] is True, v.connected
        assert 0 < v.connected["connect"]["expires_in_ms"] <= 3100, v.connected
        v.close()
        # Valid: the reply names the client and the user; expires_in_ms from exp.
        v = V2(s, hs256({"sub": "alice", "exp": now + 600, "info": {"name": "Alice"}}))
        c = v.connected
        assert c["id"] == 1 and c["ok"] is True, c
        assert c["connect"]["user"] == "alice" and c["connect"]["client"], c
        assert 590_000 <= c["connect"]["expires_in_ms"] <= 606_000, c
        v.close()
        # No exp: no expires_in_ms. Anonymous (no sub): user "".
        v = V2(s, hs256({}))
        assert v.connected["ok"] and v.connected["connect"]["user"] == "", v.connected
        assert "expires_in_ms" not in v.connected["connect"], v.connected
        v.close()
        st = s.read_stats(lambda st: st["chat"]["errors"].get("unauthorized", 0) >= 9)
        assert st["chat"]["errors"]["unauthorized"] == 9, st["chat"]


def test_rsa_and_ecdsa_keys_and_algorithm_confusion():
    claims = {"sub": "bob", "exp": int(time.time()) + 600}
    with auth_server(key=("--token-rsa-public-key", RSA_FILE)) as s:
        v = V2(s, jwt.encode(claims, RSA_KEY, algorithm="RS256"))
        assert v.connected["connect"]["user"] == "bob", v.connected
        v.close()
        # HS256 "signed" with the server's RSA public key as the secret.
        expect_refused(s, hs256_with_key_bytes(claims, public_pem(RSA_KEY)),
                       "HS256 with the RSA public key")
        expect_refused(s, hs256(claims), "HS256 to an RSA key")
        expect_refused(s, jwt.encode(claims, None, algorithm="none"), "alg none (RSA)")
    with auth_server(key=("--token-ecdsa-public-key", EC_FILE)) as s:
        v = V2(s, jwt.encode(claims, EC_KEY, algorithm="ES256"))
        assert v.connected["connect"]["user"] == "bob", v.connected
        v.close()
        other = ec.generate_private_key(ec.SECP256R1())
        expect_refused(s, jwt.encode(claims, other, algorithm="ES256"), "ES256 other key")
        expect_refused(s, hs256_with_key_bytes(claims, public_pem(EC_KEY)),
                       "HS256 with the EC public key")


def test_connect_timeout_closes_with_3008():
    with auth_server("--connect-timeout", "300ms") as s:
        started = time.monotonic()  # before the upgrade, where the timeout starts
        v = V2(s)
        assert v.close_code()[0] == 3008
        assert 0.25 <= time.monotonic() - started <= 5, time.monotonic() - started
        v.close()
        # A connect in time clears it.
        v = V2(s, user_token())
        time.sleep(0.6)
        assert v.request("subscribe", channel="room")["ok"] is True
        v.close()
        st = s.read_stats(lambda st: "connect_timeout" in st["chat"]["errors"])
        assert st["chat"]["errors"]["connect_timeout"] == 1, st["chat"]


def test_refresh_before_and_after_expiry():
    with auth_server() as s:
        now = int(time.time())
        # exp 3 s ago: valid for the rest of the 5 s leeway, about 2 s.
        stale = hs256({"sub": "alice", "exp": now - 3})
        expiring = V2(s, stale)
        refreshed = V2(s, stale)
        assert expiring.connected["ok"] and refreshed.connected["ok"]
        r = refreshed.request("refresh", token=user_token("alice", ttl=600))
        assert r["ok"] is True and r["expires_in_ms"] > 590_000, r
        started = time.monotonic()
        code, reason = expiring.close_code()
        assert (code, reason) == (3000, "token expired"), (code, reason)
        assert time.monotonic() - started <= 6, time.monotonic() - started
        # The refreshed one outlived the first token.
        time.sleep(0.5)
        assert refreshed.request("subscribe", channel="room")["ok"] is True
        # A refresh for another user, or with an expired token: unauthorized, 3000.
        r = refreshed.request("refresh", token=user_token("mallory"))
        assert r["error"]["code"] == "unauthorized", r
        assert refreshed.close_code()[0] == 3000
        late = V2(s, user_token("alice"))
        r = late.request("refresh", token=hs256({"sub": "alice", "exp": now - 60}))
        assert r["error"]["code"] == "unauthorized" and "expired" in r["error"]["message"], r
        assert late.close_code()[0] == 3000
        for v in (expiring, refreshed, late):
            v.close()
        st = s.read_stats(lambda st: "token_expired" in st["chat"]["errors"])
        assert st["chat"]["errors"]["token_expired"] == 1, st["chat"]


def sub_token(sub, channel, ttl=600):
    return hs256({"sub": sub, "channel": channel, "exp": int(time.time()) + ttl})


def code_of(reply):
    return "ok" if reply.get("ok") else reply["error"]["code"]


def test_channel_permissions_per_namespace():
    with auth_server() as s:
        alice = V2(s, user_token("alice", info={"name": "Alice"}))
        carol = V2(s, user_token("carol"))
        anon = V2(s, hs256({}))
        # Default namespace: subscribe user; publish subscriber.
        assert code_of(anon.request("subscribe", channel="room")) == "permission_denied"
        assert code_of(alice.request("publish", channel="room", data="x")) == "permission_denied"
        assert code_of(alice.request("subscribe", channel="room")) == "ok"
        r = alice.request("publish", channel="room", data={"text": "hi"})
        assert code_of(r) == "ok", r
        pub = alice.publication()
        assert pub["data"] == {"text": "hi"}, pub
        assert pub["info"]["user"] == "alice" and pub["info"]["info"] == {"name": "Alice"}, pub
        # public: anyone subscribes, only users publish.
        assert code_of(anon.request("subscribe", channel="public:lobby")) == "ok"
        assert code_of(anon.request("publish", channel="public:lobby", data=1)) == \
            "permission_denied"
        assert code_of(carol.request("publish", channel="public:lobby", data=2)) == "ok"
        # An unknown namespace.
        assert code_of(alice.request("subscribe", channel="nope:x")) == "unknown_channel"
        # news: nobody publishes; no history, no presence.
        assert code_of(alice.request("subscribe", channel="news:today")) == "ok"
        assert code_of(alice.request("publish", channel="news:today", data=1)) == \
            "permission_denied"
        assert code_of(alice.request("history", channel="news:today")) == "permission_denied"
        assert code_of(alice.request("presence", channel="news:today")) == "permission_denied"
        assert code_of(alice.request("history", channel="room")) == "ok"
        assert code_of(alice.request("presence", channel="room")) == "ok"
        # Private channels: a subscription token for this channel and user.
        assert code_of(alice.request("subscribe", channel="private:ceo")) == "permission_denied"
        r = alice.request("subscribe", channel="private:ceo", token=sub_token("alice", "private:x"))
        assert code_of(r) == "permission_denied" and "channel" in r["error"]["message"], r
        r = alice.request("subscribe", channel="private:ceo", token=sub_token("carol", "private:ceo"))
        assert code_of(r) == "permission_denied", r
        r = alice.request("subscribe", channel="private:ceo",
                          token=hs256({"sub": "alice", "channel": "private:ceo",
                                       "exp": int(time.time()) - 60}))
        assert code_of(r) == "permission_denied", r
        r = alice.request("subscribe", channel="private:ceo",
                          token=sub_token("alice", "private:ceo"))
        assert code_of(r) == "ok", r
        # User-limited channels, whatever the namespace says.
        assert code_of(alice.request("subscribe", channel="dm:chat#alice,bob")) == "ok"
        assert code_of(carol.request("subscribe", channel="dm:chat#alice,bob")) == \
            "permission_denied"
        assert code_of(carol.request("subscribe", channel="public:x#alice")) == \
            "permission_denied"
        # Every denial kept the connection open.
        for v in (alice, carol, anon):
            assert code_of(v.request("unsubscribe", channel="public:lobby")) in \
                ("ok", "not_subscribed")
            v.close()


def test_token_channels_are_server_side_subscriptions():
    with auth_server() as s:
        listener = V2(s, user_token("alice", channels=["room", "public:feed"]))
        assert listener.connected["ok"], listener.connected
        bob = V2(s, user_token("bob"))
        assert code_of(bob.request("subscribe", channel="room")) == "ok"
        assert code_of(bob.request("publish", channel="room", data="to alice")) == "ok"
        seen = listener.publication()
        assert seen["channel"] == "room" and seen["data"] == "to alice", seen
        listener.close()
        bob.close()


def test_origin_checked_at_the_handshake():
    with auth_server() as s:  # a key, no --allowed-origin: same host only
        assert V2(s, extra="Origin: http://evil.example\r\n").status == 403
        # RawClient sends "Host: 127.0.0.1": the same host is that origin.
        assert V2(s, extra="Origin: http://127.0.0.1\r\n").status == 101
        assert V2(s, extra="Origin: http://127.0.0.1:%d\r\n" % s.port).status == 403
        assert V2(s).status == 101  # no Origin: not a browser
        assert V2(s, path="/echo", extra="Origin: http://evil.example\r\n").status == 403
    with auth_server("--allowed-origin", "https://*.example.com",
                     "--allowed-origin", "http://localhost:3000") as s:
        assert V2(s, extra="Origin: https://app.example.com\r\n").status == 101
        assert V2(s, extra="Origin: http://localhost:3000\r\n").status == 101
        assert V2(s, extra="Origin: https://example.org\r\n").status == 403
        assert V2(s, extra="Origin: http://127.0.0.1\r\n").status == 403
    with Server(SERVER_BINARY) as s:  # no key: any origin, version 1 (the hello first)
        v = V2(s, extra="Origin: http://evil.example\r\n")
        assert v.status == 101 and "connect" in v.push()


def test_frames_after_the_servers_close_are_not_obeyed():
    """Issue 34: for up to --close-timeout, what a peer sent after the
    server's close still reached the handlers: after 3000 "token expired" a
    client kept publishing to subscribers; after 3008 a connect succeeded;
    after a refused connect every further frame's token was verified again
    (30,002 P-256 verifications, 3.3 s of CPU, from one connection). Now a
    session that sent its close acts on nothing more (counted in
    ws.messages_after_close)."""
    with auth_server("--connect-timeout", "300ms", "--close-timeout", "20s") as s:
        listener = V2(s, user_token("bob"))
        assert code_of(listener.request("subscribe", channel="room")) == "ok"
        # exp 3 s ago: about 2 s of the 5 s leeway left.
        expiring = V2(s, hs256({"sub": "alice", "exp": int(time.time()) - 3}))
        assert code_of(expiring.request("subscribe", channel="room")) == "ok"
        assert expiring.close_code() == (3000, "token expired")
        for i in range(8):
            expiring.c.send(TEXT, json.dumps({"id": 100 + i, "op": "publish", "channel": "room",
                                              "data": "after the close"}))
        s.read_stats(lambda st: st["ws"]["messages_after_close"] >= 8)
        assert code_of(listener.request("publish", channel="room", data="marker")) == "ok"
        seen = listener.publication()
        assert seen["data"] == "marker", seen  # before: 8 publications "after the close" first
        # 3008, then a connect with a valid token: not served.
        late = V2(s)
        assert late.close_code()[0] == 3008
        late.c.send(TEXT, json.dumps({"id": 1, "op": "connect", "token": user_token("carol")}))
        st = s.read_stats(lambda st: st["ws"]["messages_after_close"] >= 9)
        assert st["chat"]["requests"]["connect"] == 2, st["chat"]["requests"]  # bob, alice
        for v in (listener, expiring, late):
            v.close()
    claims = {"sub": "eve", "exp": int(time.time()) + 600}
    with auth_server("--close-timeout", "30s", key=("--token-ecdsa-public-key", EC_FILE)) as s:
        v = V2(s, "not a token")
        assert v.connected["error"]["code"] == "unauthorized" and v.close_code()[0] == 3000
        # Signed by another P-256 key: each one a whole verification, refused.
        forged = json.dumps({"id": 2, "op": "connect", "token": jwt.encode(
            claims, ec.generate_private_key(ec.SECP256R1()), algorithm="ES256")})
        frames = RawClient.frame(TEXT, forged, mask_key=b"\x01\x02\x03\x04") * 1000
        cpu = cpu_seconds(s.proc.pid)
        for _ in range(30):
            v.c.send_raw(frames)
        st = s.read_stats(lambda st: st["ws"]["messages_after_close"] >= 30000, timeout=60)
        spent = cpu_seconds(s.proc.pid) - cpu
        print("30,000 connects with an ES256 token after a refused one: %.2f s of server "
              "CPU, %d verified" % (spent, st["chat"]["requests"]["connect"]))
        assert st["chat"]["requests"]["connect"] == 1, st["chat"]["requests"]  # the refused one
        assert spent < 2.0, spent  # before: 30,001 P-256 verifications, 4.1 s (Debug)
        v.close()


def test_echo_is_off_and_names_are_displayable_when_tokens_are_required():
    """Issue 34: /echo was open without a token and without the connect
    deadline (a WebSocket for anyone, whatever the key says); a token's sub
    could hold U+0085 (a C1 control) or U+202E (which shows
    "alice\u202egnp.exe" as "aliceexe.png" to every subscriber)."""
    with auth_server() as s:
        assert V2(s, path="/echo").status == 404
        expect_refused(s, user_token("ali\u0085ce"), "C1 control in sub", "sub contains")
        expect_refused(s, user_token("alice\u202egnp.exe"), "bidi override in sub", "sub contains")
        expect_refused(s, user_token("a\u2028b"), "line separator in sub", "sub contains")
        v = V2(s, user_token("zoë 🙂"))  # the rest of Unicode is fine
        assert v.connected["connect"]["user"] == "zoë 🙂", v.connected
        v.close()
        st = s.read_stats(lambda st: st["chat"]["errors"].get("echo_refused", 0) == 1)
        assert st["chat"]["errors"]["echo_refused"] == 1, st["chat"]["errors"]


def test_bad_flags_are_usage_errors():
    import subprocess
    for flags, says in [
            (["--token-hmac-secret-file", os.path.join(DIR, "missing")], "--token-hmac-secret-file"),
            (["--token-hmac-secret-file", write("empty", "")], "--token-hmac-secret-file"),
            (["--token-rsa-public-key", EC_FILE], "--token-rsa-public-key"),
            (["--token-hmac-secret-file", SECRET_FILE, "--token-ecdsa-public-key", EC_FILE],
             "one of"),
            (["--channels-config", write("bad.json", '{"namespaces":[{"name":"","x":1}]}')],
             "--channels-config"),
            (["--allowed-origin", "example.com"], "--allowed-origin"),
            (["--token-hmac-secret-file", SECRET_FILE, "--connect-timeout", "0s"],
             "--connect-timeout")]:
        p = subprocess.run([SERVER_BINARY, "--listen", "127.0.0.1:0", *flags],
                           capture_output=True, text=True, timeout=20)
        assert p.returncode == 2, (flags, p.returncode, p.stderr)
        assert says in p.stderr, (flags, p.stderr)


if __name__ == "__main__":
    run_tests(globals(), sys.argv)
