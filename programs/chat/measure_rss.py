#!/usr/bin/env python3
"""Server RSS per WebSocket connection of heartwheel-chat: N connections
through /ws, idle, then subscribed (each to one of 10 rooms). User-space
memory only (VmRSS growth after 200 warm-up connections; in parentheses the
growth of RssAnon, the process's anonymous memory: the heap without the
binary's pages).
Usage: programs/chat/measure_rss.py [N [SERVER_FLAG...]]   (after building; N
defaults to 5000, run with `ulimit -n 20000`: client and server each hold N
descriptors; flags go to heartwheel-chat, e.g. --no-join-leave). The server
is build/bin/heartwheel-chat, or $HEARTWHEEL_CHAT.
With the flag --auth (not passed on): the same run measures twice, first
without tokens, then with authentication on (the server given an HS256
secret with --token-hmac-secret-file; every client connects with its own
PyJWT token: sub "u<i>", exp, info {"name": "User <i>"}, protocol version
2), and ends with two lines putting the two side by side:
  per connection, without / with a token (RSS): idle A / B B (+D), subscribed ...
  per connection, without / with a token (anonymous): ...
With the flag --deflate (not passed on): every client offers
permessage-deflate as a browser does ("permessage-deflate;
client_max_window_bits") and sends its subscribe compressed; once all are
subscribed, one publication of about 1 KB of JSON goes to each room (so
every connection receives one compressed frame) and a third line gives the
RSS per connection after that: what compressed traffic leaves behind
(nothing without context takeover; a connection's zlib streams with
--ws-compression-context, a server flag, passed on). The clients answer no
pings and that phase reads every connection, so with --deflate the server
runs with --ping-interval 0 (give it to the run without --deflate too, to
compare like with like).

With --protocol centrifugo the clients speak Centrifugo's client protocol
(/connection/websocket: a connect, then {"subscribe":{"channel":...}});
with --protocol both the same run measures ours, then Centrifugo's, and ends
with two lines putting them side by side:
  per connection, ours / Centrifugo's (RSS): idle A / B B (+D), subscribed ...
(docs/centrifugo.md; without tokens: --auth and --protocol do not combine)."""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))
from chat_support import TEXT, RawClient, Server, deflated  # noqa: E402

# HEARTWHEEL_CHAT=PATH measures another build (e.g. before and after a change, alternating).
BIN = os.environ.get("HEARTWHEEL_CHAT") or os.path.join(HERE, "..", "..", "build", "bin",
                                                        "heartwheel-chat")


def rss(pid):
    """(VmRSS, RssAnon) in bytes. RssAnon leaves out the binary's pages
    first run after the baseline (a Debug binary's subscribe path alone
    moves VmRSS by MiBs)."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(("VmRSS", "RssAnon")):
                out[line.split(":")[0]] = int(line.split()[1]) * 1024
    return out.get("VmRSS", 0), out.get("RssAnon", 0)


SECRET = "measure-rss-secret-of-at-least-32-bytes!"


def tokens(n):
    import jwt  # python3-jwt
    exp = int(time.time()) + 3600
    return [jwt.encode({"sub": "u%d" % i, "exp": exp, "info": {"name": "User %d" % i}},
                       SECRET, algorithm="HS256") for i in range(n)]


DEFLATE_OFFER = "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"


def open_centrifugo_client(port):
    c = RawClient(port, "/connection/websocket")
    c.send(TEXT, json.dumps({"id": 1, "connect": {}}))
    reply = c.recv_json()
    assert "connect" in reply, reply
    return c


def open_client(port, i, token, deflate=False, centrifugo=False):
    if centrifugo:
        return open_centrifugo_client(port)
    if deflate:
        c = RawClient(port, handshake=False)
        assert c.handshake("/ws?name=u%d" % i, DEFLATE_OFFER) == 101
        assert c.headers.get("sec-websocket-extensions", "").startswith("permessage-deflate")
        c.recv_json()  # the hello (small: never compressed)
        return c
    if token is None:
        c = RawClient(port, "/ws?name=u%d" % i)
        c.recv_json()  # the hello
        return c
    c = RawClient(port, "/ws")
    c.send(TEXT, json.dumps({"id": 0, "op": "connect", "token": token}))
    reply = c.recv_json()
    assert reply.get("ok"), reply
    return c


def measure(n, subscribe, flags=(), auth=False, deflate=False, centrifugo=False):
    """Prints and returns the server's RSS growth per connection."""
    if deflate:
        flags = (*flags, "--ping-interval", "0")
    if not auth:
        return measure_with(n, subscribe, flags, [None] * (n + 200), deflate, centrifugo)
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".secret") as secret:
        secret.write(SECRET + "\n")
        secret.flush()
        return measure_with(n, subscribe, ("--token-hmac-secret-file", secret.name, *flags),
                            tokens(n + 200))


