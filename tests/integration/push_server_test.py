#!/usr/bin/env python3
"""build/bin/heartwheel-push against a redis-server of the test's own: publish
and SSE receive, Last-Event-ID resume without gaps (and the reset event when
history cannot cover it), a WebSocket subscriber (heartwheel-chat's protocol,
python3-websockets), a delayed push delivered near its due time, DELETE
204/404, 503 while Redis is down, a node killed with claims in flight
whose pushes another node delivers after the lease, and a subscriber on
one node receiving a publish made on another (the Redis broker).

Usage: push_server_test.py PATH/TO/heartwheel-push [test ...]
Every server binds port 0; every process started is stopped by PID; a
watchdog ends a hung test. Time bounds have slack for a loaded 2-core machine.
"""
import asyncio
import json
import signal
import sys
import time

from chat_support import Server, run_tests
from push_support import Redis, Sse, http, publish

SERVER_BINARY = None  # set by run_tests


def node(redis, *flags):
    return Server(SERVER_BINARY, "--redis", redis.address(), "--tick", "5ms", *flags)


def now_ms():
    return int(time.time() * 1000)


def test_usage_without_redis_exits_2():
    import subprocess
    p = subprocess.run([SERVER_BINARY, "--listen", "127.0.0.1:0"], capture_output=True, text=True,
                       timeout=10)
    assert p.returncode == 2, p
    assert "--redis" in p.stderr, p.stderr


def test_publish_and_sse_receive():
    with Redis() as r, node(r) as s:
        sse = Sse(s.port, "news")
        assert sse.status == 200
        assert sse.headers["content-type"] == "text/event-stream", sse.headers
        first = sse.event()
        assert first["event"] == "subscribed" and first["id"] == "0", first
        status, _, body = publish(s.port, "news", {"text": "hello"})
        assert status == 202, body
        # Published before the answer: its place in the channel's stream.
        assert set(body) == {"id", "due_ms", "offset", "epoch"}, body
        assert body["offset"] == 1 and body["epoch"] == first["data"]["epoch"], (body, first)
        ev = sse.messages(1)[0]
        assert ev["id"] == "1", ev
        assert ev["data"]["data"] == {"text": "hello"} and ev["data"]["offset"] == 1, ev
        # Bad requests: clear 400s, nothing published.
        for bad, code in ((b"not json", "bad_json"), ({"data": 1}, "bad_request"),
                          ({"channel": "news"}, "bad_request"),
                          ({"channel": "", "data": 1}, "empty_channel"),
                          ({"channel": "news", "data": 1, "delay_ms": -5}, "bad_request"),
                          ({"channel": "news", "data": 1, "delay_ms": "soon"}, "bad_request")):
            status, _, body = http(s.port, "POST", "/publish", bad)
            assert status == 400 and body["error"]["code"] == code, (bad, status, body)
        status, _, _ = http(s.port, "POST", "/publish",
                            {"channel": "news", "data": "x" * (200 * 1024)})
        assert status == 413, status
        status, headers, _ = http(s.port, "GET", "/publish")
        assert status == 405 and headers["allow"] == "POST"
        # All in the wait: the delivery and the event come after the accept,
        # and a file written between them has only the accept.
        st = s.read_stats(lambda st: st["api"]["publish_accepted"] == 1 and
                          st["api"]["delivered"] >= 1 and st["sse"]["events"] >= 1)
        assert st["api"]["delivered"] == 1 and st["sse"]["events"] == 1, st
        # Not through the delayed queue: nothing stored to be claimed.
        assert st["delayed"]["scheduled"] == 0 and r.queue_size("data") == 0, st["delayed"]
        status, _, body = publish(s.port, "news", {"text": "later"}, delay_ms=1)
        assert status == 202 and set(body) == {"id", "due_ms"}, body  # stored, not yet published
        assert sse.messages(1)[0]["data"]["offset"] == 2
        sse.close()


