#!/usr/bin/env python3
"""Issue 23's attacks on build/bin/heartwheel-chat, rerun against the real
program and now refused or bounded: a request nested 80,000 deep gets an
error reply and the process lives (and so does a publication of data nested
just within the limit, dumped and pushed back).

Usage: chat_limits_test.py PATH/TO/heartwheel-chat [test ...]
Every server binds port 0 and is stopped by PID; a watchdog ends a hung
test. Bounds have slack for a loaded 2-core machine.
"""
import asyncio
import json
import os
import sys

from chat_support import Server, run_tests

try:
    import websockets
except ImportError:
    sys.exit("python3-websockets is missing: run tools/install-deps (and use /usr/bin/python3)")

SERVER_BINARY = None  # set by run_tests


async def recv_reply(ws, rid, timeout=10):
    """The reply with id `rid` (pushes before it are skipped). Parsed with a
    depth check of our own: Python's json recurses too."""
    while True:
        msg = json.loads(await asyncio.wait_for(ws.recv(), timeout))
        if "id" in msg and msg["id"] == rid:
            return msg


def nested(depth, leaf="x"):
    """`depth` nested arrays around `leaf`, as text (no recursion)."""
    return "[" * depth + json.dumps(leaf) + "]" * depth


def test_80000_deep_message_gets_an_error_and_the_process_lives():
    async def go(s):
        async with websockets.connect(s.url("/ws?name=deep"), ping_interval=None,
                                      max_size=None) as ws:
            await ws.recv()  # the connect push
            # The attack: one request nested 80,000 deep (160 KB, under the 1 MiB
            # message limit). It crashed the server before (the serializer recursed).
            await ws.send('{"id":1,"op":"publish","channel":"c","data":' + nested(80000) + "}")
            msg = await recv_reply(ws, None)
            assert msg["error"]["code"] == "too_deep", msg
            # An "id" nested deep (it used to be copied into the reply).
            await ws.send('{"op":"history","channel":"c","id":' + nested(80000) + "}")
            msg = await recv_reply(ws, None)
            assert msg["error"]["code"] == "too_deep", msg
            # 64 deep in all (the request object is one level): accepted, stored
            # and pushed back; 65: refused.
            await ws.send(json.dumps({"id": 2, "op": "subscribe", "channel": "c"}))
            assert (await recv_reply(ws, 2))["ok"]
            await ws.send('{"id":3,"op":"publish","channel":"c","data":' + nested(63) + "}")
            assert (await recv_reply(ws, 3))["ok"]
            await ws.send('{"id":4,"op":"publish","channel":"c","data":' + nested(64) + "}")
            msg = await recv_reply(ws, None)
            assert msg["error"]["code"] == "too_deep", msg
            # Still serving.
            await ws.send(json.dumps({"id": 5, "op": "history", "channel": "c"}))
            hist = await recv_reply(ws, 5)
            assert len(hist["publications"]) == 1, hist
            data = hist["publications"][0]["data"]
            for _ in range(63):
                data = data[0]
            assert data == "x"

    with Server(SERVER_BINARY, "--max-message-size", "1048576") as s:
        asyncio.run(go(s))
        assert s.proc.poll() is None, "the server died"
        st = s.read_stats(lambda st: st["chat"]["errors"].get("too_deep", 0) == 3)
        assert st["chat"]["errors"]["too_deep"] == 3, st["chat"]


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


async def fill_history(s, channel, count, size):
    async with websockets.connect(s.url("/ws?name=filler"), ping_interval=None) as ws:
        await ws.recv()
        blob = "x" * size
        for i in range(count):
            await ws.send(json.dumps({"id": i + 1, "op": "publish", "channel": channel,
                                      "data": blob}))
            assert (await recv_reply(ws, i + 1))["ok"]


def test_never_read_clients_asking_for_history_keep_rss_bounded():
    """The attack: history of 100 x 60 KB (6 MB per reply); 5 clients that never
    read send 9 history requests each. It made the server queue 239 MiB.
    Now a reply holds at most --max-reply-bytes (1 MiB: the newest that fit,
    "truncated":true) and replies count against --max-queued-bytes (1 MiB)
    like publications: the server's extra RSS stays under 64 MiB."""
    from chat_support import RawClient, TEXT
    with Server(SERVER_BINARY) as s:
        asyncio.run(fill_history(s, "big", 100, 60000))

        async def read_one():
            async with websockets.connect(s.url("/ws?name=reader"), ping_interval=None,
                                          max_size=None) as ws:
                await ws.recv()
                await ws.send(json.dumps({"id": 1, "op": "history", "channel": "big"}))
                return await recv_reply(ws, 1)
        hist = asyncio.run(read_one())
        assert hist["truncated"] is True and hist["limit"] == len(hist["publications"]), \
            {k: v for k, v in hist.items() if k != "publications"}
        assert 10 <= hist["limit"] < 100, hist["limit"]
        assert len(json.dumps(hist)) <= 1 << 20
        # The newest ones, in order.
        offsets = [p["offset"] for p in hist["publications"]]
        assert offsets == list(range(101 - len(offsets), 101)), offsets[:3]

        before = rss_kib(s.proc.pid)
        clients = [RawClient(s.port, "/ws?name=sink%d" % i, rcvbuf=4096) for i in range(5)]
        for c in clients:
            for i in range(9):
                try:
                    c.send(TEXT, json.dumps({"id": i, "op": "history", "channel": "big"}))
                except OSError:
                    break  # closed as a slow consumer: that is the point
        st = s.read_stats(lambda st: sum(st["chat"]["limits"].values()) >= 5, timeout=20)
        peak = rss_kib(s.proc.pid)
        extra_mib = (peak - before) / 1024.0
        print("extra RSS under the never-read attack: %.1f MiB (before %d KiB, after %d KiB); "
              "limits %s" % (extra_mib, before, peak, st["chat"]["limits"]))
        assert extra_mib < 64, extra_mib
        assert st["chat"]["limits"].get("reply_slow_consumer", 0) >= 5, st["chat"]["limits"]
        for c in clients:
            c.sock.close()
        # Still serving.
        assert asyncio.run(read_one())["truncated"] is True
        assert s.proc.poll() is None


