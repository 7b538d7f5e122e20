#!/usr/bin/env python3
"""The echo server a user would copy (examples/echo, heartwheel-echo-example)
and README.md's quick start (built by tests/quick_start/extract.py), run as
processes: echo, the heartbeat's ping, the read-idle close, the drain on
SIGTERM, usage errors.

Usage: echo_example_test.py ECHO_EXAMPLE QUICK_START [test-name ...]
Every server binds port 0 and prints its real port; every process started is
stopped by PID; a watchdog (SIGALRM) ends a hung run. Time bounds: never
early, and late by at most seconds, for a loaded 2-core machine.
"""
import os
import re
import signal
import socket
import subprocess
import sys
import time

import script_tests

EXAMPLE = None
QUICK_START = None
WATCHDOG_SECONDS = 100


class Server:
    """One server process on a free loopback port; stdout gives the port."""

    def __init__(self, *argv):
        self.proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on 127.0.0.1:"):
            self.stop()
            raise AssertionError("server did not start: %r %s" % (line, self.proc.stderr.read()))
        self.port = int(line.rsplit(":", 1)[1])

    def finish(self, sig=signal.SIGTERM, timeout=15):
        """Sends `sig`, waits; returns (status, rest of stdout, stderr)."""
        self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=10)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def connect(port):
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def read_exactly(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise AssertionError("closed after %r" % data)
        data += chunk
    return data


def read_until_closed(sock):
    """Everything the server sends until it closes; the time of the close."""
    data = b""
    while True:
        try:
            chunk = sock.recv(4096)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return data, time.monotonic()
        data += chunk


def test_echoes_and_pings_a_quiet_peer():
    # READ_IDLE 1.2s: a ping after 0.4 s without a write from the server.
    with Server(EXAMPLE, "127.0.0.1:0", "1200ms") as s:
        sock = connect(s.port)
        sock.sendall(b"hello\n")
        assert read_exactly(sock, 6) == b"hello\n"
        echoed = time.monotonic()
        assert read_exactly(sock, 5) == b"ping\n"
        waited = time.monotonic() - echoed
        assert 0.38 <= waited < 5, waited  # write idle 400 ms, never early
        sock.close()


def test_live_peer_stays_silent_peer_closed_after_read_idle():
    with Server(EXAMPLE, "127.0.0.1:0", "1s") as s:
        started = time.monotonic()
        silent = connect(s.port)
        live = connect(s.port)
        # The live peer sends every 200 ms for 2.5 read-idle periods.
        received = b""
        while time.monotonic() - started < 2.5:
            live.sendall(b"x")
            live.settimeout(0.2)
            try:
                received += live.recv(4096)
            except socket.timeout:
                pass
        live.settimeout(10)
        data, closed_at = read_until_closed(silent)
        assert closed_at - started >= 0.99, closed_at - started  # never before 1 s of silence
        # Pings came before the close (write idle: a third of read idle).
        assert data.startswith(b"ping\n") and set(data.split(b"\n")) <= {b"ping", b""}, data
        assert received.replace(b"ping\n", b"").startswith(b"x"), received
        live.sendall(b"y")  # still open, still served
        got = b""
        while not got.endswith(b"y"):  # after any pings and echoes still on their way
            chunk = live.recv(4096)
            assert chunk, "the live peer was closed"
            got += chunk
        status, _, err = s.finish()
        live.close()
        assert status == 0, (status, err)
        assert err.count("closed: read_idle") == 1, err
        assert err.count("closed: drain") == 1, err  # the live one, at SIGTERM


def test_sigterm_says_bye_and_drains():
    with Server(EXAMPLE, "127.0.0.1:0", "30s") as s:
        sock = connect(s.port)
        sock.sendall(b"hi\n")
        assert read_exactly(sock, 3) == b"hi\n"
        s.proc.send_signal(signal.SIGTERM)
        data, _ = read_until_closed(sock)
        assert data == b"bye\n", data
        status, out, err = s.finish(signal.SIGTERM)  # already draining: a second signal is harmless
        assert status == 0, (status, err)
        assert "heartwheel-echo-example: signal 15, draining (up to 5s)" in err, err
        assert "closed: drain" in err, err


def test_bad_arguments_are_usage_errors():
    for argv in (["127.0.0.1:0", "5x"], ["nowhere"]):
        r = subprocess.run([EXAMPLE, *argv], capture_output=True, text=True, timeout=10)
        assert r.returncode == 2, (argv, r.returncode, r.stderr)
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("heartwheel-echo-example: error: "), r.stderr
        assert r.stdout == "", r.stdout


def test_readme_quick_start_serves_and_drains():
    with Server(QUICK_START, "0") as s:
        sock = connect(s.port)
        sock.sendall(b"hello")
        assert read_exactly(sock, 5) == b"hello"
        status, out, err = s.finish()
        data, _ = read_until_closed(sock)
        assert data == b"", data
        assert status == 0, (status, err)
        assert out == "served 1 connections\n", out
        name = os.path.basename(QUICK_START)
        # One line of the process log: its UTC time, then the program's own words.
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z %s: signal 15, "
                            r"draining \(up to 10s\)\n" % re.escape(name), err), err


def main():
    global EXAMPLE, QUICK_START
    EXAMPLE, QUICK_START = sys.argv[1], sys.argv[2]
    return script_tests.run(globals(), sys.argv[3:], WATCHDOG_SECONDS)


if __name__ == "__main__":
    sys.exit(main())