def test_last_event_id_resumes_without_gaps():
    with Redis() as r, node(r, "--history-size", "100") as s:
        sse = Sse(s.port, "feed")
        sse.event()
        for i in range(3):
            assert publish(s.port, "feed", i)[0] == 202
        got = sse.messages(3)
        assert [e["id"] for e in got] == ["1", "2", "3"], got
        sse.close()
        for i in range(3, 6):  # published while the reader is away
            assert publish(s.port, "feed", i)[0] == 202
        s.read_stats(lambda st: st["api"]["delivered"] == 6)
        again = Sse(s.port, "feed", last_event_id=3)
        resumed = again.messages(3)
        # Offsets 4, 5, 6 without a gap, in the order they were posted.
        assert [e["id"] for e in resumed] == ["4", "5", "6"], resumed
        assert [e["data"]["data"] for e in resumed] == [3, 4, 5], resumed
        sub = again.event()
        assert sub["event"] == "subscribed" and sub["data"]["recovered"] is True, sub
        assert publish(s.port, "feed", 6)[0] == 202
        live = again.messages(1)[0]
        assert live["id"] == "7" and live["data"]["data"] == 6, live
        again.close()
        assert s.read_stats(lambda st: st["sse"]["resumed"] == 1)


def test_last_event_id_beyond_history_gets_a_reset_event():
    with Redis() as r, node(r, "--history-size", "2") as s:
        sse = Sse(s.port, "small")
        sse.event()
        assert publish(s.port, "small", 0)[0] == 202
        sse.messages(1)
        sse.close()
        # The Redis broker trims a channel's stream approximately (MAXLEN ~):
        # publish well past what it keeps.
        for i in range(1, 251):
            assert publish(s.port, "small", i)[0] == 202
        s.read_stats(lambda st: st["api"]["delivered"] == 251)
        again = Sse(s.port, "small", last_event_id=1)
        reset = again.event()
        assert reset["event"] == "reset", reset
        assert reset["data"]["last_event_id"] == 1, reset
        again.close()


def test_websocket_subscriber_receives():
    import websockets

    async def run(port):
        async with websockets.connect("ws://127.0.0.1:%d/ws" % port, ping_interval=None) as ws:
            json.loads(await ws.recv())  # connect
            await ws.send(json.dumps({"id": 1, "op": "subscribe", "channel": "alerts"}))
            reply = json.loads(await ws.recv())
            assert reply.get("ok") is True, reply
            status, _, _ = await asyncio.get_event_loop().run_in_executor(
                None, lambda: publish(port, "alerts", {"level": "red"}))
            assert status == 202
            push = json.loads(await asyncio.wait_for(ws.recv(), 10))
            assert push["channel"] == "alerts" and push["data"] == {"level": "red"}, push

    with Redis() as r, node(r) as s:
        asyncio.run(run(s.port))


def test_delayed_push_delivered_near_its_due_time():
    with Redis() as r, node(r) as s:
        sse = Sse(s.port, "later")
        sse.event()
        status, _, body = publish(s.port, "later", "wake up", delay_ms=1500)
        assert status == 202
        assert abs(body["due_ms"] - (now_ms() + 1500)) < 1000, body
        ev = sse.messages(1, timeout=10)[0]
        got = now_ms()
        assert got >= body["due_ms"], (got, body)  # never early
        assert got - body["due_ms"] < 1000, (got, body)  # a tick + a Redis round trip, with slack
        sse.close()


def test_delete_cancels_204_then_404():
    with Redis() as r, node(r) as s, node(r) as other:
        sse = Sse(s.port, "c")
        sse.event()
        status, _, body = publish(s.port, "c", "never", delay_ms=1500)
        assert status == 202
        pid = body["id"]
        status, _, _ = http(other.port, "DELETE", "/publish/" + pid)  # on any node
        assert status == 204
        status, _, err = http(s.port, "DELETE", "/publish/" + pid)
        assert status == 404 and err["error"]["code"] == "not_found", err
        assert http(s.port, "DELETE", "/publish/no-such-id")[0] == 404
        assert http(s.port, "DELETE", "/publish/bad%20id")[0] == 404
        # Delivered: too late to cancel.
        status, _, body = publish(s.port, "c", "now")
        ev = sse.messages(1, timeout=10)[0]
        assert ev["data"]["data"] == "now", ev  # the cancelled one never came
        assert http(s.port, "DELETE", "/publish/" + body["id"])[0] == 404
        # Past the cancelled one's due time: s held it in its wheel, and its
        # claim found it gone.
        s.read_stats(lambda st: st["delayed"]["claimed_elsewhere"] >= 1)
        publish(s.port, "c", "after")
        assert sse.messages(1)[0]["data"]["data"] == "after"
        sse.close()


