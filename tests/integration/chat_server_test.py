#!/usr/bin/env python3
"""The chat protocol (docs/chat-protocol.md) against build/bin/heartwheel-chat
with python3-websockets (Debian's, seen by /usr/bin/python3): every op and
every error, recovery after a reconnect, presence, history, two workers;
and with raw sockets: a dead subscriber closed on time, slow subscribers
closed or skipped and counted, drain.

Usage: chat_server_test.py PATH/TO/heartwheel-chat [test ...]
Every server binds port 0; every process started is stopped; a watchdog ends
a hung test. Time bounds have slack for a loaded 2-core machine.
"""
import asyncio
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time

from chat_support import RawClient, Server, TEXT, http_get, run_tests

try:
    import websockets
except ImportError:
    sys.exit("python3-websockets is missing: run tools/install-deps (and use /usr/bin/python3)")

SERVER_BINARY = None  # set by run_tests


class Chat:
    """One /ws connection speaking the protocol: requests with ids, pushes kept."""

    def __init__(self, ws, hello):
        self.ws = ws
        self.hello = hello["connect"]
        self.next_id = 1
        self.pushes = []

    @classmethod
    async def open(cls, server, name=None, **kw):
        path = "/ws" + ("?name=" + name if name else "")
        ws = await websockets.connect(server.url(path), ping_interval=None, **kw)
        return cls(ws, json.loads(await ws.recv()))

    async def request(self, op, **fields):
        rid = self.next_id
        self.next_id += 1
        await self.ws.send(json.dumps(dict(id=rid, op=op, **fields)))
        return await self.reply(rid)

    async def reply(self, rid):
        while True:
            msg = json.loads(await asyncio.wait_for(self.ws.recv(), 10))
            if msg.get("id") == rid:
                return msg
            self.pushes.append(msg)

    async def push(self, timeout=10):
        if self.pushes:
            return self.pushes.pop(0)
        return json.loads(await asyncio.wait_for(self.ws.recv(), timeout))

    async def publication(self, timeout=10):
        """The next push that is a publication (presence events are skipped)."""
        while True:
            msg = await self.push(timeout)
            if "offset" in msg:
                return msg

    async def close(self):
        await self.ws.close()


def run(coro):
    return asyncio.run(coro)


# ---------------------------------------------------------------- the tests

def test_page_and_routes():
    with Server(SERVER_BINARY) as s:
        status, headers, body = http_get(s.port, "/")
        assert status == 200
        assert headers["content-type"].startswith("text/html")
        for hook in (b'id="messages"', b'id="online"', b'id="status"', b'id="join"',
                     b'id="text"'):
            assert hook in body, hook
        assert b"<script src" not in body and b"<link" not in body  # nothing external
        assert http_get(s.port, "/nope")[0] == 404
        assert http_get(s.port, "/ws")[0] == 400  # not an upgrade request
        assert http_get(s.port, "/ws?name=%ZZ")[0] == 400  # a bad name is refused before 101


