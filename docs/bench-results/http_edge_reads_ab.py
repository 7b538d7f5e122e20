#!/usr/bin/python3
"""The edge-triggered read path against libuv's level-triggered one and nginx
(docs/bench-history/http.md, "Reading in arrival order"): one heartwheel-http
binary run both ways (--level-triggered-reads), and nginx, in interleaved
rounds of wrk -t1 -c50 --latency, keep-alive GET /. Uses tools/http-bench's
functions; prints one JSON object (each server's rounds and medians).

  /usr/bin/python3 docs/bench-results/http_edge_reads_ab.py build-rel/bin/heartwheel-http 10 5s
"""
import argparse
import importlib.util
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "hb", os.path.join(HERE, "..", "..", "tools", "http-bench", "http-bench.py"))
hb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hb)

server, rounds = sys.argv[1], int(sys.argv[2])
duration = sys.argv[3] if len(sys.argv) > 3 else "5s"


def args_for(extra):
    return argparse.Namespace(server=server, nginx="/usr/sbin/nginx", workers=1, connections=50,
                              threads=1, duration=duration, tick="10ms", server_arg=extra)


starts = {"edge": (hb.start_heartwheel, args_for([])),
          "level": (hb.start_heartwheel, args_for(["--level-triggered-reads"])),
          "nginx": (hb.start_nginx, args_for([]))}
names = list(starts)
res = {n: [] for n in names}
load = [os.getloadavg()[0]]
for i in range(rounds):
    order = names[i % 3:] + names[:i % 3]  # each server first, middle and last in turn
    for n in order:
        r = hb.bench(*starts[n])
        res[n].append(r)
        print(i, n, r["requests_per_sec"], r["latency_p99_ms"], file=sys.stderr, flush=True)
        time.sleep(0.5)
load.append(os.getloadavg()[0])
out = {"rounds": rounds, "duration": duration, "loadavg_1m": load,
       "command": res["edge"][0]["command"]}
for n in names:
    rs = res[n]
    out[n] = {k: [r[k] for r in rs] for k in ("requests_per_sec", "latency_p50_ms",
                                              "latency_p99_ms", "server_cpu_us_per_request",
                                              "client_cpu_cores", "non_2xx")}
    out[n]["median_rps"] = hb.median(out[n]["requests_per_sec"])
    out[n]["median_p99_ms"] = hb.median(out[n]["latency_p99_ms"])
    out[n]["median_cpu_us_per_request"] = hb.median(out[n]["server_cpu_us_per_request"])
# Rounds where edge's p99 is below level's (the rounds are interleaved: pairs by index).
out["edge_p99_below_level_rounds"] = sum(
    e < l for e, l in zip(out["edge"]["latency_p99_ms"], out["level"]["latency_p99_ms"]))
out["edge_p99_below_nginx_rounds"] = sum(
    e < n for e, n in zip(out["edge"]["latency_p99_ms"], out["nginx"]["latency_p99_ms"]))
print(json.dumps(out))