def test_push_ids_are_unguessable():
    """Issue 23: ids were a per-worker prefix plus a counter, so DELETE
    /publish/<prefix>-1..6 cancelled other people's pushes. Now each id is a
    UUIDv4 (122 random bits): consecutive ids share no prefix or counter, and
    guessing near a known id cancels nothing."""
    import re
    uuid4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
    with Redis() as r, node(r) as s:
        ids = []
        for i in range(20):
            status, _, body = publish(s.port, "victim", i, delay_ms=60000)
            assert status == 202, body
            ids.append(body["id"])
        assert len(set(ids)) == len(ids)
        for pid in ids:
            assert uuid4.match(pid), pid
        for a, b in zip(ids, ids[1:]):
            ha, hb = a.replace("-", ""), b.replace("-", "")
            # Random halves: a shared 4-hex-digit prefix or suffix happens by chance
            # once in 65,536 pairs; a counter or worker prefix shares far more.
            assert ha[:4] != hb[:4] or ha[-4:] != hb[-4:], (a, b)
            assert abs(int(ha, 16) - int(hb, 16)) > 1 << 64, (a, b)  # not neighbours
        # The old attack: ids next to a known one (the counter's neighbours, the
        # UUID's last digits changed).
        known = ids[0]
        for k in range(1, 7):
            guess = known[:-1] + "%x" % ((int(known[-1], 16) + k) % 16)
            if guess not in ids:
                assert http(s.port, "DELETE", "/publish/" + guess)[0] == 404
        for k in range(1, 7):
            assert http(s.port, "DELETE", "/publish/%s-%x" % (known[:8], k))[0] == 404
        # Every push is still there: cancel each (now by its real id).
        for pid in ids:
            assert http(s.port, "DELETE", "/publish/" + pid)[0] == 204, pid


def test_503_while_redis_is_down():
    with Redis() as r, node(r, "--redis-timeout", "500ms") as s:
        assert publish(s.port, "c", 1)[0] == 202
        r.kill()
        started = time.monotonic()
        status, headers, body = publish(s.port, "c", 2, delay_ms=100)
        assert status == 503, (status, body)
        assert body["error"]["code"] == "redis_unavailable", body
        assert headers.get("retry-after") == "1"
        assert time.monotonic() - started < 5
        r.restart()
        deadline = time.monotonic() + 15
        while publish(s.port, "c", 3)[0] != 202:  # the link reconnects with backoff
            assert time.monotonic() < deadline, "never accepted again after Redis came back"
            time.sleep(0.2)
        s.read_stats(lambda st: st["api"]["publish_unavailable"] >= 1
                     and st["redis"]["reconnects"] >= 1)