def test_centrifuge_js_is_served_only_with_its_flag():
    """/centrifuge.js, the Centrifugo SDK's browser build for the page's
    ?protocol=centrifugo mode: without --centrifuge-js a 404 that names the
    flag; with it the file as given, as JavaScript (nosniff, no-cache; HEAD
    too, POST 405). A file that is missing, empty or not the SDK's browser
    build is a usage error naming the flag (exit 2, nothing started)."""
    with Server(SERVER_BINARY) as s:
        status, _, body = http_get(s.port, "/centrifuge.js")
        assert status == 404 and b"--centrifuge-js" in body, (status, body)
    with tempfile.TemporaryDirectory() as d:
        sdk = os.path.join(d, "centrifuge.js")
        text = b'"use strict";(()=>{class E{}globalThis.Centrifuge=E;})();\n'
        with open(sdk, "wb") as f:
            f.write(text)
        with Server(SERVER_BINARY, "--centrifuge-js", sdk) as s:
            status, headers, body = http_get(s.port, "/centrifuge.js")
            assert status == 200 and body == text, (status, body)
            assert headers["content-type"] == "text/javascript; charset=utf-8", headers
            assert headers["x-content-type-options"] == "nosniff", headers
            assert headers["cache-control"] == "no-cache", headers
            c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
            c.request("HEAD", "/centrifuge.js")
            r = c.getresponse()
            assert r.status == 200 and r.read() == b"", r.status
            c.request("POST", "/centrifuge.js", body=b"x")
            r = c.getresponse()
            assert r.status == 405 and r.getheader("Allow") == "GET, HEAD", r.status
            r.read()
            c.close()
        empty, other = os.path.join(d, "empty.js"), os.path.join(d, "other.js")
        open(empty, "w").close()
        with open(other, "w") as f:
            f.write("console.log('not the SDK');\n")
        for path, says in ((os.path.join(d, "missing.js"), "cannot read"), (empty, "is empty"),
                           (other, "not npm centrifuge's browser build")):
            p = subprocess.run([SERVER_BINARY, "--listen", "127.0.0.1:0", "--centrifuge-js", path],
                               capture_output=True, text=True, timeout=20)
            assert p.returncode == 2, (path, p.returncode, p.stderr)
            assert "--centrifuge-js" in p.stderr and says in p.stderr, (path, p.stderr)


def test_page_script_is_valid_javascript():
    """The page's script and the library it imports compile as ES modules
    (node --check; the browser test runs them). No DOM here: only a syntax
    check."""
    with Server(SERVER_BINARY) as s:
        _, _, body = http_get(s.port, "/")
        _, _, library = http_get(s.port, "/heartwheel.js")
    script = body.decode().split('<script type="module">')[1].split("</script>")[0]
    assert 'from "/heartwheel.js"' in script, "the page does not import the library"
    with tempfile.TemporaryDirectory() as d:
        for name, text in (("page.mjs", script), ("heartwheel.mjs", library.decode())):
            path = os.path.join(d, name)
            with open(path, "w") as f:
                f.write(text)
            r = subprocess.run(["node", "--check", path], capture_output=True, text=True,
                               timeout=30)
            assert r.returncode == 0, (name, r.stderr)


def test_page_joins_chats_and_recovers():
    """The page's own script, run twice in Node with a minimal DOM
    (chat_page_test.js): join from URL parameters, who is online, messages
    shown on both sides, then a dropped connection: reconnect with backoff
    and the missed messages recovered in order."""
    with Server(SERVER_BINARY) as s:
        env = dict(os.environ, NODE_PATH="/usr/share/nodejs")
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "chat_page_test.js")
        r = subprocess.run(["node", script, str(s.port)], env=env, capture_output=True,
                           text=True, timeout=60)
        print(r.stdout, end="")
        assert r.returncode == 0, r.stdout + r.stderr
        # Both in the wait: which the page's script did last is its business.
        st = s.read_stats(lambda st: st["pubsub"]["hubs"]["recovered"] >= 1 and
                          st["chat"]["publications"] == 3)


