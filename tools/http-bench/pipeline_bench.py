#!/usr/bin/python3
"""What answering pipelined requests a few per loop turn costs a client that
pipelines (http::SessionOptions::pipeline_burst and pipeline_slice).

Starts build/bin/heartwheel-http once per setting (the defaults, the count
alone without the time slice, one request per turn, and no bound: a whole
read answered at once), and in alternating
rounds has C connections each send R pipelined `GET /` in one write, then
read all R answers. Prints one JSON object: per setting (medians of the
rounds) the server's CPU time per request (utime + stime from /proc: the cost
of the turns, independent of this Python client, which is usually the
bottleneck of requests/s) and requests/s, and each one's ratio to the
unbounded setting.

  /usr/bin/python3 tools/http-bench/pipeline_bench.py [--connections 20]
      [--requests 2000] [--rounds 5] [--server build/bin/heartwheel-http]

Exit status: 0 done, 1 a server did not start or answered wrongly.
"""
import argparse
import json
import os
import selectors
import socket
import statistics
import subprocess
import sys
import time

REQUEST = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
ANSWER_END = b"Hello from heartwheel\n"


def start(server, flags):
    proc = subprocess.Popen([server, "--listen", "127.0.0.1:0", "--workers", "1"] + flags,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        sys.exit(f"pipeline_bench: {server} did not start: {line!r}")
    return proc, int(line.rsplit(":", 1)[1])


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def round_once(port, connections, requests):
    """Seconds until every connection has all its answers."""
    sel = selectors.DefaultSelector()
    socks = []
    for _ in range(connections):
        s = socket.create_connection(("127.0.0.1", port))
        s.setblocking(False)
        socks.append(s)
    t0 = time.perf_counter()
    pending = {}
    for s in socks:
        s.setblocking(True)
        s.sendall(REQUEST * requests)
        s.setblocking(False)
        pending[s] = 0
        sel.register(s, selectors.EVENT_READ)
    tail = {s: b"" for s in socks}
    while pending:
        for key, _ in sel.select(timeout=30):
            s = key.fileobj
            data = s.recv(1 << 20)
            if not data:
                sys.exit("pipeline_bench: the server closed a connection")
            chunk = tail[s] + data
            pending[s] += chunk.count(ANSWER_END)
            tail[s] = chunk[-len(ANSWER_END) + 1:]
            if pending[s] >= requests:
                sel.unregister(s)
                del pending[s]
    elapsed = time.perf_counter() - t0
    for s in socks:
        s.close()
    return elapsed


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", default=os.path.join(here, "..", "..", "build", "bin",
                                                    "heartwheel-http"))
    p.add_argument("--connections", type=int, default=20)
    p.add_argument("--requests", type=int, default=2000, help="pipelined per connection")
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    settings = {"defaults": [],
                "count_only": ["--pipeline-slice", "0"],
                "one_per_turn": ["--pipeline-burst", "1"],
                "unbounded": ["--pipeline-burst", "1000000000", "--pipeline-slice", "0"]}
    servers = {name: start(a.server, flags) for name, flags in settings.items()}
    rates = {name: [] for name in settings}
    cpu_us = {name: [] for name in settings}
    total = a.connections * a.requests
    try:
        for _ in range(a.rounds):
            for name, (proc, port) in servers.items():
                before = cpu_seconds(proc.pid)
                secs = round_once(port, a.connections, a.requests)
                cpu_us[name].append(round((cpu_seconds(proc.pid) - before) * 1e6 / total, 3))
                rates[name].append(round(total / secs))
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(10)
    med = {name: statistics.median(r) for name, r in rates.items()}
    cpu = {name: statistics.median(r) for name, r in cpu_us.items()}
    print(json.dumps({"connections": a.connections, "pipelined_per_connection": a.requests,
                      "server_cpu_us_per_request_median": cpu,
                      "server_cpu_ratio_to_unbounded": {name: round(cpu[name] / cpu["unbounded"], 3)
                                                        for name in settings},
                      "requests_per_s_median": med, "rounds_requests_per_s": rates,
                      "rounds_server_cpu_us": cpu_us,
                      "rate_ratio_to_unbounded": {name: round(med[name] / med["unbounded"], 3)
                                                  for name in settings},
                      "loadavg_1m": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
