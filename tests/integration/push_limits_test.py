#!/usr/bin/env python3
"""Issue 23's attacks on build/bin/heartwheel-push's HTTP API, rerun against
the real program (with a redis-server of the test's own) and now refused or
bounded: a body nested 80,000 deep is a 400 and the process lives. Issue
34's: pings on /ws never read, SSE resumes never read (the recovery now
under --max-reply-bytes), and /sse's query parameters percent-decoded.

Usage: push_limits_test.py PATH/TO/heartwheel-push [test ...]
Every server binds port 0; every process started is stopped by PID; a
watchdog ends a hung test. Bounds have slack for a loaded 2-core machine.
"""
import sys

from chat_support import Server, ping_flood, rss_kib, run_tests
from push_support import Redis, Sse, http, publish

SERVER_BINARY = None  # set by run_tests


def node(redis, *flags):
    return Server(SERVER_BINARY, "--redis", redis.address(), "--tick", "5ms", *flags)


def test_80000_deep_body_is_refused_and_the_process_lives():
    with Redis() as r, node(r, "--max-message-size", "1048576") as s:
        deep = '{"channel":"c","data":' + "[" * 80000 + "]" * 80000 + "}"
        status, _, body = http(s.port, "POST", "/publish", deep.encode())
        assert status == 400 and body["error"]["code"] == "too_deep", (status, body)
        ok = '{"channel":"c","data":' + "[" * 63 + "]" * 63 + "}"
        status, _, body = http(s.port, "POST", "/publish", ok.encode())
        assert status == 202, (status, body)
        assert s.proc.poll() is None, "the server died"
        assert publish(s.port, "c", "still here")[0] == 202


def test_post_publish_only_with_json_content_type():
    """A cross-site form can post text/plain without a preflight: 415 now."""
    import socket
    with Redis() as r, node(r) as s:
        body = b'{"channel":"c","data":1}'
        for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                      None, "application/jsonx"):
            c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
            head = "POST /publish HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            if ctype:
                head += "Content-Type: %s\r\n" % ctype
            head += "Content-Length: %d\r\n\r\n" % len(body)
            c.sendall(head.encode() + body)
            raw = b""
            while True:
                chunk = c.recv(65536)
                if not chunk:
                    break
                raw += chunk
            c.close()
            assert raw.startswith(b"HTTP/1.1 415"), (ctype, raw[:200])
            assert b"unsupported_media_type" in raw, raw
        # JSON with parameters, any case: accepted.
        status, _, _ = http(s.port, "POST", "/publish", body)
        assert status == 202