def test_every_op():
    async def go(s):
        a = await Chat.open(s, "alice")
        b = await Chat.open(s, "b%C3%B6b")
        assert b.hello["name"] == "böb"
        assert a.hello["client"] != b.hello["client"]
        r = await a.request("subscribe", channel="room1")
        assert r["ok"] is True and r["offset"] == 0 and r["recovered"] is False
        assert r["publications"] == [] and r["count"] == 1 and len(r["epoch"]) == 8
        epoch = r["epoch"]
        r = await b.request("subscribe", channel="room1")
        assert r["count"] == 2 and r["epoch"] == epoch
        r = await b.request("publish", channel="room1", data={"text": "hi", "n": [1, 2]})
        assert r == {"id": 2, "ok": True, "offset": 1, "epoch": epoch}
        p = await a.publication()
        assert p == {"channel": "room1", "offset": 1, "epoch": epoch,
                     "data": {"text": "hi", "n": [1, 2]},
                     "info": {"client": b.hello["client"], "name": "böb"}}
        assert (await b.publication())["offset"] == 1  # the publisher is a subscriber too
        r = await a.request("presence", channel="room1")
        assert r["ok"] and r["count"] == 2
        assert sorted(c["name"] for c in r["clients"]) == ["alice", "böb"]
        for i in range(2, 8):
            await b.request("publish", channel="room1", data=i)
        r = await a.request("history", channel="room1", limit=3)
        assert [p["offset"] for p in r["publications"]] == [5, 6, 7]  # the latest, oldest first
        assert [p["data"] for p in r["publications"]] == [5, 6, 7]
        assert r["offset"] == 7 and r["epoch"] == epoch
        r = await a.request("history", channel="room1")
        assert [p["offset"] for p in r["publications"]] == list(range(1, 8))
        r = await a.request("unsubscribe", channel="room1")
        assert r == {"id": r["id"], "ok": True}
        a.pushes.clear()
        await b.request("publish", channel="room1", data="after")
        while (await b.publication())["data"] != "after":  # b's own 2..7 come first
            pass
        r = await a.request("presence", channel="room1")  # a's reply comes, no push before it
        assert r["count"] == 1 and not any("offset" in m for m in a.pushes)
        await a.close()
        await b.close()

    with Server(SERVER_BINARY) as s:
        run(go(s))
        # Both in the wait: the 8th publish comes after the 2nd history, and
        # a file written between them has the one and not the other.
        st = s.read_stats(lambda st: st["chat"]["requests"].get("history", 0) == 2 and
                          st["chat"]["requests"].get("publish", 0) == 8)
        assert st["pubsub"]["hubs"]["subscribes"] == 2


def test_every_error_keeps_the_connection():
    async def go(s):
        c = await Chat.open(s, "errors")

        async def error(raw, code, rid):
            await c.ws.send(raw if isinstance(raw, str) else json.dumps(raw))
            msg = {}
            while "id" not in msg:  # pushes (presence) may come first
                msg = json.loads(await asyncio.wait_for(c.ws.recv(), 10))
            assert msg.get("id") == rid and msg["error"]["code"] == code, (raw, msg)
            assert msg["error"]["message"]

        await error("{not json", "bad_json", None)
        await error("[1, 2]", "bad_request", None)
        await error({"id": 1}, "bad_request", 1)
        await error({"id": 2, "op": 7}, "bad_request", 2)
        await error({"id": 3, "op": "shout", "channel": "x"}, "unknown_op", 3)
        await error({"id": 4, "op": "subscribe"}, "bad_request", 4)
        await error({"id": "five", "op": "subscribe", "channel": 5}, "bad_request", "five")
        await error({"id": 6, "op": "subscribe", "channel": ""}, "empty_channel", 6)
        await error({"id": 7, "op": "subscribe", "channel": "a b"}, "bad_channel_character", 7)
        await error({"id": 8, "op": "publish", "channel": "q\"uote", "data": 1},
                    "bad_channel_character", 8)
        await error({"id": 9, "op": "subscribe", "channel": "x" * 256}, "channel_too_long", 9)
        await error({"id": 10, "op": "subscribe", "channel": "r", "since": 5}, "bad_request", 10)
        await error({"id": 11, "op": "subscribe", "channel": "r", "since": {"offset": -1,
                                                                            "epoch": "e"}},
                    "bad_request", 11)
        await error({"id": 12, "op": "history", "channel": "r", "limit": -3}, "bad_request", 12)
        await error({"id": 13, "op": "publish", "channel": "r"}, "bad_request", 13)
        await error({"id": 14, "op": "unsubscribe", "channel": "r"}, "not_subscribed", 14)
        assert (await c.request("subscribe", channel="r"))["ok"]
        await error({"id": 15, "op": "subscribe", "channel": "r"}, "already_subscribed", 15)
        await error({"id": 16, "op": "presence", "channel": ""}, "empty_channel", 16)
        for i in range(127):  # Centrifugo's channel_limit: 128 per connection
            assert (await c.request("subscribe", channel="many%d" % i))["ok"]
        await error({"id": 17, "op": "subscribe", "channel": "one-too-many"}, "channel_limit", 17)
        # Still open and serving after all of that.
        assert (await c.request("publish", channel="r", data="fine"))["ok"]
        await c.close()

    with Server(SERVER_BINARY) as s:
        run(go(s))
        st = s.read_stats(lambda st: st["chat"]["errors"].get("channel_limit", 0) == 1)
        assert st["chat"]["bad_json"] == 1
        assert st["chat"]["errors"]["bad_request"] == 9
        assert st["ws"]["protocol_errors"] == 0


