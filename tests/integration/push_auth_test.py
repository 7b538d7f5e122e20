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

import chat_auth_test as chat
from chat_support import Server, run_tests
from push_support import Redis, Sse

SERVER_BINARY = None  # set by run_tests
API_KEY = "k3y-0f-the-publish-api"
API_KEY_FILE = chat.write("api-key", API_KEY + "\n")


def node(redis, *flags):
    return Server(SERVER_BINARY, "--redis", redis.address(), "--tick", "5ms", *flags)


def request(port, method, path, body=None, authorization=None):
    """(status, headers, parsed JSON body or None)."""
    data = json.dumps(body).encode() if body is not None else b""
    auth = "Authorization: %s\r\n" % authorization if authorization is not None else ""
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
        st = s.read_stats(lambda st: st["api"]["unauthorized"] >= 7)
        assert st["api"]["unauthorized"] == 7 and st["api"]["cancels_done"] == 1, st["api"]
    # Without --api-key-file the API stays open (as before).
    with Redis() as r, node(r) as s:
        assert request(s.port, "POST", "/publish", {"channel": "n", "data": 1})[0] == 202


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
