#!/usr/bin/env python3
"""Issue 34's memory attacks on build/bin/heartwheel-chat, rerun against the
real program and now bounded: pings never read (a pong per ping used to
queue without bound), /echo never read, publishes to ever new channel names
(each made a channel with history), churning through channels until
--max-channels locked everyone out, and 1-byte publications to long names
whose history held ~16 times what --max-history-bytes counted.

Each test prints the figure docs/SECURITY.md quotes (extra RSS), measured
as the test runs. Usage: chat_memory_test.py PATH/TO/heartwheel-chat [test ...]
Every server binds port 0 and is stopped by PID; a watchdog ends a hung
test. Bounds have slack for a loaded 2-core machine.
"""
import asyncio
import json
import os
import sys
import tempfile

import websockets  # python3-websockets (tools/install-deps)

from chat_limits_test import recv_reply
from chat_support import RawClient, Server, TEXT, ping_flood, rss_kib, run_tests

SERVER_BINARY = None  # set by run_tests
WATCHDOG_SECONDS = 110


async def pipelined(ws, requests, window=30):
    """Sends `requests` (dicts with ids) keeping at most `window` unanswered
    (under --max-requests-in-flight); returns the replies in order."""
    replies = []
    for at in range(0, len(requests), window):
        part = requests[at:at + window]
        for r in part:
            await ws.send(json.dumps(r))
        for r in part:
            replies.append(await recv_reply(ws, r["id"]))
    return replies


def test_pings_never_read_queue_one_pong_per_connection():
    """The attack: 125-byte pings, never reading the pongs. It grew the
    server 11 -> 76 MiB in 0.5 s per connection (one pong queued per ping,
    up to the 64 MiB hard cap), also before any token was sent. Now a ping
    that finds the queue busy is answered by the pong of the latest one,
    sent when the queue empties: 2 x 100,000 pings hold next to nothing."""
    fd, secret = tempfile.mkstemp()
    os.write(fd, b"an-hmac-secret-of-at-least-32-bytes-for-HS256!\n")
    os.close(fd)
    try:
        with Server(SERVER_BINARY, "--token-hmac-secret-file", secret,
                    "--connect-timeout", "60s") as s:
            extra, st, socks = ping_flood(s, "/ws", clients=2, pings=100000)
            print("pings never read, 2 x 100,000 (token key, before any token): extra RSS "
                  "%.1f MiB; pongs folded %d" % (extra, st["ws"].get("pongs_folded", 0)))
            # Before: 2 x 12.7 MB of pongs queued (+25 MiB).
            assert extra < 8, extra
            assert st["ws"]["pongs_folded"] >= 100000, st["ws"]  # the rest: socket buffers
            # Nobody was closed for it: the pongs simply wait as one.
            assert st["ws"]["slow_consumer_closes"] == 0, st["ws"]
            for c in socks:
                c.close()
    finally:
        os.unlink(secret)


def test_echo_never_read_is_closed_at_max_queued_bytes():
    """The attack: /echo with 60 KB messages, never reading the echoes: 2
    clients +126 MiB (each queue up to the 64 MiB hard cap). Now an echo
    is a message under --max-queued-bytes (1 MiB): past it the connection
    is closed as a slow consumer."""
    with Server(SERVER_BINARY) as s:
        before = rss_kib(s.proc.pid)
        socks = [RawClient(s.port, "/echo", rcvbuf=4096) for _ in range(2)]
        message = RawClient.frame(TEXT, b"e" * 60000, mask_key=b"\x01\x02\x03\x04")
        for c in socks:
            try:
                for _ in range(1000):  # 60 MB each, if the server took it
                    c.send_raw(message)
            except OSError:
                pass  # closed as a slow consumer: the point
        st = s.read_stats(lambda st: st["ws"]["slow_consumer_closes"] >= 2, timeout=30)
        extra = (rss_kib(s.proc.pid) - before) / 1024.0
        print("/echo never read, 2 clients x 60 KB messages: extra RSS %.1f MiB" % extra)
        assert extra < 16, extra
        assert st["ws"]["closed_by_reason"]["slow_consumer"] >= 2, st["ws"]
        for c in socks:
            c.close()


def test_publishes_to_fresh_names_keep_nothing():
    """The attack: 1-byte publishes to ever new 255-byte names: each made a
    channel with history (answered offset 1) until --max-channels, then
    nobody could subscribe. As docs/chat-protocol.md says, a publication to
    a channel with neither subscribers nor history reaches no one, keeps
    nothing and is answered offset 0 (unless --history-before-subscribers
    names its namespace)."""
    async def go(s):
        async with websockets.connect(s.url("/ws?name=spray"), ping_interval=None) as ws:
            await ws.recv()
            reqs = [{"id": i + 1, "op": "publish", "channel": ("%d-" % i).ljust(255, "n"),
                     "data": "x"} for i in range(3000)]
            replies = await pipelined(ws, reqs)
            assert all(r.get("ok") and r["offset"] == 0 and r["epoch"] == "" for r in replies), \
                [r for r in replies if not (r.get("ok") and r["offset"] == 0)][:3]
        async with websockets.connect(s.url("/ws?name=other"), ping_interval=None) as ws:
            await ws.recv()
            await ws.send(json.dumps({"id": 1, "op": "subscribe", "channel": "room"}))
            assert (await recv_reply(ws, 1))["ok"]

    with Server(SERVER_BINARY, "--max-channels", "100",
                "--rate-limit", "publish=100000/s") as s:
        before = rss_kib(s.proc.pid)
        asyncio.run(go(s))
        st = s.read_stats(lambda st: st["pubsub"]["bus"]["unheard"] >= 3000)
        bus = st["pubsub"]["bus"]
        print("3,000 publishes to fresh 255-byte names: extra RSS %.1f MiB, channels %d"
              % ((rss_kib(s.proc.pid) - before) / 1024.0, bus["channels"]))
        assert bus["unheard"] == 3000 and bus["channels_refused"] == 0, bus
        assert bus["history_publications"] == 0 and bus["history_bytes"] == 0, bus

    async def news(s):
        async with websockets.connect(s.url("/ws?name=editor"), ping_interval=None) as ws:
            await ws.recv()
            replies = await pipelined(ws, [{"id": 1, "op": "publish", "channel": "news:today",
                                            "data": 1},
                                           {"id": 2, "op": "publish", "channel": "chat:x",
                                            "data": 1},
                                           {"id": 3, "op": "history", "channel": "news:today"}])
            return [r.get("offset") for r in replies], len(replies[2]["publications"])

    # A namespace whose history is read before anyone subscribes keeps it.
    with Server(SERVER_BINARY, "--history-before-subscribers", "news") as s:
        offsets, kept = asyncio.run(news(s))
        assert offsets[:2] == [1, 0] and kept == 1, (offsets, kept)