def test_protocol_violation_gets_the_rfc_close_code():
    async def go(s):
        c = await Chat.open(s, "bin")
        await c.ws.send(b"\x00binary")  # the protocol is JSON in text frames
        try:
            await asyncio.wait_for(c.ws.recv(), 10)
            raise AssertionError("still open")
        except websockets.ConnectionClosed as e:
            assert e.rcvd.code == 1003, e
        c = await Chat.open(s, "big", max_size=None)
        await c.ws.send("x" * 70000)  # over --max-message-size
        try:
            await asyncio.wait_for(c.ws.recv(), 10)
            raise AssertionError("still open")
        except websockets.ConnectionClosed as e:
            assert e.rcvd.code == 1009, e

    with Server(SERVER_BINARY, "--max-message-size", "65536") as s:
        run(go(s))
        st = s.read_stats(lambda st: st["ws"]["close_codes_sent"].get("1009", 0) == 1)
        assert st["ws"]["close_codes_sent"]["1003"] == 1
        assert st["chat"]["binary_frames"] == 1


def test_recovery_after_reconnect():
    async def go(s):
        a = await Chat.open(s, "a")
        pub = await Chat.open(s, "pub")
        r = await a.request("subscribe", channel="news")
        await pub.request("publish", channel="news", data="one")
        last = await a.publication()
        assert last["offset"] == 1
        await a.close()  # a goes away; two publications happen meanwhile
        for text in ("two", "three"):
            await pub.request("publish", channel="news", data=text)
        a = await Chat.open(s, "a")
        r = await a.request("subscribe", channel="news",
                            since={"offset": last["offset"], "epoch": last["epoch"]})
        assert r["recovered"] is True
        assert [(p["offset"], p["data"]) for p in r["publications"]] == [(2, "two"), (3, "three")]
        assert r["offset"] == 3 and r["epoch"] == last["epoch"]
        await pub.request("publish", channel="news", data="four")
        p = await a.publication()
        assert (p["offset"], p["data"]) == (4, "four")  # live, after the recovered ones
        # A wrong epoch (the stream the client knew is gone): not recovered.
        b = await Chat.open(s, "b")
        r = await b.request("subscribe", channel="news", since={"offset": 1, "epoch": "0bad0bad"})
        assert r["recovered"] is False and r["publications"] == []
        assert r["offset"] == 4 and r["epoch"] == last["epoch"]
        # Further back than the history keeps (--history-size 3): not recovered either.
        c = await Chat.open(s, "c")
        r = await c.request("subscribe", channel="news", since={"offset": 0,
                                                                "epoch": last["epoch"]})
        assert r["recovered"] is False
        for x in (a, b, c, pub):
            await x.close()

    with Server(SERVER_BINARY, "--history-size", "3") as s:
        run(go(s))
        st = s.read_stats(lambda st: st["pubsub"]["hubs"]["not_recovered"] == 2)
        assert st["pubsub"]["hubs"]["recovered"] == 1