def test_killed_node_claims_are_delivered_by_the_other_after_the_lease():
    # Node A holds 20 pushes in its wheel. Redis is frozen as they come due:
    # A's claims wait in Redis's socket; A is killed (SIGKILL); Redis thaws
    # and runs the dead node's claims: 20 pushes claimed in flight, never to
    # be acknowledged. Node B, with a subscriber, re-queues them once the
    # 2 s lease has run out and delivers each once.
    with Redis() as r:
        a = node(r, "--lease", "2s", "--reap-interval", "200ms")
        try:
            # A running node: its claim script is in Redis's cache (a first
            # EVALSHA would get NOSCRIPT, and the dead node never resends it).
            # Delayed: an immediate publish does not go through the queue.
            assert publish(a.port, "warmup", 0, delay_ms=1)[0] == 202
            a.read_stats(lambda st: st["delayed"]["acked"] == 1)
            due = None
            for i in range(20):
                status, _, body = publish(a.port, "orders", i, delay_ms=1500)
                assert status == 202
                due = body["due_ms"]
            time.sleep(max(0, (due - 400 - now_ms()) / 1000))
            r.freeze()
            # A's claims are sent (the warm-up's and the 20): they wait in Redis's socket.
            a.read_stats(lambda st: st["delayed"]["fired"] >= 21)
            a.proc.send_signal(signal.SIGKILL)
            a.proc.wait(timeout=10)
            r.thaw()
            deadline = time.monotonic() + 5
            while r.queue_size("claims") != 20:
                assert time.monotonic() < deadline, (r.queue_size("claims"), r.queue_size("due"))
                time.sleep(0.05)
            claimed_at = time.monotonic()
        finally:
            a.stop()
        with node(r, "--lease", "2s", "--reap-interval", "200ms") as b:
            sse = Sse(b.port, "orders")
            sse.event()
            got = sse.messages(20, timeout=15)
            waited = time.monotonic() - claimed_at
            assert sorted(e["data"]["data"] for e in got) == list(range(20)), got
            assert waited >= 1.0, waited  # not before the lease (2 s from the claims) ran out
            st = b.read_stats(lambda st: st["delayed"]["acked"] == 20)
            assert st["delayed"]["requeued"] == 20, st["delayed"]
            deadline = time.monotonic() + 5
            while r.queue_size("data") != 0:  # deleted with the claims
                assert time.monotonic() < deadline, r.queue_size("data")
                time.sleep(0.05)
            sse.close()


def test_sse_heartbeats_and_a_dead_reader_closed_by_the_wheel():
    with Redis() as r, node(r, "--sse-heartbeat", "200ms", "--send-timeout", "3s",
                            "--max-message-size", "2000000") as s:
        live = Sse(s.port, "hb")
        live.event()
        took = live.heartbeats(3)  # ": ping" every 200 ms of silence
        assert took >= 0.5, took  # not sooner than 3 x 200 ms (less a tick or two)
        assert publish(s.port, "hb", 1)[0] == 202
        live.messages(1)
        live.close()
        # The server lets the live stream go before the dead reader comes:
        # it read the client's FIN, but a half-closed client may still read
        # a stream, so the stream ends when a write fails (a heartbeat or
        # two later). A stream still open when the 1.5 MiB push below comes
        # takes it into a connection nobody reads, and the small push then
        # ends it as slow too (slow_closes 2, seen at -O3, where the pushes
        # come sooner): this test is about one dead reader.
        st = s.read_stats(lambda st: st["sse"]["opened"] == 1 and st["sse"]["current"] == 0)
        assert st["sse"]["slow_closes"] == 0, st["sse"]
        # A reader that stopped reading: the slow-consumer rule ends its
        # stream, and the write-stall deadline (--send-timeout: not one byte
        # written for 3 s) closes the connection whose last bytes never
        # leave. One push half again the 1 MiB high watermark makes the
        # connection unwritable by itself (a small announced segment size
        # keeps the kernel's share small: Sse's mss), and the stall deadline
        # starts there; the next push, a small one, finds it unwritable and
        # ends the stream. So the only race with the deadline is one small
        # push going through, however slowly the server runs (-O0, a loaded
        # machine). Many 60-150 kB pushes instead had to bring a megabyte
        # through the server within the deadline, and lost at -O0.
        dead = Sse(s.port, "hb", rcvbuf=4096, mss=536)
        dead.event()
        assert publish(s.port, "hb", "x" * (3 << 19))[0] == 202  # 1.5 MiB
        assert publish(s.port, "hb", 3)[0] == 202
        st = s.read_stats(lambda st: st["net"]["closed_by_reason"]["write_stall"] >= 1
                          and st["sse"]["current"] == 0
                          and st["api"]["delivered"] == 3, timeout=20)  # 1, the big one, 3
        # The small push usually finds the connection unwritable and ends
        # the stream (slow_closes 1); when it reaches the stream while the
        # big one is still being taken by the kernel, it is queued behind it
        # and the stall deadline alone closes the connection (slow_closes 0,
        # seen on a loaded machine). Either way the wheel closed the reader.
        assert st["sse"]["slow_closes"] in (0, 1), st["sse"]
        dead.close()
        again = Sse(s.port, "hb")  # the server serves on
        again.event()
        assert publish(s.port, "hb", 2)[0] == 202
        assert again.messages(1)[0]["data"]["data"] == 2
        again.close()