def measure_with(n, subscribe, flags, toks, deflate=False, centrifugo=False):
    auth = toks[0] is not None
    with Server(BIN, *flags) as s:
        warm = [open_client(s.port, n + i, toks[n + i], deflate, centrifugo) for i in range(200)]
        time.sleep(0.5)
        before = rss(s.proc.pid)
        clients = []
        for i in range(n):
            c = open_client(s.port, i, toks[i], deflate, centrifugo)
            if subscribe and centrifugo:
                c.send(TEXT, json.dumps({"id": 2, "subscribe": {"channel": "room%d" % (i % 10)}}))
            elif subscribe:
                req = json.dumps({"id": 1, "op": "subscribe", "channel": "room%d" % (i % 10)})
                if deflate:
                    c.send(TEXT, deflated(req.encode()), rsv=4)
                else:
                    c.send(TEXT, req)
            clients.append(c)
        if subscribe:
            for c in clients:
                while "id" not in c.recv_json():  # presence events come too
                    pass
        time.sleep(1.0)
        after = rss(s.proc.pid)
        grown, anon = after[0] - before[0], after[1] - before[1]
        print("%d connections%s%s, %s: %.0f bytes of server RSS each (anonymous: %.0f)"
              % (n, " with tokens" if auth else "",
                 " (Centrifugo's protocol)" if centrifugo else "",
                 "each subscribed to 1 of 10 rooms" if subscribe else "idle", grown / n,
                 anon / n),
              flush=True)
        if deflate and subscribe:
            publish_to_every_room(s.port, clients)
            time.sleep(1.0)
            later = rss(s.proc.pid)
            print("%d connections, each after one compressed publication: %.0f bytes of server "
                  "RSS each (anonymous: %.0f)" % (n, (later[0] - before[0]) / n,
                                                  (later[1] - before[1]) / n), flush=True)
        for c in clients + warm:
            c.close()
    return grown / n, anon / n


def publish_to_every_room(port, clients):
    """One ~1 KB JSON publication to each of the 10 rooms; every client
    reads frames until its compressed one (RSV1) came."""
    pub = RawClient(port, "/ws?name=publisher")
    pub.recv_json()
    for room in range(10):
        data = {"lines": [{"sku": "A%d" % (1000 + (room * 7 + k) % 97), "qty": k % 5 + 1,
                           "price": 100 + k * 37 % 900} for k in range(25)]}
        pub.send(TEXT, json.dumps({"id": room, "op": "publish", "channel": "room%d" % room,
                                   "data": data}))
    for c in clients:
        while not c.recv_raw_frame()[0] & 0x40:  # presence events, plain, may come first
            pass
    pub.close()


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    args = sys.argv[2:]
    protocol = "chat"
    if "--protocol" in args:
        at = args.index("--protocol")
        protocol = args[at + 1] if at + 1 < len(args) else ""
        del args[at:at + 2]
        if protocol not in ("chat", "centrifugo", "both"):
            sys.exit("measure_rss.py: --protocol is chat, centrifugo or both")
    flags = [f for f in args if f not in ("--auth", "--deflate")]
    if "--deflate" in args:
        if protocol != "chat":
            sys.exit("measure_rss.py: --deflate measures our protocol only")
        measure(n, False, flags, deflate=True)
        measure(n, True, flags, deflate=True)
    elif protocol != "chat":
        if "--auth" in args:
            sys.exit("measure_rss.py: --auth measures our protocol only")
        ours = None
        if protocol == "both":
            ours = (measure(n, False, flags), measure(n, True, flags))
        theirs = (measure(n, False, flags, centrifugo=True),
                  measure(n, True, flags, centrifugo=True))
        for k, what in enumerate(("RSS", "anonymous")):
            if ours:
                print("per connection, ours / Centrifugo's (%s): idle %.0f / %.0f B (%+.0f), "
                      "subscribed %.0f / %.0f B (%+.0f)"
                      % (what, ours[0][k], theirs[0][k], theirs[0][k] - ours[0][k],
                         ours[1][k], theirs[1][k], theirs[1][k] - ours[1][k]))
    elif "--auth" not in args:
        measure(n, False, flags)
        measure(n, True, flags)
    else:
        plain = (measure(n, False, flags), measure(n, True, flags))
        token = (measure(n, False, flags, True), measure(n, True, flags, True))
        for k, what in enumerate(("RSS", "anonymous")):
            print("per connection, without / with a token (%s): idle %.0f / %.0f B (%+.0f), "
                  "subscribed %.0f / %.0f B (%+.0f)"
                  % (what, plain[0][k], token[0][k], token[0][k] - plain[0][k],
                     plain[1][k], token[1][k], token[1][k] - plain[1][k]))
