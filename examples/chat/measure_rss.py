#!/usr/bin/env python3
"""Server RSS per WebSocket connection of heartwheel-chat: N connections
through /ws, idle, then subscribed (each to one of 10 rooms). User-space
memory only (VmRSS growth after 200 warm-up connections).
Usage: examples/chat/measure_rss.py [N [SERVER_FLAG...]]   (after building; N
defaults to 5000, run with `ulimit -n 20000`: client and server each hold N
descriptors; flags go to heartwheel-chat, e.g. --no-join-leave)."""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))
from chat_support import TEXT, RawClient, Server  # noqa: E402

BIN = os.path.join(HERE, "..", "..", "build", "bin", "heartwheel-chat")


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) * 1024
    return 0


def measure(n, subscribe, flags=()):
    with Server(BIN, *flags) as s:
        warm = [RawClient(s.port, "/ws?name=warm") for _ in range(200)]
        for c in warm:
            c.recv_json()
        time.sleep(0.5)
        before = rss(s.proc.pid)
        clients = []
        for i in range(n):
            c = RawClient(s.port, "/ws?name=u%d" % i)
            c.recv_json()  # connect
            if subscribe:
                c.send(TEXT, json.dumps({"id": 1, "op": "subscribe", "channel": "room%d" % (i % 10)}))
            clients.append(c)
        if subscribe:
            for c in clients:
                while "id" not in c.recv_json():  # presence events come too
                    pass
        time.sleep(1.0)
        grown = rss(s.proc.pid) - before
        print("%d connections, %s: %.0f bytes of server RSS each"
              % (n, "each subscribed to 1 of 10 rooms" if subscribe else "idle", grown / n))
        for c in clients + warm:
            c.close()


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    measure(n, False, sys.argv[2:])
    measure(n, True, sys.argv[2:])
