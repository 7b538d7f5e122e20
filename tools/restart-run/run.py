#!/usr/bin/python3
"""The restart at full size (issue 39, docs/operating.md): heartwheel-chat with
--redis and N WebSocket clients (10,000 by default) spread over channels, a
publisher and a loop of plain HTTP requests throughout; `kill -USR2` replaces
the process. Prints one JSON line: connections refused (must be 0), clients
that came back and recovered, publications missed, and the histogram of the
clients' reconnects over the drain window (when each got close 1012 and went
to the successor), in tenths of the window.

usage: tools/restart-run/run.py [--chat BIN] [--clients N] [--channels N]
                                [--drain 20s] [--workers N] [--ramp N]
Run under /usr/bin/python3 (python3-websockets). docs/BENCHMARKS.md quotes it."""
import argparse
import json
import os
import resource
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from restart_clients import run_restart  # noqa: E402


def seconds(text):
    units = {"ms": 0.001, "s": 1, "m": 60}
    for u in ("ms", "s", "m"):
        if text.endswith(u):
            return float(text[:-len(u)]) * units[u]
    raise SystemExit("--drain: a duration like 20s")


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chat", default=os.path.join(root, "build", "bin", "heartwheel-chat"))
    ap.add_argument("--clients", type=int, default=10000)
    ap.add_argument("--channels", type=int, default=100)
    ap.add_argument("--drain", default="20s")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--ramp", type=int, default=300, help="clients connecting per second")
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if a.clients + 100 > hard:
        raise SystemExit("--clients %d: the descriptor limit is %d" % (a.clients, hard))
    subs, acked, counts, sent = run_restart(a.chat, a.clients, a.drain, a.channels, a.workers,
                                            every=0.02, ramp=a.ramp)
    window = seconds(a.drain)
    spread = 0.8 * window  # serve's RestartOptions::spread
    closes = sorted(t for s in subs for t, _ in s.closes)
    start = closes[0] if closes else sent  # the handover: the first client told
    hist = [0] * 11
    for t in closes:
        hist[min(10, max(0, int((t - start) / spread * 10)))] += 1
    back = sorted(d for s in subs for _, d in s.back)
    missed = 0
    for s in subs:
        offs = acked.get(s.channel, [])
        if offs:
            got = set(s.offsets)
            missed += sum(1 for o in offs if o not in got)
    codes = {}
    for s in subs:
        for _, c in s.closes:
            codes[str(c)] = codes.get(str(c), 0) + 1
    print(json.dumps({
        "clients": a.clients, "channels": a.channels, "workers": a.workers, "drain_s": window,
        "http_requests": counts, "refused_websocket_connects": sum(s.refused for s in subs),
        "connect_errors": sum(s.connect_errors for s in subs), "close_codes": codes, "clients_closed_once": sum(len(s.closes) == 1 for s in subs),
        "clients_recovered": sum(s.recovered == [True] for s in subs),
        "publications": sum(map(len, acked.values())), "missed": missed,
        "handover_after_signal_s": round(start - sent, 3) if closes else None,
        "spread_s": spread,
        "closes_by_tenth_of_spread": hist[:10], "closes_after_spread": hist[10],
        "last_close_after_handover_s": round(closes[-1] - start, 3) if closes else None,
        "back_in_s": {"p50": round(back[len(back) // 2], 3), "p99": round(back[len(back) * 99 // 100], 3),
                      "max": round(back[-1], 3)} if back else None,
    }))


if __name__ == "__main__":
    main()
