#!/usr/bin/env python3
"""Loopback tests of --metrics-listen on every server program: live scrapes
over HTTP after real connections (values checked), `promtool check metrics`
(Debian's prometheus package) on each live scrape, a pre-forked echo server
whose scrape covers every process, heartwheel-chat with WebSocket clients
subscribed and publishing (its ws and pub/sub families) and its protection
flags, and the endpoint's own connections left out of the counts.

Usage: metrics_programs_test.py ECHO HTTP RPC_SERVER CHAT [test-name ...]
Every server binds port 0 and prints its real ports; every process started
is stopped by PID; a watchdog (SIGALRM) ends a hung run. Counters reach a
scrape within a publish interval (500 ms), so checks poll with generous
bounds for a loaded 2-core machine.
"""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chat_support import RawClient  # noqa: E402  (standard library only)

ECHO = HTTP = RPC_SERVER = CHAT = None
WATCHDOG_SECONDS = 120
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$')


class Server:
    """A server program with --metrics-listen 127.0.0.1:0; reads both ports."""

    def __init__(self, binary, *flags):
        self.proc = subprocess.Popen(
            [binary, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", *flags],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = self.proc.stdout.readline()
        second = self.proc.stdout.readline()
        if not first.startswith("listening on ") or not second.startswith("metrics on 127.0.0.1:"):
            self.stop()
            raise AssertionError("server did not start: %r %r %s"
                                 % (first, second, self.proc.stderr.read()))
        self.port = int(first.rsplit(":", 1)[1])
        self.metrics_port = int(second.rsplit(":", 1)[1])

    def scrape_text(self):
        c = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=10)
        c.request("GET", "/metrics")
        r = c.getresponse()
        body = r.read().decode()
        c.close()
        assert r.status == 200, (r.status, body)
        assert r.getheader("Content-Type").startswith("text/plain; version=0.0.4"), r.getheaders()
        return body

    def scrape(self):
        return parse(self.scrape_text())

    def wait_for(self, ready, what):
        """The first scrape for which ready(samples) holds (10 s at most)."""
        samples = None
        for _ in range(200):
            samples = self.scrape()
            if ready(samples):
                return samples
            time.sleep(0.05)
        raise AssertionError("never saw %s; last scrape: %r" % (what, samples))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc.stdout.close()
        self.proc.stderr.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def parse(text):
    """{'name{labels}': value} of every sample; fails on a line it cannot read."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, "not a sample line: %r" % line
        out[m.group(1)] = float(m.group(2))
    return out


def promtool_check(text):
    """`promtool check metrics` (format and lint) on an exposition."""
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found: tools/install-deps installs Debian's prometheus package"
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(), \
        "promtool: rc=%d %s %s" % (r.returncode, r.stdout, r.stderr)


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def echo_round_trip(sock, payload=b"ping"):
    sock.sendall(payload)
    got = b""
    while len(got) < len(payload):
        chunk = sock.recv(4096)
        assert chunk, "closed during an echo"
        got += chunk
    assert got == payload


# ---------------------------------------------------------------- the tests

def test_echo_scrape_counts_connections_and_closes():
    with Server(ECHO, "--read-idle", "1s", "--workers", "2") as s:
        quiet, leaving, chatty = connect(s.port), connect(s.port), connect(s.port)
        for sock in (quiet, leaving, chatty):
            echo_round_trip(sock)
        # All three in one wait: a worker's copy made between an accept and
        # its read shows the connection open but not its bytes, and stays
        # the scrape's for a publish interval.
        m = s.wait_for(lambda m: m["heartwheel_connections_open"] == 3
                       and m["heartwheel_connections_accepted_total"] == 3
                       and m["heartwheel_bytes_read_total"] == 12, "3 open connections, 12 bytes")
        assert m["heartwheel_loops"] == 2, m
        leaving.close()
        # `quiet` says nothing more: closed for read_idle after 1 s; `chatty` talks on.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            echo_round_trip(chatty)
            m = s.scrape()
            if m['heartwheel_connections_closed_total{reason="read_idle"}'] == 1 and \
                    m['heartwheel_connections_closed_total{reason="peer_closed"}'] == 1:
                break
            time.sleep(0.1)
        assert m['heartwheel_connections_closed_total{reason="read_idle"}'] == 1, m
        assert m['heartwheel_connections_closed_total{reason="peer_closed"}'] == 1, m
        assert m['heartwheel_idle_events_total{kind="read_idle"}'] == 1, m
        assert m["heartwheel_connections_open"] == 1, m
        assert m["heartwheel_timer_lateness_seconds_count"] >= 1, m
        assert m['heartwheel_timer_lateness_seconds_bucket{le="+Inf"}'] == \
            m["heartwheel_timer_lateness_seconds_count"], m
        assert m["heartwheel_wheel_entries"] >= 1, m  # chatty's deadline set
        assert m["heartwheel_write_queue_bytes"] == 0, m
        assert quiet.recv(1) == b""  # the server did close it
        promtool_check(s.scrape_text())
        chatty.close()
        quiet.close()


def test_http_scrape_counts_requests_by_class_and_duration():
    with Server(HTTP, "--workers", "2") as s:
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
        for path, status in (("/", 200), ("/nope", 404), ("/delay?ms=80", 200)):
            c.request("GET", path)
            r = c.getresponse()
            r.read()
            assert r.status == status, (path, r.status)
        # The connection stays open: its requests are in the scrape anyway.
        # One wait for all: a request is counted when it begins, its response
        # when it is sent, so a copy published during the 80 ms delay shows
        # 3 requests and 2 answers; and the net family is published apart
        # from the http one, so it may still show no connection. Either
        # stays the scrape's for a publish interval.
        m = s.wait_for(lambda m: m["heartwheel_http_requests_total"] == 3
                       and m['heartwheel_http_responses_total{class="2xx"}'] == 2
                       and m['heartwheel_http_responses_total{class="4xx"}'] == 1
                       and m["heartwheel_http_request_duration_seconds_count"] == 3
                       and m["heartwheel_connections_open"] == 1,
                       "3 requests answered on 1 open connection")
        # The delayed answer took at least 80 ms; the other two far less.
        assert m['heartwheel_http_request_duration_seconds_bucket{le="0.064"}'] == 2, m
        assert m["heartwheel_http_request_duration_seconds_sum"] >= 0.08, m
        promtool_check(s.scrape_text())
        c.close()


def test_rpc_server_scrape_counts_pings_and_pong_timeouts():
    with Server(RPC_SERVER, "--heartbeat", "200ms") as s:
        silent = connect(s.port)  # never answers the server's pings
        m = s.wait_for(
            lambda m: m['heartwheel_connections_closed_total{reason="pong_timeout"}'] == 1,
            "a pong_timeout close")
        assert m["heartwheel_rpc_pong_timeouts_total"] == 1, m
        assert m['heartwheel_rpc_frames_sent_total{type="ping"}'] >= 1, m
        assert m['heartwheel_idle_events_total{kind="pong_timeout"}'] == 1, m
        assert m["heartwheel_connections_open"] == 0, m
        promtool_check(s.scrape_text())
        silent.close()


def recv_until(client, ready):
    """The first JSON message from the chat server for which ready(msg) holds."""
    for _ in range(100):
        msg = client.recv_json()
        if ready(msg):
            return msg
    raise AssertionError("no such message in 100")


def test_chat_scrape_counts_websockets_and_pubsub():
    with Server(CHAT, "--workers", "2", "--stats-interval", "100ms",
                "--ping-interval", "300ms", "--pong-timeout", "5s") as s:
        m = s.scrape()  # before any connection: every family is there, with zeros
        assert m["heartwheel_ws_connections_open"] == 0, m
        assert m['heartwheel_pubsub_deliveries_total{outcome="delivered"}'] == 0, m
        promtool_check(s.scrape_text())
        alice = RawClient(s.port, "/ws?name=alice")
        bob = RawClient(s.port, "/ws?name=bob")
        for i, c in enumerate((alice, bob)):
            c.send(0x1, json.dumps({"id": 1, "op": "subscribe", "channel": "room1"}))
            assert recv_until(c, lambda msg: msg.get("id") == 1)["ok"] is True
        alice.send(0x1, json.dumps({"id": 2, "op": "publish", "channel": "room1",
                                    "data": {"text": "hi"}}))
        pub = recv_until(bob, lambda msg: msg.get("data") == {"text": "hi"})
        assert pub["channel"] == "room1", pub
        recv_until(alice, lambda msg: msg.get("id") == 2)
        # The net family in the wait too: runtime::Workers publishes it on a timer
        # of its own, apart from the worker's ws and pub/sub copy (both every
        # --stats-interval here).
        m = s.wait_for(lambda m: m["heartwheel_pubsub_publications_total"] == 1
                       and m['heartwheel_pubsub_deliveries_total{outcome="delivered"}'] == 2
                       and m["heartwheel_ws_pings_sent_total"] >= 2
                       and m["heartwheel_connections_open"] == 2, "a publication to 2")
        assert m["heartwheel_ws_connections_open"] == 2, m
        assert m["heartwheel_ws_connections_opened_total"] == 2, m
        assert m["heartwheel_ws_messages_received_total"] == 3, m  # 2 subscribes, 1 publish
        assert m["heartwheel_ws_shared_messages_sent_total"] >= 2, m  # the publication, shared
        assert m["heartwheel_pubsub_subscriptions"] == 2, m
        assert m["heartwheel_pubsub_subscribes_total"] == 2, m
        assert m["heartwheel_pubsub_channels"] == 1, m
        assert m["heartwheel_pubsub_bus_publications_total"] == 1, m
        assert m["heartwheel_pubsub_history_publications"] == 1, m
        assert m['heartwheel_ws_slow_consumer_total{policy="close"}'] == 0, m
        # A peer's private close code counts under 4xxx, and its subscription ends.
        alice.send_close(4321, b"bye")
        alice.expect_close()
        m = s.wait_for(lambda m: m.get('heartwheel_ws_close_frames_received_total{code="4xxx"}') == 1
                       and m["heartwheel_pubsub_subscriptions"] == 1, "alice gone")
        assert m["heartwheel_ws_connections_open"] == 1, m
        assert m["heartwheel_pubsub_unsubscribes_total"] == 1, m
        promtool_check(s.scrape_text())
        alice.close()
        bob.close()


def test_chat_takes_the_protection_flags():
    with Server(CHAT, "--max-connections-per-ip", "1", "--stats-interval", "100ms") as s:
        first = RawClient(s.port, "/ws?name=first")
        assert first.status == 101, first.status
        # Over the per-address limit: reset at once, so fast that even the
        # connect may already see the reset.
        try:
            second = socket.create_connection(("127.0.0.1", s.port), timeout=10)
            try:
                assert second.recv(1) == b""
            finally:
                second.close()
        except ConnectionResetError:
            pass
        # The net counters and the WebSocket ones are copied by separate
        # timers: wait for both.
        m = s.wait_for(lambda m: m['heartwheel_connections_closed_total{reason="ip_limit"}'] == 1
                       and m["heartwheel_ws_connections_open"] == 1, "an ip_limit close")
        assert m["heartwheel_connections_open"] == 1, m
        first.close()
    r = subprocess.run([CHAT, "--listen", "127.0.0.1:0", "--overload-start", "10"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--overload-saturation" in r.stderr, (r.returncode, r.stderr)


def test_prefork_echo_scrape_covers_every_process():
    with Server(ECHO, "--processes", "2", "--workers", "2") as s:
        # 20 connections: the kernel spreads them over both processes'
        # listeners, so no single process holds them all.
        socks = [connect(s.port) for _ in range(20)]
        for sock in socks:
            echo_round_trip(sock)
        s.wait_for(lambda m: m["heartwheel_connections_open"] == 20, "20 open connections")
        # Every scrape, whichever process answers it, has every process's loops.
        for _ in range(6):
            m = s.scrape()
            assert m["heartwheel_loops"] == 4, m
            assert m["heartwheel_connections_open"] == 20, m
            assert m["heartwheel_connections_accepted_total"] == 20, m
            assert m["heartwheel_bytes_read_total"] == 80, m
        for sock in socks[:5]:
            sock.close()
        m = s.wait_for(lambda m: m['heartwheel_connections_closed_total{reason="peer_closed"}'] == 5
                       and m["heartwheel_connections_open"] == 15, "5 closed")
        promtool_check(s.scrape_text())
        for sock in socks[5:]:
            sock.close()


def test_prefork_children_each_serve_the_metrics_port():
    with Server(ECHO, "--processes", "2") as s:
        children = subprocess.run(["pgrep", "-P", str(s.proc.pid)], capture_output=True,
                                  text=True).stdout.split()
        assert len(children) == 2, children
        # Every child listens on the metrics port (SO_REUSEPORT); the parent does not.
        listening = {pid: ":%04X" % s.metrics_port in listening_ports(pid) for pid in children}
        assert all(listening.values()), listening
        assert ":%04X" % s.metrics_port not in listening_ports(str(s.proc.pid))


def listening_ports(pid):
    """The local addresses of the process's listening TCP sockets (hex, as in /proc/net/tcp)."""
    inodes = set()
    for fd in os.listdir("/proc/%s/fd" % pid):
        try:
            target = os.readlink("/proc/%s/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = []
    with open("/proc/%s/net/tcp" % pid) as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                out.append(fields[1])
    return " ".join(out)


def test_scrapes_are_not_counted_as_connections():
    with Server(ECHO) as s:
        for _ in range(5):
            m = s.scrape()
            assert m["heartwheel_connections_accepted_total"] == 0, m
            assert m["heartwheel_connections_open"] == 0, m
            assert m["heartwheel_bytes_read_total"] == 0, m
        # Two publishes after the scrapes (each shows a new loop iteration
        # count): a counted scrape would show by now.
        seen = {m["heartwheel_loop_iterations_total"]}
        m = s.wait_for(lambda m: seen.add(m["heartwheel_loop_iterations_total"]) or len(seen) >= 3,
                       "two publishes after the scrapes")
        assert m["heartwheel_connections_accepted_total"] == 0, m
        assert m["heartwheel_connections_open"] == 0, m
        assert m["heartwheel_bytes_read_total"] == 0, m
        sock = connect(s.port)
        echo_round_trip(sock)
        m = s.wait_for(lambda m: m["heartwheel_connections_accepted_total"] == 1, "1 connection")
        assert m["heartwheel_connections_open"] == 1, m
        sock.close()


def test_bad_metrics_listen_is_a_usage_error_and_a_taken_port_a_failure():
    for binary in (ECHO, HTTP, RPC_SERVER, CHAT):
        r = subprocess.run([binary, "--listen", "127.0.0.1:0", "--metrics-listen", "nonsense"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, (binary, r.returncode, r.stderr)
        assert "error:" in r.stderr, r.stderr
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    for binary in (ECHO, HTTP, RPC_SERVER, CHAT):
        r = subprocess.run([binary, "--listen", "127.0.0.1:0",
                            "--metrics-listen", "127.0.0.1:%d" % port],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 1, (binary, r.returncode, r.stdout, r.stderr)
        assert "error:" in r.stderr, r.stderr
    taken.close()


def main():
    global ECHO, HTTP, RPC_SERVER, CHAT
    ECHO, HTTP, RPC_SERVER, CHAT = sys.argv[1:5]
    names = sys.argv[5:] or [n for n in globals() if n.startswith("test_")]
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