def test_recovery_survives_nothing_after_a_restart():
    """An in-memory history dies with the process: the epoch tells."""
    async def first(s):
        a = await Chat.open(s, "a")
        await a.request("subscribe", channel="r")
        r = await a.request("publish", channel="r", data=1)
        await a.close()
        return r

    async def second(s, pos):
        a = await Chat.open(s, "a")
        r = await a.request("subscribe", channel="r", since={"offset": pos["offset"],
                                                             "epoch": pos["epoch"]})
        await a.close()
        return r

    with Server(SERVER_BINARY) as s:
        pos = run(first(s))
    with Server(SERVER_BINARY) as s:
        r = run(second(s, pos))
    assert r["recovered"] is False and r["epoch"] != pos["epoch"]


def test_presence_join_and_leave():
    async def go(s):
        a = await Chat.open(s, "alice")
        await a.request("subscribe", channel="lobby")
        assert (await a.push()) == {"channel": "lobby", "count": 1,
                                    "join": {"client": a.hello["client"], "name": "alice"}}
        b = await Chat.open(s, "bob")
        await b.request("subscribe", channel="lobby")
        assert (await a.push()) == {"channel": "lobby", "count": 2,
                                    "join": {"client": b.hello["client"], "name": "bob"}}
        r = await a.request("presence", channel="lobby")
        assert r["count"] == 2 and len(r["clients"]) == 2
        await b.close()  # leaving by disconnecting
        assert (await a.push()) == {"channel": "lobby", "count": 1,
                                    "leave": {"client": b.hello["client"], "name": "bob"}}
        r = await a.request("presence", channel="lobby")
        assert r["count"] == 1 and r["clients"] == [{"client": a.hello["client"],
                                                    "name": "alice"}]
        c = await Chat.open(s)  # no name: a guest
        assert c.hello["name"] == "guest-" + c.hello["client"]
        await c.request("subscribe", channel="lobby")
        await c.request("unsubscribe", channel="lobby")  # leaving by unsubscribing
        assert (await a.push())["join"]["name"] == c.hello["name"]
        assert (await a.push())["leave"]["name"] == c.hello["name"]
        await a.close()
        await c.close()

    with Server(SERVER_BINARY) as s:
        run(go(s))


def test_no_join_leave_keeps_presence_replies_and_publisher_info():
    # Without join/leave events the server keeps no presence info per
    # connection and makes it when asked: the presence op and a
    # publication's "info" must still name every client, guests included.
    async def go(s):
        a = await Chat.open(s, "alice")
        g = await Chat.open(s)  # a guest
        for c in (a, g):
            r = await c.request("subscribe", channel="lobby")
            assert r["ok"] is True
        r = await a.request("presence", channel="lobby")
        assert r["count"] == 2
        assert sorted(r["clients"], key=lambda m: m["client"]) == sorted(
            [{"client": a.hello["client"], "name": "alice"},
             {"client": g.hello["client"], "name": "guest-" + g.hello["client"]}],
            key=lambda m: m["client"])
        await g.request("publish", channel="lobby", data={"text": "hi"})
        p = await a.push()
        assert p["data"] == {"text": "hi"}
        assert p["info"] == {"client": g.hello["client"], "name": "guest-" + g.hello["client"]}
        assert (await g.push())["data"] == {"text": "hi"}  # its own publication
        await a.request("publish", channel="lobby", data=1)
        assert (await a.push())["data"] == 1
        p = await g.push()
        assert p["data"] == 1
        assert p["info"] == {"client": a.hello["client"], "name": "alice"}
        assert a.pushes == [] and g.pushes == []  # no join or leave came
        await g.request("unsubscribe", channel="lobby")
        r = await a.request("presence", channel="lobby")
        assert r["clients"] == [{"client": a.hello["client"], "name": "alice"}]
        assert a.pushes == []
        await a.close()
        await g.close()

    with Server(SERVER_BINARY, "--no-join-leave") as s:
        run(go(s))


