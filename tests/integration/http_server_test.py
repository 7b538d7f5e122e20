#!/usr/bin/env python3
"""Loopback tests of build/bin/heartwheel-http with real clients: curl,
Python's http.client and raw sockets (pipelining, slowloris, pre-connect).

Usage: http_server_test.py PATH/TO/heartwheel-http [test-name ...]
Every server binds port 0 and prints its real port; every process started is
stopped; a watchdog (SIGALRM) ends a hung run. Bounds have generous slack for
a loaded 2-core machine.
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

BINARY = None
WATCHDOG_SECONDS = 120


class Server:
    """One heartwheel-http process on a free loopback port."""

    def __init__(self, *flags):
        self.stats = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
        self.proc = subprocess.Popen(
            [BINARY, "--listen", "127.0.0.1:0", "--stats-json", self.stats,
             "--stats-interval", "100ms", *flags],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            self.stop()
            raise AssertionError("server did not start: %r %s" % (line, self.proc.stderr.read()))
        self.port = int(line.rsplit(":", 1)[1])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        try:
            os.unlink(self.stats)
        except OSError:
            pass

    def read_stats(self, ready=lambda st: True):
        """The stats file, once `ready(stats)` holds (it is rewritten every 100 ms)."""
        st = None
        for _ in range(100):
            try:
                with open(self.stats) as f:
                    st = json.load(f)
                if ready(st):
                    return st
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        raise AssertionError("stats never ready: %r" % (st,))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def connect(port, timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_all(sock):
    """Reads until the server closes; returns the bytes."""
    out = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        out += chunk
    return out


def read_responses(sock, count):
    """Reads `count` Content-Length-framed responses; returns [(status, headers, body)]."""
    buf = b""
    out = []
    while len(out) < count:
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(65536)
            assert chunk, "closed early after %d responses: %r" % (len(out), buf)
            buf += chunk
        head, buf = buf.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
        n = int(headers.get("content-length", "0"))
        while len(buf) < n:
            chunk = sock.recv(65536)
            assert chunk, "closed inside a body"
            buf += chunk
        out.append((status, headers, buf[:n]))
        buf = buf[n:]
    return out


def curl(*args):
    r = subprocess.run(["curl", "-sS", "--max-time", "10", *args],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stderr
    return r


# ---------------------------------------------------------------- the tests

def test_curl_routes():
    with Server() as s:
        base = "http://127.0.0.1:%d" % s.port
        assert curl(base + "/").stdout == "Hello from heartwheel\n"
        assert curl("--data-binary", "ping-pong", base + "/echo").stdout == "ping-pong"
        assert curl("-o", "/dev/null", "-w", "%{http_code}", base + "/nope").stdout == "404"
        assert curl(base + "/bytes?n=70000").stdout == "x" * 70000
        assert curl(base + "/bytes?n=0").stdout == ""
        for bad in ("/bytes?n=1048577", "/bytes?n=-1", "/bytes?n=ten"):
            assert curl("-o", "/dev/null", "-w", "%{http_code}", base + bad).stdout == "400", bad
        assert curl("--http1.0", base + "/").stdout == "Hello from heartwheel\n"
        # curl waits for 100 Continue before sending this body.
        body = "x" * 200000
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
            f.write(body)
            f.flush()
            r = curl("-v", "-H", "Expect: 100-continue", "--data-binary", "@" + f.name,
                     base + "/echo")
        assert r.stdout == body, len(r.stdout)
        assert "HTTP/1.1 100 Continue" in r.stderr, r.stderr
        # Two URLs on one curl command: the second reuses the connection.
        r = curl("-v", base + "/", base + "/")
        assert "Re-using existing connection" in r.stderr or "Reusing existing" in r.stderr, r.stderr


def test_keepalive_reuse_with_http_client():
    with Server() as s:
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
        ports = set()
        for i in range(20):
            c.request("POST", "/echo", body=("n=%d" % i).encode())
            r = c.getresponse()
            assert r.status == 200
            assert r.read() == ("n=%d" % i).encode()
            ports.add(c.sock.getsockname()[1])
        assert len(ports) == 1, ports  # one connection, kept alive
        c.close()
        s.read_stats(lambda st: st["http"]["requests"] >= 20)


def test_pipelined_responses_in_order():
    with Server() as s:
        sock = connect(s.port)
        # The first answer is the slowest: the others must wait behind it.
        sock.sendall(b"GET /delay?ms=300 HTTP/1.1\r\nHost: x\r\n\r\n"
                     b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
                     b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nthird"
                     b"GET /delay?ms=10 HTTP/1.1\r\nHost: x\r\n\r\n")
        t0 = time.monotonic()
        rs = read_responses(sock, 4)
        assert [r[0] for r in rs] == [200, 200, 200, 200], rs
        assert rs[0][2] == b"delayed 300 ms\n", rs[0]
        assert rs[1][2] == b"Hello from heartwheel\n"
        assert rs[2][2] == b"third"
        assert rs[3][2] == b"delayed 10 ms\n"
        assert time.monotonic() - t0 >= 0.29
        sock.close()


def test_delays_run_on_the_wheel_not_a_sleeping_thread():
    with Server("--workers", "1") as s:
        socks = [connect(s.port) for _ in range(100)]
        t0 = time.monotonic()
        for sock in socks:
            sock.sendall(b"GET /delay?ms=400 HTTP/1.1\r\nHost: x\r\n\r\n")
        # One worker thread holds 100 pending answers and still serves others.
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=5)
        c.request("GET", "/")
        assert c.getresponse().read() == b"Hello from heartwheel\n"
        for sock in socks:
            (status, _, body), = read_responses(sock, 1)
            assert status == 200 and body == b"delayed 400 ms\n"
        elapsed = time.monotonic() - t0
        # All 100 concurrently: one after another would take 40 s.
        assert 0.39 <= elapsed < 3.0, elapsed
        for sock in socks:
            sock.close()


def test_slowloris_gets_408_while_others_are_served():
    with Server("--header-timeout", "1s", "--request-timeout", "5s") as s:
        slow = connect(s.port)
        result = {}

        def trickle():
            slow.sendall(b"GET / HTTP/1.1\r\n")
            t0 = time.monotonic()
            try:
                for i in range(100):
                    slow.sendall(b"X-a: b\r\n"[i % 8:i % 8 + 1])
                    time.sleep(0.1)
            except (BrokenPipeError, ConnectionResetError):
                pass
            result["elapsed"] = time.monotonic() - t0

        t = threading.Thread(target=trickle)
        t0 = time.monotonic()  # before the thread sends the first byte, where the timeout starts
        t.start()
        served = 0
        while time.monotonic() - t0 < 0.8:
            c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=5)
            c.request("GET", "/")
            assert c.getresponse().status == 200
            c.close()
            served += 1
        data = read_all(slow)
        elapsed = time.monotonic() - t0
        t.join()
        assert data.startswith(b"HTTP/1.1 408 "), data
        assert b"Connection: close" in data
        assert 0.9 <= elapsed <= 4.0, elapsed  # 1 s header timeout, not reset by the trickle
        assert served >= 3, served
        # One close-reason vocabulary: the session's reason is the connection's.
        s.read_stats(lambda st: st["http"]["timeouts"]["header"] >= 1 and
                     st["http"]["closed_by_reason"].get("header_timeout", 0) >= 1 and
                     st["net"]["closed_by_reason"]["header_timeout"] >= 1)


def test_preconnect_closed_quietly():
    with Server("--header-timeout", "500ms", "--keepalive-timeout", "30s") as s:
        t0 = time.monotonic()  # before the accept, where the timeout starts
        sock = connect(s.port)
        data = read_all(sock)
        elapsed = time.monotonic() - t0
        assert data == b"", data  # no 408 for a connection that never spoke
        assert 0.45 <= elapsed <= 3.0, elapsed
        s.read_stats(lambda st: st["http"]["timeouts"]["first_byte"] == 1 and
                     st["net"]["closed_by_reason"]["keepalive_timeout"] == 1)


def test_keepalive_timeout_closes_idle_connection():
    with Server("--keepalive-timeout", "500ms") as s:
        sock = connect(s.port)
        t0 = time.monotonic()  # before the answer, after which the timeout starts
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        read_responses(sock, 1)
        assert read_all(sock) == b""
        elapsed = time.monotonic() - t0
        assert 0.45 <= elapsed <= 3.0, elapsed


def test_request_timeout_503_and_errors():
    with Server("--request-timeout", "300ms", "--max-header-bytes", "1024",
                "--max-body-bytes", "1000") as s:
        sock = connect(s.port)
        sock.sendall(b"GET /delay?ms=5000 HTTP/1.1\r\nHost: x\r\n\r\n")
        data = read_all(sock)
        assert data.startswith(b"HTTP/1.1 503 "), data
        assert b"Connection: close" in data
        for req, status in [(b"BLAH\r\n\r\n", 400),
                            (b"GET / HTTP/1.1\r\nX: " + b"a" * 2000 + b"\r\n\r\n", 431),
                            (b"POST /echo HTTP/1.1\r\nContent-Length: 5000\r\n\r\n", 413)]:
            sock = connect(s.port)
            sock.sendall(req)
            data = read_all(sock)
            assert data.startswith(b"HTTP/1.1 %d " % status), (req[:20], data)
            assert b"Connection: close" in data
            assert b"Content-Length: " in data
        s.read_stats(lambda st: st["http"]["parse_errors"] == 1 and
                     st["http"]["header_too_large"] == 1 and st["http"]["body_too_large"] == 1 and
                     st["http"]["timeouts"]["request"] == 1)


def test_sigterm_drains_in_flight_requests():
    s = Server("--drain-timeout", "5s")
    try:
        idle = connect(s.port)
        idle.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        read_responses(idle, 1)
        busy = connect(s.port)
        busy.sendall(b"GET /delay?ms=500 HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.1)
        s.proc.send_signal(signal.SIGTERM)
        (status, headers, body), = read_responses(busy, 1)
        assert status == 200 and body == b"delayed 500 ms\n"
        assert headers.get("connection") == "close", headers
        assert read_all(idle) == b""  # the idle keep-alive connection was closed
        assert s.proc.wait(timeout=10) == 0
    finally:
        s.stop()


def test_slow_reader_hits_send_timeout():
    with Server("--send-timeout", "500ms", "--max-body-bytes", "64000000",
                "--request-timeout", "0", "--body-timeout", "0") as s:
        sock = connect(s.port, timeout=30)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        body = b"x" * (24 * 1024 * 1024)
        sock.sendall(b"POST /echo HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        # Never read: the echo cannot be written, so the connection must be closed.
        # (the net counters are published every 500 ms, the http ones at each close)
        s.read_stats(lambda st: st["http"]["timeouts"]["send"] >= 1 and
                     st["net"]["closed_by_reason"]["write_stall"] >= 1)
        sock.close()


def test_workers_share_the_port():
    with Server("--workers", "2") as s:
        for _ in range(10):
            c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=5)
            c.request("GET", "/")
            assert c.getresponse().read() == b"Hello from heartwheel\n"
            c.close()


def main():
    global BINARY
    BINARY = sys.argv[1]
    names = sys.argv[2:] or [n for n in globals() if n.startswith("test_")]
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("watchdog")))
    signal.alarm(WATCHDOG_SECONDS)
    failed = 0
    for name in names:
        t0 = time.monotonic()
        try:
            globals()[name]()
            print("ok   %s (%.2fs)" % (name, time.monotonic() - t0), flush=True)
        except Exception as e:  # report and go on: one run shows every failure
            failed += 1
            print("FAIL %s: %r" % (name, e), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
