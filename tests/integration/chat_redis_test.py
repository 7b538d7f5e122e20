#!/usr/bin/env python3
"""Two heartwheel-chat nodes on one redis-server (--redis): a publication made
on node A reaches a WebSocket subscriber on node B; a client that reconnects
to the other node recovers what it missed; a killed node's clients leave the
presence count within the lease; Redis killed and restarted mid-run: the
nodes reconnect, publishes meanwhile are refused with "unavailable" (or wait
and succeed if Redis is back in time), deliveries resume.

Usage: chat_redis_test.py PATH/TO/heartwheel-chat [test ...]
The test starts redis-server itself on a free loopback port and stops it by
PID; every chat node binds port 0 and is stopped by PID.
"""
import asyncio
import os
import sys
import time

from chat_support import Server, run_tests
from chat_server_test import Chat

SERVER_BINARY = None  # set by run_tests


# redis-server on a free loopback port, no persistence, stopped by PID; its
# port held while it is down (tools/pylib/redis_server.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                                "pylib"))
from redis_server import RedisServer as Redis  # noqa: E402


def node(redis, *flags):
    return Server(SERVER_BINARY, "--redis", redis.address(), "--pubsub-prefix", "t:", *flags)


def run(coro):
    return asyncio.run(coro)


def test_publish_on_one_node_reaches_a_subscriber_on_another():
    with Redis() as r, node(r) as a, node(r, "--workers", "2") as b:
        async def go():
            sub = await Chat.open(b, "bob")
            rep = await sub.request("subscribe", channel="room")
            assert rep["ok"] and rep["offset"] == 0 and rep["count"] == 1, rep
            pub = await Chat.open(a, "alice")
            for i in range(1, 21):
                rep = await pub.request("publish", channel="room", data={"n": i})
                assert rep["ok"] and rep["offset"] == i, rep
            for i in range(1, 21):
                msg = await sub.publication()
                assert msg["offset"] == i and msg["data"] == {"n": i}, msg
                assert msg["info"]["name"] == "alice"
            rep = await pub.request("presence", channel="room")
            assert rep["count"] == 1, rep  # bob, on the other node
            rep = await pub.request("history", channel="room", limit=3)
            assert [p["offset"] for p in rep["publications"]] == [18, 19, 20], rep
            await sub.close()
            await pub.close()
        run(go())
        st = b.read_stats(lambda st: st["pubsub"]["redis"]["posted"] >= 20)
        assert st["pubsub"]["redis"]["lost"] == 0


def test_reconnect_to_the_other_node_recovers_what_was_missed():
    with Redis() as r, node(r) as a, node(r) as b:
        async def go():
            pub = await Chat.open(a, "p")
            c = await Chat.open(a, "c")
            await c.request("subscribe", channel="news")
            for i in range(5):
                await pub.request("publish", channel="news", data=i)
            seen = [await c.publication() for _ in range(5)]
            last = seen[-1]
            await c.close()  # gone; publications go on
            for i in range(5, 12):
                await pub.request("publish", channel="news", data=i)
            c2 = await Chat.open(b, "c")  # comes back on node B
            rep = await c2.request("subscribe", channel="news",
                                   since={"offset": last["offset"], "epoch": last["epoch"]})
            assert rep["ok"] and rep["recovered"] is True, rep
            assert [p["data"] for p in rep["publications"]] == list(range(5, 12)), rep
            assert rep["offset"] == 12
            await pub.request("publish", channel="news", data=12)
            msg = await c2.publication()
            assert msg["offset"] == 13 and msg["data"] == 12, msg
            bad = await c2.request("subscribe", channel="other",
                                   since={"offset": 3, "epoch": "00000000"})
            assert bad["ok"] and bad["recovered"] is False, bad
            await c2.close()
            await pub.close()
        run(go())


def test_killed_node_leaves_presence_within_the_lease():
    with Redis() as r, node(r, "--presence-ttl", "1500ms") as a, node(r) as b:
        async def go():
            x = await Chat.open(a, "x")
            y = await Chat.open(b, "y")
            await x.request("subscribe", channel="lobby")
            rep = await y.request("subscribe", channel="lobby")
            assert rep["count"] == 2, rep
            await asyncio.sleep(2)  # leases renewed meanwhile
            assert (await y.request("presence", channel="lobby"))["count"] == 2
            a.proc.kill()  # node A dies without a word
            killed = time.monotonic()
            while (await y.request("presence", channel="lobby"))["count"] != 1:
                assert time.monotonic() - killed < 1.5 + 3, "node A's clients never left"
                await asyncio.sleep(0.1)
            await y.close()
        run(go())


def test_redis_restart_mid_run_nodes_reconnect_and_deliveries_resume():
    with Redis() as r, node(r, "--redis-timeout", "1s") as a, node(r) as b:
        async def go():
            sub = await Chat.open(b, "s")
            await sub.request("subscribe", channel="live")
            pub = await Chat.open(a, "p")
            rep = await pub.request("publish", channel="live", data="before")
            first = await sub.publication()
            assert first["data"] == "before"
            r.kill()
            rep = await pub.request("publish", channel="live", data="refused")
            assert rep["error"]["code"] == "unavailable", rep  # said, not dropped silently
            r.restart()  # same port, empty: every stream starts again
            deadline = time.monotonic() + 15
            while True:
                rep = await pub.request("publish", channel="live", data="after")
                if rep.get("ok"):
                    break
                assert time.monotonic() < deadline, rep
                await asyncio.sleep(0.2)
            assert rep["offset"] == 1 and rep["epoch"] != first["epoch"], rep
            msg = await sub.publication(timeout=15)
            assert msg["data"] == "after" and msg["epoch"] == rep["epoch"], msg
            rep = await pub.request("publish", channel="live", data="more")
            msg = await sub.publication()
            assert msg["data"] == "more" and msg["offset"] == rep["offset"], msg
            await sub.close()
            await pub.close()
        run(go())
        st = b.read_stats(lambda st: st["pubsub"]["redis"]["link"]["resubscribe_rounds"] >= 1)
        assert st["pubsub"]["redis"]["link"]["reconnects"] >= 1


if __name__ == "__main__":
    run_tests(globals(), sys.argv)
