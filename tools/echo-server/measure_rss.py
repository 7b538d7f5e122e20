#!/usr/bin/env python3
# RSS growth of heartwheel-echo per idle connection, --timers wheel vs uv;
# with the argument `proxy`: --timers wheel without and with --proxy-protocol
# (each connection sends a v1 header first, which the server keeps).
# Run from anywhere after building; figures are in docs/BENCHMARKS.md.
import os
# HEARTWHEEL_ECHO: the binary (default build/bin/heartwheel-echo);
# HEARTWHEEL_CONNECTIONS: how many idle connections (default 8000).
BIN = os.environ.get('HEARTWHEEL_ECHO') or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), '..', '..', 'build', 'bin', 'heartwheel-echo')
N = int(os.environ.get('HEARTWHEEL_CONNECTIONS', '8000'))
import socket, subprocess, sys, time, os
def connect(port, proxy, i):
    s = socket.create_connection(("127.0.0.1", port))
    if proxy:
        s.sendall(f"PROXY TCP4 192.0.2.{i % 250 + 1} 127.0.0.1 {1024 + i % 60000} {port}\r\n".encode())
    return s
def run(timers, proxy=False):
    extra = ["--proxy-protocol"] if proxy else []
    p = subprocess.Popen([BIN, "--read-idle", "10m", "--timers", timers, "--stats-interval", "0"] + extra, stdout=subprocess.PIPE, text=True)
    port = int(p.stdout.readline().strip().rsplit(":",1)[1])
    import atexit
    atexit.register(lambda: p.poll() is None and p.terminate())  # never leave the server behind
    def rss():
        for l in open(f"/proc/{p.pid}/status"):
            if l.startswith("VmRSS"): return int(l.split()[1])
    time.sleep(0.2)
    # warm up: 200 connections so one-time allocations are paid
    warm = [connect(port, proxy, i) for i in range(200)]
    time.sleep(0.3)
    r0 = rss()
    socks = [connect(port, proxy, i) for i in range(N)]
    # A loaded machine may lag behind the accepts: wait until RSS holds still
    # for a second (at most 20 s).
    r1, deadline = rss(), time.time() + 20
    while time.time() < deadline:
        time.sleep(1.0)
        r = rss()
        if r == r1: break
        r1 = r
    print(f"{timers}{' --proxy-protocol' if proxy else ''}: RSS delta {(r1-r0)} KiB for {N} idle connections = {(r1-r0)*1024/N:.0f} bytes/connection (user space)")
    p.terminate(); p.wait()
    for s in socks + warm: s.close()
if sys.argv[1:] == ["proxy"]:
    run("wheel"); run("wheel", proxy=True)
else:
    run("wheel"); run("uv")
