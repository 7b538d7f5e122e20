#!/usr/bin/env python3
"""Bytes per idle WebSocket connection of heartwheel-load's ws mode, for two
builds of heartwheel-load in the same run (before and after a change), both
against one heartwheel-chat.

Each build runs twice, with --connections N and with N / 10 subscribers
(one worker process, a few publications so that every subscriber has read
messages, then idle); the worker's RSS is sampled once the publications are
over, and bytes per connection = (RSS(N) - RSS(N/10)) / (N - N/10): what
one more idle, subscribed connection costs, the process's fixed part left
out.

Usage: ws_load_memory.py CHAT LOAD_BEFORE LOAD_AFTER [--connections N] [--json FILE]
Prints one JSON object: {"connections": N, "before": {...}, "after": {...}}.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import procs  # noqa: E402


def start_chat(binary):
    p = subprocess.Popen([binary, "--listen", "127.0.0.1:0", "--ping-interval", "30s",
                          "--tick", "10ms", "--no-join-leave"],
                         stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if not line.startswith("listening on "):
        p.kill()
        sys.exit("heartwheel-chat did not start: %r" % line)
    return p, line.split()[-1]


def worker_rss_kib(load_binary, target, connections, tmp):
    """Runs one ws-mode load and returns its worker's RSS (KiB) once the
    publications are over and every subscriber sits idle."""
    ramp_s = connections / 2000.0
    duration = ramp_s + 10
    out = os.path.join(tmp, "load.json")
    p = subprocess.Popen([load_binary, "--mode", "ws", "--target", target, "--connections",
                          str(connections), "--processes", "1", "--connect-rate", "2000",
                          "--channels", "1", "--publish-rate", "20", "--publish-start",
                          "%.3fs" % (ramp_s + 3), "--publish-stop-before", "4s", "--duration",
                          "%.3fs" % duration, "--quiet", "--json", out],
                         stdout=subprocess.DEVNULL)
    time.sleep(duration - 2)  # publications stopped 2 s ago: idle now
    workers = procs.process_tree(p.pid)[1:]
    rss = procs.rss_kib(workers)
    p.wait(timeout=60)
    with open(out) as f:
        r = json.load(f)
    if r["ws"]["upgraded"] != connections or r["ws"]["delivered"] == 0:
        sys.exit("the load run did not hold its subscribers: %s" % json.dumps(r["ws"]))
    return rss


def measure(load_binary, target, n, tmp):
    small = n // 10
    big_kib = worker_rss_kib(load_binary, target, n, tmp)
    small_kib = worker_rss_kib(load_binary, target, small, tmp)
    return {"rss_kib": big_kib, "rss_kib_at_tenth": small_kib,
            "bytes_per_connection": round((big_kib - small_kib) * 1024 / (n - small))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("chat")
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--connections", type=int, default=10000)
    ap.add_argument("--json")
    a = ap.parse_args()
    chat, target = start_chat(a.chat)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            result = {"connections": a.connections,
                      "before": measure(a.before, target, a.connections, tmp),
                      "after": measure(a.after, target, a.connections, tmp)}
    finally:
        chat.terminate()
        chat.wait(timeout=30)
    text = json.dumps(result, indent=2)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
