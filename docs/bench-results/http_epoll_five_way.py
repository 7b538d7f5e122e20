#!/usr/bin/python3
"""Who sets the pace, and what polling does to p99 (docs/bench-history/http.md,
"Reading in arrival order"): heartwheel-http, nginx, and the bare epoll server
of http_epoll_lt_et.c in its three modes (level-triggered, edge-triggered, and
edge-triggered nested under a level-triggered epoll), in interleaved rounds of
wrk -t1 -c50 --latency, keep-alive GET /. The bare servers do nothing but
answer, so their rate is the most wrk can ask for on this machine. Prints one
JSON object (each server's rounds and medians).

  gcc -O2 docs/bench-results/http_epoll_lt_et.c -o /tmp/ep
  /usr/bin/python3 docs/bench-results/http_epoll_five_way.py build-rel/bin/heartwheel-http /tmp/ep 10 5s
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "hb", os.path.join(HERE, "..", "..", "tools", "http-bench", "http-bench.py"))
hb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hb)

server, bare, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
args = argparse.Namespace(server=server, nginx="/usr/sbin/nginx", workers=1, connections=50,
                          threads=1, duration=sys.argv[4] if len(sys.argv) > 4 else "5s",
                          tick="10ms", server_arg=[])


def start_bare(mode):
    def start(a):
        port = hb.free_port()
        p = subprocess.Popen([bare, str(mode), str(port)])
        hb.wait_listening(port)
        return p, port, lambda: hb.stop(p)
    return start


servers = {"heartwheel": hb.start_heartwheel, "nginx": hb.start_nginx,
           "c_lt": start_bare(0), "c_et": start_bare(1), "c_nested_et": start_bare(2)}
names = list(servers)
res = {n: [] for n in names}
load = [os.getloadavg()[0]]
for i in range(rounds):
    order = names[i % len(names):] + names[:i % len(names)]
    if i % 2:
        order = order[::-1]
    for n in order:
        r = hb.bench(servers[n], args)
        res[n].append(r)
        print(i, n, r["requests_per_sec"], r["latency_p99_ms"], file=sys.stderr, flush=True)
        time.sleep(0.5)
load.append(os.getloadavg()[0])
out = {"loadavg_1m": load, "rounds": rounds, "duration": args.duration}
for n in names:
    rs = res[n]
    out[n] = {k: [r[k] for r in rs] for k in ("requests_per_sec", "latency_p50_ms",
              "latency_p99_ms", "server_cpu_us_per_request", "client_cpu_cores",
              "client_waits_per_request", "client_cpu_us_per_request", "non_2xx")}
    out[n]["median_rps"] = hb.median(out[n]["requests_per_sec"])
    out[n]["median_p99_ms"] = hb.median(out[n]["latency_p99_ms"])
print(json.dumps(out))