def test_metrics_scrape_passes_promtool():
    import os
    import subprocess
    import urllib.request
    with Redis() as r, node(r, "--metrics-listen", "127.0.0.1:0") as s:
        line = s.proc.stdout.readline()
        assert line.startswith("metrics on "), line
        url = "http://%s/metrics" % line.split()[-1]
        assert publish(s.port, "m", 1, delay_ms=1)[0] == 202
        assert publish(s.port, "m", 2, delay_ms=30000)[0] == 202
        deadline = time.monotonic() + 10
        while True:
            text = urllib.request.urlopen(url, timeout=10).read().decode()
            if ('heartwheel_push_api_publish_total{result="accepted"} 2' in text
                    and "heartwheel_push_delayed_acked_total 1" in text):
                break
            assert time.monotonic() < deadline, text[-3000:]
            time.sleep(0.1)
        assert "heartwheel_push_delayed_held 1" in text, text  # the one due in 30 s
        assert "heartwheel_connections_open" in text or "heartwheel_connections" in text
        if os.path.exists("/usr/bin/promtool"):
            p = subprocess.run(["/usr/bin/promtool", "check", "metrics"], input=text,
                               capture_output=True, text=True, timeout=30)
            assert p.returncode == 0, p.stdout + p.stderr


# Cross-node fan-out (the Redis broker): a subscriber on node B gets what
# node A's publish stored and whichever node claimed delivered.
def test_subscriber_on_b_receives_publish_made_on_a():
    with Redis() as r, node(r) as a, node(r) as b:
        sse = Sse(b.port, "x")
        sse.event()
        for i in range(10):
            assert publish(a.port, "x", i)[0] == 202
        got = sse.messages(10, timeout=10)
        assert [e["data"]["data"] for e in got] == list(range(10))  # in order (issue 34)


def test_idempotency_key_retried_on_the_other_node_gets_the_first_offset_and_one_delivery():
    with Redis() as r, node(r) as a, node(r) as b:
        sse = Sse(b.port, "orders")
        sse.event()
        keyed = {"channel": "orders", "data": {"order": 7}, "idempotency_key": "order-7"}
        status, _, first = http(a.port, "POST", "/publish", keyed)
        assert status == 202, first
        status, _, retry = http(b.port, "POST", "/publish", dict(keyed, data={"order": "7 again"}))
        assert status == 202, retry
        assert (retry["offset"], retry["epoch"]) == (first["offset"], first["epoch"]), (first, retry)
        assert publish(b.port, "orders", "marker")[0] == 202  # nothing else is on its way
        got = sse.messages(2)
        assert [e["data"]["data"] for e in got] == [{"order": 7}, "marker"], got
        b.read_stats(lambda st: st["api"]["delivered_already"] == 1)
        # A bad key, or a key with a delay: a clear 400, nothing stored.
        for bad in ({"channel": "orders", "data": 1, "idempotency_key": ""},
                    {"channel": "orders", "data": 1, "idempotency_key": "a\nb"},
                    {"channel": "orders", "data": 1, "idempotency_key": 5},
                    {"channel": "orders", "data": 1, "idempotency_key": "k", "delay_ms": 10}):
            status, _, body = http(a.port, "POST", "/publish", bad)
            assert status == 400 and "idempotency_key" in body["error"]["message"], (bad, body)
        sse.close()


