#!/usr/bin/env python3
"""Identity and permission against the real heartwheel-push (issue 22), with a
redis-server of the test's own: the API key on POST /publish and DELETE
/publish/{id} (missing, wrong, right), SSE with &token= (none, bad, valid)
and the channel rules of --channels-config (user, private with
&subscription_token=, unknown namespace), and a version-2 connect on /ws.
Tokens come from PyJWT (chat_auth_test.py makes them and the keys).

Usage: push_auth_test.py PATH/TO/heartwheel-push [test ...]
"""
import json
import socket
import sys
import time

import chat_auth_test as chat
from chat_support import Server, run_tests
from push_support import Redis, Sse

SERVER_BINARY = None  # set by run_tests
API_KEY = "k3y-0f-the-publish-api"
API_KEY_FILE = chat.write("api-key", API_KEY + "\n")


def node(redis, *flags):
    return Server(SERVER_BINARY, "--redis", redis.address(), "--tick", "5ms", *flags)


def request(port, method, path, body=None, authorization=None, api_key=None):
    """(status, headers, parsed JSON body or None); api_key: as X-API-Key."""
    data = json.dumps(body).encode() if body is not None else b""
    auth = "Authorization: %s\r\n" % authorization if authorization is not None else ""
    if api_key is not None:
        auth += "X-API-Key: %s\r\n" % api_key
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(("%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%sContent-Type: "
                   "application/json\r\nContent-Length: %d\r\n\r\n"
                   % (method, path, auth, len(data))).encode() + data)
        raw = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            raw += chunk
    head, _, payload = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
    return int(lines[0].split()[1]), headers, json.loads(payload) if payload.strip() else None


def test_api_key_on_publish_and_delete():
    with Redis() as r, node(r, "--api-key-file", API_KEY_FILE) as s:
        body = {"channel": "news", "data": 1, "delay_ms": 60000}
        for auth in (None, "apikey wrong", "Bearer " + API_KEY, "apikey " + API_KEY + "x", ""):
            status, headers, reply = request(s.port, "POST", "/publish", body, auth)
            assert status == 401 and reply["error"]["code"] == "unauthorized", (auth, reply)
            assert headers.get("www-authenticate") == "apikey", headers
        status, _, reply = request(s.port, "POST", "/publish", body, "apikey " + API_KEY)
        assert status == 202, reply
        pid = reply["id"]
        for auth in (None, "apikey nope"):
            status, _, reply = request(s.port, "DELETE", "/publish/" + pid, None, auth)
            assert status == 401 and reply["error"]["code"] == "unauthorized", (auth, reply)
        status, _, _ = request(s.port, "DELETE", "/publish/" + pid, None, "APIKEY " + API_KEY)
        assert status == 204, status
        # The cancel in the wait too: it came after the seventh refusal, and a
        # file written between them has that and not the cancel.
        st = s.read_stats(lambda st: st["api"]["unauthorized"] >= 7 and
                          st["api"]["cancels_done"] >= 1)
        assert st["api"]["unauthorized"] == 7 and st["api"]["cancels_done"] == 1, st["api"]
    # Without --api-key-file the API stays open (as before).
    with Redis() as r, node(r) as s:
        assert request(s.port, "POST", "/publish", {"channel": "n", "data": 1})[0] == 202


def test_centrifugo_api_publish_and_broadcast_with_either_key_header():
    with Redis() as r, node(r, "--api-key-file", API_KEY_FILE) as s:
        sse = Sse(s.port, "a")
        sse.event()
        for path in ("/api/publish", "/api/broadcast"):
            status, _, reply = request(s.port, "POST", path, {"channel": "a", "data": 1},
                                       api_key="wrong")
            assert status == 401 and reply["error"]["code"] == "unauthorized", (path, reply)
        status, _, reply = request(s.port, "POST", "/api/publish",
                                   {"channel": "a", "data": {"n": 1}, "idempotency_key": "k"},
                                   api_key=API_KEY)
        assert status == 200 and reply["result"]["offset"] == 1, reply
        first = reply["result"]
        status, _, reply = request(s.port, "POST", "/api/publish",
                                   {"channel": "a", "data": {"n": "again"}, "idempotency_key": "k"},
                                   authorization="apikey " + API_KEY)
        assert status == 200 and reply["result"] == first, (first, reply)
        status, _, reply = request(s.port, "POST", "/api/broadcast",
                                   {"channels": ["a", "b", ""], "data": {"n": 2}},
                                   api_key=API_KEY)
        assert status == 200, reply
        responses = reply["result"]["responses"]
        assert responses[0]["result"]["offset"] == 2, responses
        assert responses[1]["result"]["offset"] == 1, responses  # b has a stream of its own
        assert responses[2]["error"]["code"] == 107, responses  # an empty channel name
        got = sse.messages(2)
        assert [e["data"]["data"] for e in got] == [{"n": 1}, {"n": 2}], got
        status, _, reply = request(s.port, "POST", "/api/publish",
                                   {"channel": "a", "data": 1, "delay_ms": 5}, api_key=API_KEY)
        assert status == 200 and reply["error"]["code"] == 107, reply
        sse.close()


def sse_status(port, query):
    sse = Sse(port, query)
    try:
        if sse.status != 200:
            return sse.status, None
        first = sse.event()
        assert first["event"] == "subscribed", first
        return 200, None
    finally:
        sse.close()