def test_churning_channels_cannot_lock_others_out():
    """The attack: make channel after channel (subscribe, publish, leave)
    until --max-channels is reached, so that another user's subscribe gets
    limit_exceeded. Now a channel kept only by its history (an orphan) is
    freed, oldest first, to make room: 4 connections churning through
    1,200 names under --max-channels 300 lock nobody out."""
    async def churn(s, n, start):
        async with websockets.connect(s.url("/ws?name=churn%d" % n), ping_interval=None) as ws:
            await ws.recv()
            reqs = []
            for i in range(start, start + 300):
                name = ("%d-" % i).ljust(255, "c")
                reqs += [{"id": 3 * i + 1, "op": "subscribe", "channel": name},
                         {"id": 3 * i + 2, "op": "publish", "channel": name, "data": "x"},
                         {"id": 3 * i + 3, "op": "unsubscribe", "channel": name}]
            replies = await pipelined(ws, reqs)
            bad = [r for r in replies if not r.get("ok")]
            assert not bad, bad[:3]

    async def go(s):
        await asyncio.gather(*(churn(s, n, n * 300) for n in range(4)))
        async with websockets.connect(s.url("/ws?name=late"), ping_interval=None) as ws:
            await ws.recv()
            await ws.send(json.dumps({"id": 1, "op": "subscribe", "channel": "mine"}))
            r = await recv_reply(ws, 1)
            assert r.get("ok"), r

    with Server(SERVER_BINARY, "--max-channels", "300", "--rate-limit", "publish=100000/s",
                "--rate-limit", "subscribe=100000/s") as s:
        asyncio.run(go(s))
        st = s.read_stats(lambda st: st["pubsub"]["bus"]["channels_evicted"] >= 900)
        bus = st["pubsub"]["bus"]
        assert bus["channels"] <= 300 and bus["channels_refused"] == 0, bus


def test_history_budget_counts_what_the_history_holds():
    """The attack: 1-byte publications to 255-byte names under
    --max-history-bytes 2000000: RSS grew 31.8 MiB (each kept publication
    held ~600 B; 36 were counted). Now the budget counts the object, the
    copy of the channel name and the strings as malloc holds them: 40,000
    such publications keep the history at 2 MB."""
    async def go(s):
        async with websockets.connect(s.url("/ws?name=hist"), ping_interval=None) as ws:
            await ws.recv()
            # Each channel made, given one publication and left: an orphan
            # that keeps what is published to it (and pushes nothing).
            names = [("%d-" % i).ljust(255, "h") for i in range(100)]
            setup = []
            for i, n in enumerate(names):
                setup += [{"id": 3 * i + 1, "op": "subscribe", "channel": n},
                          {"id": 3 * i + 2, "op": "publish", "channel": n, "data": 1},
                          {"id": 3 * i + 3, "op": "unsubscribe", "channel": n}]
            assert all(r.get("ok") for r in await pipelined(ws, setup))
            reqs = [{"id": 1000 + i, "op": "publish", "channel": names[i % 100], "data": 1}
                    for i in range(40000)]
            replies = await pipelined(ws, reqs)
            assert all(r.get("ok") for r in replies)

    with Server(SERVER_BINARY, "--max-history-bytes", "2000000", "--history-size", "1000",
                "--rate-limit", "publish=100000/s", "--no-join-leave") as s:
        before = rss_kib(s.proc.pid)
        asyncio.run(go(s))
        st = s.read_stats(lambda st: st["pubsub"]["bus"]["publications"] >= 40100)
        extra = (rss_kib(s.proc.pid) - before) / 1024.0
        bus = st["pubsub"]["bus"]
        per = bus["history_bytes"] / max(1, bus["history_publications"])
        print("40,000 1-byte publications to 255-byte names, --max-history-bytes 2000000: "
              "extra RSS %.1f MiB; history %d publications, %d bytes counted (%.0f each)"
              % (extra, bus["history_publications"], bus["history_bytes"], per))
        assert bus["history_bytes"] <= 2000000 and bus["history_evictions"] > 0, bus
        assert per >= 450, per  # the name alone is 272 bytes of heap
        # Before: 40,000 x ~600 B kept (+24 MB), none evicted.
        assert extra < 12, extra


if __name__ == "__main__":
    run_tests(globals(), sys.argv)