def test_trickled_post_is_closed_at_the_request_timeout():
    """A POST sending a byte every 2 s (each within the 10 s body timeout,
    which restarts at every byte) stayed open for ever: the request timeout
    (10 s by default) now bounds the whole request."""
    import socket
    import time
    with Redis() as r, node(r) as s:
        c = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        body = b'{"channel":"c","data":"' + b"x" * 100 + b'"}'
        c.sendall(("POST /publish HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   "Content-Length: %d\r\n\r\n" % len(body)).encode())
        start = time.monotonic()
        closed_after = None
        c.settimeout(2.0)
        for b in body:
            try:
                c.sendall(bytes([b]))
                data = c.recv(65536)  # waits up to 2 s: the trickle's pace
                if data == b"" or data:
                    closed_after = time.monotonic() - start
                    break
            except socket.timeout:
                continue
            except OSError:
                closed_after = time.monotonic() - start
                break
            if time.monotonic() - start > 40:
                break
        c.close()
        assert closed_after is not None, "still open after 40 s"
        assert 8 <= closed_after <= 20, closed_after
        # SSE streams outlive the request timeout (their deadline is lifted).
        from push_support import Sse
        sse = Sse(s.port, "c")
        sse.event()
        time.sleep(11)
        assert publish(s.port, "c", "late")[0] == 202
        assert sse.messages(1, timeout=10)[0]["data"]["data"] == "late"
        sse.close()


def test_pending_pushes_per_key_are_capped_across_nodes():
    """--max-delayed-per-key 3 on two nodes of one Redis: the count is Redis's,
    so three delayed pushes (two on A, one on B) fill it; the fourth, on
    either node, is 429 limit_exceeded, counted (api.publish_capped,
    delayed.schedule_capped, /metrics). A cancel makes room for one; so does
    a delivery (a push counts until it is delivered; an immediate publication
    is published before its answer, never stored, and never counted)."""
    import time
    from chat_support import http_get
    from push_support import Sse
    with Redis() as r, node(r, "--max-delayed-per-key", "3",
                            "--metrics-listen", "127.0.0.1:0") as a, \
            node(r, "--max-delayed-per-key", "3") as b:
        metrics_port = int(a.proc.stdout.readline().rsplit(":", 1)[1])
        ids = []
        for n, delay in ((a, 60000), (a, 60000), (b, 60000)):
            status, _, body = publish(n.port, "c", "later", delay_ms=delay)
            assert status == 202, (status, body)
            ids.append(body["id"])
        assert r.command("HGET", "heartwheel:push:owners", "") == "3"
        for n in (a, b):
            status, _, body = publish(n.port, "c", "one too many", delay_ms=60000)
            assert status == 429 and body["error"]["code"] == "limit_exceeded", (status, body)
            assert "--max-delayed-per-key" in body["error"]["message"], body
        assert r.queue_size("due") == 3
        # A cancel (on the other node) makes room for exactly one.
        assert http(b.port, "DELETE", "/publish/" + ids[0])[0] == 204
        assert http(a.port, "DELETE", "/publish/" + ids[0])[0] == 404  # once only
        status, _, body = publish(a.port, "c", "in the freed place", delay_ms=60000)
        assert status == 202, (status, body)
        ids[0] = body["id"]
        assert publish(a.port, "c", "full again", delay_ms=60000)[0] == 429
        # An immediate publication is not stored: not counted, even when full.
        assert publish(a.port, "c", "immediate")[0] == 202
        # A delivery makes room too: cancel one, push one due in 1 ms, and once
        # it is delivered (and acknowledged) the next is accepted.
        sse = Sse(a.port, "c")
        sse.event()
        assert http(a.port, "DELETE", "/publish/" + ids[1])[0] == 204
        assert publish(a.port, "c", "now", delay_ms=1)[0] == 202
        assert sse.messages(1, timeout=10)[0]["data"]["data"] == "now"
        deadline = time.monotonic() + 10
        while r.command("HGET", "heartwheel:push:owners", "") != "2":
            assert time.monotonic() < deadline, r.command("HGET", "heartwheel:push:owners", "")
            time.sleep(0.05)
        assert publish(b.port, "c", "after the delivery", delay_ms=60000)[0] == 202
        assert publish(b.port, "c", "full", delay_ms=60000)[0] == 429
        sse.close()
        st = a.read_stats(lambda st: st["api"]["publish_capped"] == 2)
        assert st["delayed"]["schedule_capped"] == 2, st["delayed"]
        stb = b.read_stats(lambda st: st["api"]["publish_capped"] == 2)
        assert stb["delayed"]["schedule_capped"] == 2, stb["delayed"]
        status, _, text = http_get(metrics_port, "/metrics")
        text = text.decode()
        assert 'heartwheel_push_api_publish_total{result="capped"} 2' in text, text[:2000]
        assert "heartwheel_push_delayed_schedule_capped_total 2" in text
        assert 'heartwheel_chat_limits_total{limit="rate_publish"} 0' in text


def test_pings_never_read_queue_one_pong_per_connection():
    """Issue 34: 125-byte pings on /ws, never reading the pongs, grew the
    node by a pong per ping (up to the 64 MiB hard cap per connection).
    Now the pong of the latest ping waits, as one, for the queue to empty."""
    with Redis() as r, node(r) as s:
        extra, st, socks = ping_flood(s, "/ws", clients=2, pings=100000)
        print("pings never read, 2 x 100,000: extra RSS %.1f MiB" % extra)
        assert extra < 8, extra  # before: +25 MiB of pongs
        assert st["ws"]["pongs_folded"] >= 100000, st["ws"]  # the rest went into socket buffers
        for c in socks:
            c.close()


def test_sse_resume_never_read_stays_within_max_reply_bytes():
    """Issue 34: 10 GET /sse?channel=big with Last-Event-ID: 0, never read,
    on a channel of 100 x 60 KB: each wrote its whole recovery at once
    (+100 MiB; 6 MB more per reader). Now a recovery is all or nothing
    within --max-reply-bytes, as on /ws: 30 such readers get a reset event
    instead. What stays is the recoveries' passing memory (the Redis
    replies, ~14 MiB whether 10 or 30 readers), nothing per reader."""
    with Redis() as r, node(r, "--history-size", "100") as s:
        for i in range(100):
            assert publish(s.port, "big", "x" * 60000)[0] == 202
        s.read_stats(lambda st: st["api"]["delivered"] == 100, timeout=30)
        before = rss_kib(s.proc.pid)
        readers = [Sse(s.port, "big", last_event_id=0, rcvbuf=4096, mss=1024) for _ in range(30)]
        st = s.read_stats(lambda st: st["sse"]["resets"] + st["sse"]["resumed"] == 30, timeout=30)
        extra = (rss_kib(s.proc.pid) - before) / 1024.0
        print("30 SSE resumes of 100 x 60 KB, never read: extra RSS %.1f MiB" % extra)
        assert extra < 40, extra  # before: ~14 MiB per reader
        assert st["sse"].get("recovery_cut") == 30, st["sse"]
        first = readers[0].event()
        assert first["event"] == "reset" and first["data"]["last_event_id"] == 0, first
        assert "more than one recovery" in first["data"]["reason"], first
        for reader in readers:
            reader.close()
        # A resume that fits is still a resume.
        again = Sse(s.port, "big", last_event_id=95)
        assert [e["id"] for e in again.messages(5)] == ["96", "97", "98", "99", "100"]
        assert again.event()["data"]["recovered"] is True
        again.close()


def test_sse_query_parameters_are_percent_decoded():
    """Issue 34: channel=a%3Ab named the literal a%3Ab, so a channel with ':'
    or '#' (dm:#bob,carol) could not be named by a standard client."""
    with Redis() as r, node(r) as s:
        for name, encoded in (("news:today", "news%3Atoday"), ("dm:#bob,carol", "dm%3A%23bob%2Ccarol"),
                              ("a+b", "a%2Bb")):
            sse = Sse(s.port, encoded)
            assert sse.event()["data"]["channel"] == name
            assert publish(s.port, name, "hello")[0] == 202
            got = sse.messages(1)[0]
            assert got["data"]["channel"] == name and got["data"]["data"] == "hello", got
            sse.close()
        status, _, body = http(s.port, "GET", "/sse?channel=bad%zz")
        assert status == 400 and body["error"]["code"] == "bad_request", (status, body)


def test_max_delayed_per_key_flag_values():
    import subprocess
    for value in ["-1", "x", "2000000000000"]:
        p = subprocess.run([SERVER_BINARY, "--listen", "127.0.0.1:0", "--redis", "127.0.0.1:1",
                            "--max-delayed-per-key", value],
                           capture_output=True, text=True, timeout=20)
        assert p.returncode == 2 and "--max-delayed-per-key" in p.stderr, (value, p.stderr)


if __name__ == "__main__":
    run_tests(globals(), sys.argv)