def test_sse_token_and_channel_rules():
    with Redis() as r, node(r, "--token-hmac-secret-file", chat.SECRET_FILE,
                            "--channels-config", chat.CHANNELS_FILE) as s:
        alice = chat.user_token("alice")
        assert sse_status(s.port, "room")[0] == 401
        assert sse_status(s.port, "room&token=not.a.token")[0] == 401
        assert sse_status(s.port, "room&token=" + chat.hs256({"sub": "alice"},
                                                             chat.OTHER_SECRET))[0] == 401
        assert sse_status(s.port, "room&token=" + chat.hs256({"sub": "alice", "exp": 1}))[0] == 401
        assert sse_status(s.port, "room&token=" + alice)[0] == 200
        assert sse_status(s.port, "room&token=" + chat.hs256({}))[0] == 403  # anonymous
        assert sse_status(s.port, "public:feed&token=" + chat.hs256({}))[0] == 200
        assert sse_status(s.port, "nope:x&token=" + alice)[0] == 403
        assert sse_status(s.port, "private:ceo&token=" + alice)[0] == 403
        assert sse_status(s.port, "private:ceo&token=%s&subscription_token=%s"
                          % (alice, chat.sub_token("carol", "private:ceo")))[0] == 403
        assert sse_status(s.port, "private:ceo&token=%s&subscription_token=%s"
                          % (alice, chat.sub_token("alice", "private:ceo")))[0] == 200
        assert sse_status(s.port, "dm:x#bob&token=" + alice)[0] == 403
        # A subscriber with a token receives what the API publishes.
        sse = Sse(s.port, "room&token=" + alice)
        assert sse.event()["event"] == "subscribed"
        assert request(s.port, "POST", "/publish", {"channel": "room", "data": "hi"})[0] == 202
        assert sse.messages(1)[0]["data"]["data"] == "hi"
        sse.close()
        st = s.read_stats(lambda st: st["api"]["sse_refused"] >= 9)
        assert st["api"]["sse_refused"] == 9, st["api"]


def test_sse_stream_ends_at_its_token_exp():
    """A stream whose token has `exp` ends at exp (plus the verifier's 5 s
    leeway, as for WebSocket): a last event "token_expired", then the
    connection closes (close reason token_expired), counted in
    sse.token_expired and heartwheel_push_sse_token_expired_total. Streams
    whose token has no exp, or a later one, stay open and keep receiving."""
    import urllib.request
    LEEWAY = 5
    with Redis() as r, node(r, "--token-hmac-secret-file", chat.SECRET_FILE,
                            "--sse-heartbeat", "500ms",
                            "--metrics-listen", "127.0.0.1:0") as s:
        line = s.proc.stdout.readline()
        assert line.startswith("metrics on "), line
        metrics_url = "http://%s/metrics" % line.split()[-1]
        exp = int(time.time()) - LEEWAY + 2  # about 2 s left (1 to 2: exp is whole seconds)
        ends_at = exp + LEEWAY  # wall clock, this machine's (the server's too)
        expiring = Sse(s.port, "room&token=" + chat.hs256({"sub": "alice", "exp": exp}))
        no_exp = Sse(s.port, "room&token=" + chat.hs256({"sub": "bob"}))
        later = Sse(s.port, "room&token=" + chat.user_token("carol", ttl=600))
        for sse in (expiring, no_exp, later):
            assert sse.status == 200 and sse.event()["event"] == "subscribed"
        last = None
        while True:  # heartbeats (comments) until the last event
            ev = expiring.event(timeout=10)
            if ev["event"] == "token_expired":
                last = ev
                break
        ended = time.time()
        print("the stream ended %+.3f s from exp + leeway" % (ended - ends_at))
        assert ended >= ends_at - 0.05, "ended %.2f s before exp + leeway" % (ends_at - ended)
        # Loaded 2-core machine: a tick plus a slow loop turn, with room to spare.
        assert ended <= ends_at + 3, "ended %.2f s after exp + leeway" % (ended - ends_at)
        assert "expired" in last["data"]["reason"], last
        try:
            extra = expiring.event(timeout=5)
            raise AssertionError("an event after token_expired: %r" % extra)
        except ConnectionError:
            pass  # the server closed the connection
        expiring.close()
        # The others outlive it: a publication reaches both.
        assert request(s.port, "POST", "/publish", {"channel": "room", "data": "still"})[0] == 202
        for sse in (no_exp, later):
            assert sse.messages(1)[0]["data"]["data"] == "still"
            sse.close()
        st = s.read_stats(lambda st: st["sse"]["token_expired"] >= 1 and
                          st["net"]["closed_by_reason"].get("token_expired", 0) >= 1)
        assert st["sse"]["token_expired"] == 1, st["sse"]
        assert st["net"]["closed_by_reason"]["token_expired"] == 1, st["net"]["closed_by_reason"]
        text = urllib.request.urlopen(metrics_url, timeout=10).read().decode()
        assert "heartwheel_push_sse_token_expired_total 1" in text, \
            [l for l in text.split("\n") if "sse" in l]


def test_websocket_speaks_version_2():
    with Redis() as r, node(r, "--token-hmac-secret-file", chat.SECRET_FILE) as s:
        chat.expect_refused(s, chat.hs256({"sub": "x"}, chat.OTHER_SECRET), "bad signature")
        v = chat.V2(s, chat.user_token("alice"))
        assert v.connected["ok"] and v.connected["connect"]["user"] == "alice", v.connected
        assert chat.code_of(v.request("subscribe", channel="room")) == "ok"
        assert chat.V2(s, extra="Origin: http://evil.example\r\n").status == 403
        v.close()


if __name__ == "__main__":
    run_tests(globals(), sys.argv)