def test_max_channels_and_max_history_bytes_bound_what_publishes_hold():
    """The attack: publications of 60 KB to ever new channels, each kept with
    history (it added 117 MiB in 3.7 s). Now the channels are capped
    (--max-channels: limit_exceeded, counted) and so is the history memory
    (--max-history-bytes: the oldest publications of the largest channels
    go first, and a recovery that needed them says recovered: false)."""
    async def go(s):
        async with websockets.connect(s.url("/ws?name=many"), ping_interval=None) as ws:
            await ws.recv()
            rid = 0
            codes = []
            for i in range(60):
                rid += 1
                await ws.send(json.dumps({"id": rid, "op": "publish", "channel": "u%d" % i,
                                          "data": "x" * 40000}))
                r = await recv_reply(ws, rid)
                codes.append(r["error"]["code"] if "error" in r else "ok")
            assert codes[:50] == ["ok"] * 50, codes
            assert codes[50:] == ["limit_exceeded"] * 10, codes
            rid += 1
            await ws.send(json.dumps({"id": rid, "op": "subscribe", "channel": "new-one"}))
            assert (await recv_reply(ws, rid))["error"]["code"] == "limit_exceeded"
            # An existing channel still works, and is the largest now: its oldest
            # publications go first once the history budget (2.5 MB) is passed.
            for k in range(20):
                rid += 1
                await ws.send(json.dumps({"id": rid, "op": "publish", "channel": "u0",
                                          "data": "y" * 40000}))
                assert (await recv_reply(ws, rid))["ok"]
            rid += 1
            await ws.send(json.dumps({"id": rid, "op": "history", "channel": "u0"}))
            hist = await recv_reply(ws, rid)
            rid += 1
            await ws.send(json.dumps({"id": rid, "op": "subscribe", "channel": "u0",
                                      "since": {"offset": 0, "epoch": hist["epoch"]}}))
            sub = await recv_reply(ws, rid)
            assert sub["ok"] and sub["recovered"] is False, sub
            return hist

    with Server(SERVER_BINARY, "--max-channels", "50", "--max-history-bytes", "2500000") as s:
        hist = asyncio.run(go(s))
        st = s.read_stats(lambda st: st["pubsub"]["bus"]["channels_refused"] >= 11)
        bus = st["pubsub"]["bus"]
        assert bus["channels"] <= 50, bus
        assert bus["history_bytes"] <= 2500000, bus
        assert bus["history_evictions"] > 0, bus
        assert st["chat"]["errors"]["limit_exceeded"] == 11, st["chat"]["errors"]
        # u0 lost its oldest; the other channels kept theirs (one each).
        assert hist["publications"][0]["offset"] > 1, [p["offset"] for p in hist["publications"]]


def test_page_headers_forbid_framing_sniffing_and_foreign_loads():
    from chat_support import http_get
    with Server(SERVER_BINARY) as s:
        status, headers, _ = http_get(s.port, "/")
    assert status == 200
    csp = headers["content-security-policy"]
    for part in ("default-src 'none'", "frame-ancestors 'none'", "connect-src 'self'"):
        assert part in csp, csp
    assert headers["x-content-type-options"] == "nosniff", headers
    assert headers["x-frame-options"] == "DENY", headers
    # Scripts: this origin's (the library) and the inline module by its hash.
    script_src = [d for d in csp.split(";") if d.strip().startswith("script-src")]
    assert len(script_src) == 1 and "'self'" in script_src[0], csp
    assert "'unsafe-inline'" not in script_src[0] and "'sha256-" in script_src[0], csp


def test_client_library_is_served_from_clients_js_as_a_module():
    """GET /heartwheel.js is clients/js/heartwheel.js, byte for byte (one
    source of truth, embedded at build time), as JavaScript a browser will
    run as a module under nosniff."""
    from chat_support import http_get
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients",
                          "js", "heartwheel.js")
    with open(source, "rb") as f:
        expected = f.read()
    with Server(SERVER_BINARY) as s:
        status, headers, body = http_get(s.port, "/heartwheel.js")
    assert status == 200, status
    assert headers["content-type"] == "text/javascript; charset=utf-8", headers
    assert headers["x-content-type-options"] == "nosniff", headers
    assert body == expected, "the served library differs from clients/js/heartwheel.js"


if __name__ == "__main__":
    run_tests(globals(), sys.argv)
