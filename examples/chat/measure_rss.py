#!/usr/bin/env python3
"""Server RSS per WebSocket connection of heartwheel-chat: N connections
through /ws, idle, then subscribed (each to one of 10 rooms). User-space
memory only (VmRSS growth after 200 warm-up connections).
Usage: examples/chat/measure_rss.py [N [SERVER_FLAG...]]   (after building; N
defaults to 5000, run with `ulimit -n 20000`: client and server each hold N
descriptors; flags go to heartwheel-chat, e.g. --no-join-leave).
With the flag --auth (not passed on): authentication on (an HS256 secret);
every client connects with its own PyJWT token (sub "u<i>", exp, info
{"name": "User <i>"}), protocol version 2."""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))
from chat_support import TEXT, RawClient, Server  # noqa: E402

BIN = os.path.join(HERE, "..", "..", "build", "bin", "heartwheel-chat")


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) * 1024
    return 0


SECRET = "measure-rss-secret-of-at-least-32-bytes!"


def tokens(n):
    import jwt  # python3-jwt
    exp = int(time.time()) + 3600
    return [jwt.encode({"sub": "u%d" % i, "exp": exp, "info": {"name": "User %d" % i}},
                       SECRET, algorithm="HS256") for i in range(n)]


def open_client(port, i, token):
    if token is None:
        c = RawClient(port, "/ws?name=u%d" % i)
        c.recv_json()  # the hello
        return c
    c = RawClient(port, "/ws")
    c.send(TEXT, json.dumps({"id": 0, "op": "connect", "token": token}))
    reply = c.recv_json()
    assert reply.get("ok"), reply
    return c


def measure(n, subscribe, flags=(), auth=False):
    if auth:
        import tempfile
        secret = tempfile.NamedTemporaryFile("w", suffix=".secret", delete=False)
        secret.write(SECRET + "\n")
        secret.close()
        flags = ("--token-hmac-secret-file", secret.name, *flags)
    toks = tokens(n + 200) if auth else [None] * (n + 200)
    with Server(BIN, *flags) as s:
        warm = [open_client(s.port, n + i, toks[n + i]) for i in range(200)]
        time.sleep(0.5)
        before = rss(s.proc.pid)
        clients = []
        for i in range(n):
            c = open_client(s.port, i, toks[i])
            if subscribe:
                c.send(TEXT, json.dumps({"id": 1, "op": "subscribe", "channel": "room%d" % (i % 10)}))
            clients.append(c)
        if subscribe:
            for c in clients:
                while "id" not in c.recv_json():  # presence events come too
                    pass
        time.sleep(1.0)
        grown = rss(s.proc.pid) - before
        print("%d connections%s, %s: %.0f bytes of server RSS each"
              % (n, " with tokens" if auth else "",
                 "each subscribed to 1 of 10 rooms" if subscribe else "idle", grown / n))
        for c in clients + warm:
            c.close()


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    flags = [f for f in sys.argv[2:] if f != "--auth"]
    auth = "--auth" in sys.argv[2:]
    measure(n, False, flags, auth)
    measure(n, True, flags, auth)
