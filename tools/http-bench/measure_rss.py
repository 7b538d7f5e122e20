#!/usr/bin/env python3
"""User-space memory per connection: heartwheel-http keep-alive connections
(each has done one request and waits for the next) and heartwheel-echo idle
connections, measured as the server's RSS growth while N connections open.

Usage: measure_rss.py [--http BIN] [--echo BIN] [--connections N] [--json]
  --http / --echo   the server binaries (default: build/bin/ next to this
                    checkout); pass the binaries of two builds to compare them
  --connections     N per run (default 15000; one client process holds them,
                    so N stays under the per-process descriptor limit)
  --rounds          runs per server (default 1); each prints its own figure

Method: start the server on a free loopback port (one worker, every timeout
far away), open 200 warm-up connections (one request each for HTTP) so
one-time allocations are paid, read VmRSS from /proc/<pid>/status, open N
more the same way from source addresses 127.0.0.2-127.0.0.9 (to stay clear of
the ephemeral port range of one address), read VmRSS again. Kernel socket
memory is in neither figure. Every process started is stopped by PID; a
watchdog ends a hung run. Figures are in docs/BENCHMARKS.md.
"""
import argparse
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
from procs import read_http_response as read_response, rss_kib  # noqa: E402

BIN_DIR = os.path.join(HERE, "..", "..", "build", "bin")
REQUEST = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"


def start(cmd):
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise SystemExit("server did not start: %r" % line)
    return proc, int(line.strip().rsplit(":", 1)[1])


def open_connections(port, n, http, first=0):
    socks = []
    for i in range(first, first + n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.%d" % (2 + i % 8), 0))
        s.connect(("127.0.0.1", port))
        socks.append(s)
    if http:
        for s in socks:  # every request first, then every answer: one pass each
            s.sendall(REQUEST)
        for s in socks:
            read_response(s)
    return socks


def measure(kind, binary, n):
    if kind == "http":
        cmd = [binary, "--listen", "127.0.0.1:0", "--workers", "1", "--keepalive-timeout", "10m",
               "--header-timeout", "10m", "--request-timeout", "10m"]
    else:
        cmd = [binary, "--listen", "127.0.0.1:0", "--read-idle", "10m", "--stats-interval", "0"]
    proc, port = start(cmd)
    socks = []
    try:
        time.sleep(0.2)
        socks += open_connections(port, 200, kind == "http")
        time.sleep(0.3)
        before = rss_kib(proc.pid)
        socks += open_connections(port, n, kind == "http", first=200)
        time.sleep(0.5)
        after = rss_kib(proc.pid)
        if proc.poll() is not None:
            raise SystemExit("%s exited during the run" % binary)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for s in socks:
            s.close()
    return {"kind": kind, "binary": binary, "connections": n, "rss_before_kib": before,
            "rss_after_kib": after, "bytes_per_connection": round((after - before) * 1024 / n)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--http", default=os.path.join(BIN_DIR, "heartwheel-http"))
    ap.add_argument("--echo", default=os.path.join(BIN_DIR, "heartwheel-echo"))
    ap.add_argument("--connections", type=int, default=15000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if args.connections + 300 > hard:
        print("measure_rss.py: --connections %d needs more descriptors than the limit %d" %
              (args.connections, hard), file=sys.stderr)
        return 2
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("watchdog")))
    signal.alarm(600)
    for _ in range(args.rounds):
        for kind, binary in (("http", args.http), ("echo", args.echo)):
            r = measure(kind, binary, args.connections)
            if args.json:
                print(json.dumps(r), flush=True)
            else:
                print("%-4s %s: RSS +%d KiB for %d connections = %d bytes/connection" %
                      (kind, binary, r["rss_after_kib"] - r["rss_before_kib"], args.connections,
                       r["bytes_per_connection"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
