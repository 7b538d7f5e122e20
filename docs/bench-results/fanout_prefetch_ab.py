#!/usr/bin/python3
"""A/B of heartwheel-chat's fan-out CPU: the heartwheel-chat and
heartwheel-load of two build directories, alternating round by round, each
round tools/ws-compare/run.py's measure() (9,000 subscribers, 5
publications a second, 837,000 deliveries). Prints user and system CPU per
delivered message per round, then all rounds as JSON.

Usage: ulimit -n 20000; docs/bench-results/fanout_prefetch_ab.py BUILD_A BUILD_B [--rounds N]
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "ws-compare"))
import run  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("builds", nargs=2)
ap.add_argument("--rounds", type=int, default=3)
a = ap.parse_args()
args = argparse.Namespace(connections=9000, rate=5, settle=5, duration=30, connect_rate=2000,
                          ping_interval=60, chat_arg=[], with_uring_fanout=False)
res = {b: [] for b in a.builds}
for r in range(a.rounds):
    for b in (a.builds if r % 2 == 0 else a.builds[::-1]):
        bins = {"chat": b + "/bin/heartwheel-chat", "load": b + "/bin/heartwheel-load"}
        m = run.measure("heartwheel", args, bins)
        res[b].append((m["user_per_delivered_message_us"], m["system_per_delivered_message_us"],
                       m["delivered"], m["missing"]))
        print(b, res[b][-1], open("/proc/loadavg").read().split()[0], flush=True)
print(json.dumps(res))