def test_two_workers_deliver_across_loops():
    async def go(s):
        by_worker = {}
        opened = []
        for _ in range(40):  # the kernel spreads connections over the listeners
            c = await Chat.open(s, "w")
            opened.append(c)
            by_worker.setdefault(c.hello["worker"], c)
            if len(by_worker) == 2:
                break
        assert sorted(by_worker) == [0, 1], "all 40 connections landed on one worker"
        sub, pub = by_worker[1], by_worker[0]
        await sub.request("subscribe", channel="x")
        r = await pub.request("publish", channel="x", data={"from": 0})
        p = await sub.publication()
        assert p["offset"] == r["offset"] and p["data"] == {"from": 0}
        await sub.request("unsubscribe", channel="x")
        await pub.request("subscribe", channel="x")
        await sub.request("publish", channel="x", data={"from": 1})
        assert (await pub.publication())["data"] == {"from": 1}
        for c in opened:
            await c.close()

    with Server(SERVER_BINARY, "--workers", "2") as s:
        run(go(s))
        st = s.read_stats(lambda st: st["pubsub"]["hubs"]["hubs"] == 2 and
                          st["pubsub"]["hubs"]["deliveries"] >= 2)
        assert st["net"]["loops"] == 2


def test_dead_subscriber_closed_within_ping_interval_plus_pong_timeout():
    interval, pong, tick = 0.4, 0.3, 0.01
    with Server(SERVER_BINARY, "--ping-interval", "400ms", "--pong-timeout", "300ms",
                "--tick", "10ms") as s:
        alive_result = {}

        async def alive():  # answers pings (the library does): never closed
            c = await Chat.open(s, "alive")
            await c.request("subscribe", channel="d")
            await asyncio.sleep(2.5)
            alive_result["open"] = c.ws.open
            await c.close()

        # Stamped before the connect too: the first ping may go out before
        # last_byte is stamped (this process can lag), so the lower bound is
        # checked from `opened`, which is before any ping.
        opened = time.monotonic()
        dead = RawClient(s.port, "/ws?name=dead")
        dead.recv_json()  # connect
        dead.send(TEXT, json.dumps({"id": 1, "op": "subscribe", "channel": "d"}))
        last_byte = time.monotonic()  # from now on it reads but never answers
        pings = 0
        while True:
            try:
                op, _ = dead.recv_message()
            except Exception:
                break
            if op == 0x9:
                pings += 1
        closed = time.monotonic()
        closed_after = closed - last_byte
        print("dead peer closed %.3f s after its last byte, %d ping(s)" % (closed_after, pings))
        run(alive())
        assert alive_result["open"], "a peer that answers pings was closed"
        assert pings >= 1
        # Never before pong_timeout, at most interval + pong_timeout + a tick
        # (plus scheduling slack on a loaded machine).
        assert closed - opened >= pong, (closed - opened, closed_after)
        assert closed_after <= interval + pong + tick + 0.4, closed_after
        # Both in the wait: the net counters come from runtime::Workers' copy,
        # published on a timer of its own, apart from the worker's ws copy.
        st = s.read_stats(lambda st: st["ws"]["pong_timeouts"] == 1 and
                          st["net"]["closed_by_reason"]["pong_timeout"] == 1)
        assert st["ws"]["pings_sent"] >= 2


SLOW_COUNT, SLOW_SIZE = 300, 20000


def slow_server(policy):
    return Server(SERVER_BINARY, "--slow-consumer", policy, "--max-queued-bytes", "262144",
                  "--max-message-size", "100000", "--history-size", "0")