def test_a_delayed_push_delivered_again_gets_its_first_offset_and_is_not_sent_twice():
    """What a node cut off from Redis between delivery and acknowledgement
    leaves (docs/faults.md, delayed-partition): the push delivered, and back
    in the queue, as the reaper puts it once the lost claim's lease ran out."""
    with Redis() as r, node(r, "--takeover-grace", "200ms", "--load-interval", "200ms") as s:
        sse = Sse(s.port, "d")
        sse.event()
        status, _, body = publish(s.port, "d", {"n": 1}, delay_ms=1000)
        assert status == 202, body
        pid = body["id"]
        data_key = [k for k in r.command("KEYS", "heartwheel:push:{*}data")
                    if r.command("HEXISTS", k, pid)][0]
        payload = r.command("HGET", data_key, pid)
        got = sse.messages(1)
        assert got[0]["id"] == "1" and got[0]["data"]["data"] == {"n": 1}, got
        s.read_stats(lambda st: st["delayed"]["acked"] == 1)
        r.command("HSET", data_key, pid, payload)
        r.command("ZADD", data_key[:-len("data")] + "due", now_ms(), pid)
        st = s.read_stats(lambda st: st["api"]["delivered_already"] == 1 and
                          st["delayed"]["acked"] == 2)
        assert st["api"]["delivered"] == 1, st["api"]
        assert publish(s.port, "d", "marker")[0] == 202  # nothing else is on its way
        after = sse.messages(1)
        assert after[0]["id"] == "2" and after[0]["data"]["data"] == "marker", after
        sse.close()


def test_delayed_pushes_on_a_redis_cluster_wait_for_a_replica():
    """Two nodes on a real Redis Cluster (--redis-cluster, six redis-server
    processes) with --redis-wait-replicas 1: every acknowledged push was on a
    replica (WAIT), each is delivered once, the queue's keys are partitioned,
    the per-master stats and families are there."""
    import os
    import subprocess
    import urllib.request
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "tools", "pylib"))
    import redis_cluster
    p = subprocess.run([SERVER_BINARY, "--listen", "127.0.0.1:0", "--redis-cluster",
                        "127.0.0.1:7000", "--redis-wait-replicas", "1", "--lease", "1500ms"],
                       capture_output=True, text=True, timeout=10)
    assert p.returncode == 2 and "--lease" in p.stderr, p
    with redis_cluster.RedisCluster() as c:
        flags = ("--redis-cluster", c.seeds(), "--redis-wait-replicas", "1", "--tick", "5ms")
        with Server(SERVER_BINARY, *flags, "--metrics-listen", "127.0.0.1:0") as a, \
                Server(SERVER_BINARY, *flags) as b:
            url = "http://%s/metrics" % a.proc.stdout.readline().split()[-1]
            sse = Sse(b.port, "x")
            sse.event()
            for i in range(30):
                assert publish(a.port, "x", i, delay_ms=300 + 20 * i)[0] == 202
            got = sse.messages(30, timeout=15)
            assert sorted(e["data"]["data"] for e in got) == list(range(30)), got
            for i in range(40):  # due in 10 minutes: they stay in their partitions
                assert publish(a.port, "later", i, delay_ms=600000)[0] == 202
            st = a.read_stats(lambda st: st["api"]["publish_accepted"] == 70)
            assert st["redis"]["waits"] >= 70 and st["redis"]["not_replicated"] == 0, st["redis"]
            assert len(st["redis_masters"]) == 3, st["redis_masters"]
            assert all(m["connected"] for m in st["redis_masters"]), st["redis_masters"]
            # The queue's partitions are cluster keys ({tag} each); which
            # masters hold them depends on the ids (the spread over every
            # master is checked by tests/integration/delayed_queue_test.cpp).
            due = [k for m in c.masters()
                   for k in redis_cluster.command(m, "KEYS", "heartwheel:push:{*}due")]
            assert due, c.masters()
            text = urllib.request.urlopen(url, timeout=10).read().decode()
            for m in c.masters():
                assert ('heartwheel_redis_master_connected{link="push",master="127.0.0.1:%d"} 1'
                        % m) in text, text
            assert 'heartwheel_redis_failovers_total{link="broker"}' in text
            if os.path.exists("/usr/bin/promtool"):
                p = subprocess.run(["/usr/bin/promtool", "check", "metrics"], input=text,
                                   capture_output=True, text=True, timeout=30)
                assert p.returncode == 0, p.stdout + p.stderr
            try:  # and nothing more: each push once
                extra = sse.messages(1, timeout=1)
            except Exception:
                extra = []
            assert extra == [], extra


if __name__ == "__main__":
    run_tests(globals(), sys.argv)