async def feed_with_a_slow_subscriber(s):
    """A raw client with a tiny receive buffer subscribes and stops reading;
    a fast subscriber subscribes; a publisher sends SLOW_COUNT publications
    of SLOW_SIZE bytes (6 MB), one after the other (each waits for its
    reply, so a fast subscriber has at most a couple in its queue: the
    slow-consumer limit is about falling behind, and a burst of 6 MB at once
    would put any subscriber over a 256 KiB limit). The fast one must get
    every one of them. Returns the slow client and the
    fast one (still open: its leave event would be one more frame for the
    slow one)."""
    slow = RawClient(s.port, "/ws?name=slow", rcvbuf=4096)
    slow.recv_json()  # connect
    slow.send(TEXT, json.dumps({"id": 1, "op": "subscribe", "channel": "feed"}))
    assert slow.recv_json()["ok"]
    assert "join" in slow.recv_json()  # its own join
    # The fast one must not stop reading while we publish: the library's
    # default 32-message queue would make it a slow consumer too.
    fast = await Chat.open(s, "fast", max_size=None, max_queue=None)
    await fast.request("subscribe", channel="feed")
    pub = await Chat.open(s, "pub")
    pad = "d" * SLOW_SIZE
    for i in range(SLOW_COUNT):
        assert (await pub.request("publish", channel="feed", data={"i": i, "pad": pad}))["ok"]
    got = []
    while len(got) < SLOW_COUNT:
        got.append((await fast.publication(30))["data"]["i"])
    assert got == list(range(SLOW_COUNT)), "the fast subscriber lost publications"
    await pub.close()
    return slow, fast


def test_slow_subscriber_closed_with_slow_consumer():
    with slow_server("close") as s:
        async def go():
            slow, fast = await feed_with_a_slow_subscriber(s)
            # The net count in the wait too: runtime::Workers publishes it on a
            # timer of its own, apart from the worker's ws and chat copy.
            st = s.read_stats(lambda st: st["slow_consumer"]["closes"] == 1 and
                              st["net"]["closed_by_reason"]["slow_consumer"] == 1)
            assert st["slow_consumer"]["policy"] == "close"
            assert st["ws"]["closed_by_reason"]["slow_consumer"] == 1
            assert st["pubsub"]["hubs"]["slow_closes"] == 1
            assert st["net"]["bytes_dropped"] > 0  # what was queued for it: counted, not lost silently
            assert slow.expect_eof(timeout=20)  # it sees its connection end
            await fast.close()
        run(go())


def test_slow_subscriber_skipped_and_counted():
    with slow_server("skip") as s:
        async def go():
            slow, fast = await feed_with_a_slow_subscriber(s)
            # Every (subscriber, publication) pair is accounted for before we look.
            st = s.read_stats(lambda st: st["pubsub"]["hubs"]["deliveries"] +
                              st["pubsub"]["hubs"]["skips"] == 2 * SLOW_COUNT)
            skips = st["slow_consumer"]["skips"]
            assert skips > 0, "the slow subscriber was never skipped: publish more"
            assert st["pubsub"]["hubs"]["skips"] == skips
            assert st["net"]["closed_by_reason"]["slow_consumer"] == 0
            # The slow subscriber reads its backlog: exactly the publications
            # it was not skipped for, in order, then the reply to a request.
            slow.sock.settimeout(30)
            slow.send(TEXT, json.dumps({"id": 2, "op": "presence", "channel": "feed"}))
            offsets = []
            while True:
                msg = slow.recv_json()
                if msg.get("id") == 2:
                    break
                if "offset" in msg:
                    offsets.append(msg["offset"])
            assert msg["ok"] and msg["count"] == 2, msg  # still subscribed, still served
            assert len(offsets) == SLOW_COUNT - skips
            assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
            await fast.close()
        run(go())


def test_sigterm_drains_with_close_1001():
    with Server(SERVER_BINARY, "--drain-timeout", "5s") as s:
        async def go():
            c = await Chat.open(s, "d")
            await c.request("subscribe", channel="x")
            s.proc.send_signal(15)
            try:
                while True:
                    await asyncio.wait_for(c.ws.recv(), 10)
            except websockets.ConnectionClosed as e:
                return e.rcvd.code
        assert run(go()) == 1001
        assert s.proc.wait(timeout=20) == 0
        with open(s.stats) as f:
            st = json.load(f)
        assert st["net"]["closed_by_reason"]["drain"] == 1
        assert st["ws"]["close_codes_sent"]["1001"] == 1


if __name__ == "__main__":
    run_tests(globals(), sys.argv)
