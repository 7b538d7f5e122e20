#!/usr/bin/env python3
"""The client side's benchmarks in one run, each with its baseline measured
in the same run (README.md in this folder; figures in docs/BENCHMARKS.md):

  failover  three heartwheel-rpc-servers, calls at --rate through a net::Pool;
            one server frozen (SIGSTOP) for 2 s: calls lost (total, and
            beyond those in flight to it at the freeze), time to eject, p99
            before and during; round-robin and p2c, each with ejection on
            and off (off: the baseline)
  balance   two fast servers and one answering after 40 ms: the slow one's
            share and the p99 under round-robin (the baseline) and p2c
  memory    10,000 idle connections to heartwheel-echo: a pool's (heartbeat
            on) against plain net::Connectors (the baseline), RSS per
            connection
  http      one nginx (worker_processes 1, keep-alive): http::Client in a
            closed loop, then wrk with the same connections (the baseline):
            requests/s, client CPU per request, nginx's CPU per request

Usage: run.py BUILD_DIR [--only NAME ...] [--quick] [--json FILE]
Prints one JSON object (every result) and a few lines for a person.
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
import procs  # noqa: E402


class Server:
    """A program that prints "listening on HOST:PORT"; stopped by PID."""

    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if not line.startswith("listening on "):
            self.p.kill()
            sys.exit("%s did not start: %r" % (argv[0], line))
        self.address = line.split()[-1]
        self.pid = self.p.pid

    def stop(self):
        os.kill(self.pid, signal.SIGCONT)
        self.p.terminate()
        self.p.wait(timeout=30)


def bench(build, *args):
    out = subprocess.run([os.path.join(build, "bin", "heartwheel-client-bench"), *args],
                         check=True, capture_output=True, text=True, timeout=300).stdout
    return json.loads(out.strip().splitlines()[-1])


def rpc_server(build, *extra):
    return Server([os.path.join(build, "bin", "heartwheel-rpc-server"), "--listen",
                   "127.0.0.1:0", "--heartbeat", "0", "--tick", "1ms", *extra])


def failover(build, quick):
    servers = [rpc_server(build) for _ in range(3)]
    frozen = servers[2]
    rows = []
    try:
        for balance in ("round-robin", "p2c"):
            for eject_after in ("5", "0"):
                args = ["calls", "--rate", "1000", "--duration", "5s" if quick else "6s",
                        "--call-timeout", "200ms", "--heartbeat", "200ms", "--balance", balance,
                        "--eject-after", eject_after, "--eject-time", "1s",
                        "--freeze-pid", str(frozen.pid), "--freeze-server", frozen.address,
                        "--freeze-at", "2s", "--thaw-at", "4s"]
                for s in servers:
                    args += ["--server", s.address]
                rows.append(bench(build, *args))
                time.sleep(0.5)  # the thawed server catches up
    finally:
        for s in servers:
            s.stop()
    return rows


def balance(build, quick):
    servers = [rpc_server(build), rpc_server(build), rpc_server(build, "--reply-delay", "40ms")]
    rows = []
    try:
        for b in ("round-robin", "p2c"):
            args = ["calls", "--rate", "600", "--duration", "3s" if quick else "5s",
                    "--call-timeout", "1s", "--heartbeat", "1s", "--balance", b]
            for s in servers:
                args += ["--server", s.address]
            r = bench(build, *args)
            r["slow_share"] = next(e["share"] for e in r["servers"]
                                   if e["address"] == servers[2].address)
            rows.append(r)
    finally:
        for s in servers:
            s.stop()
    return rows


def memory(build, quick):
    n = "2000" if quick else "10000"
    echo = Server([os.path.join(build, "bin", "heartwheel-echo"), "--listen", "127.0.0.1:0"])
    rows = []
    try:
        for kind in ("connector", "pool", "connector", "pool"):
            rows.append(bench(build, "memory", "--server", echo.address, "--kind", kind,
                              "--connections", n))
    finally:
        echo.stop()
    return rows


NGINX_CONF = """worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log;
{user}
events {{ worker_connections 1024; }}
http {{
  access_log off;
  keepalive_requests 10000000;
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  server {{
    listen 127.0.0.1:{port};
    location = /hello {{ return 200 "hello\\n"; }}
  }}
}}
"""


def wrk_run(address, connections, seconds):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(["wrk", "-t1", "-c%d" % connections, "-d%ds" % seconds, "--latency",
                          "http://%s/hello" % address],
                         check=True, capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    return {"client": "wrk", "connections": connections, "requests": requests,
            "requests_per_s": rps, "cpu_s": cpu, "cpu_us_per_request": cpu * 1e6 / requests}


def http(build, quick):
    if not shutil.which("wrk") or not os.path.exists("/usr/sbin/nginx"):
        return {"skipped": "wrk or nginx missing (tools/install-deps bench)"}
    seconds = 3 if quick else 5
    rows = []
    with tempfile.TemporaryDirectory() as d:
        port = procs.free_port()
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(NGINX_CONF.format(d=d, port=port, user="user root;" if os.geteuid() == 0 else ""))
        nginx = subprocess.Popen(["/usr/sbin/nginx", "-p", d + "/", "-c", d + "/nginx.conf",
                                  "-e", d + "/error.log"])
        address = "127.0.0.1:%d" % port
        try:
            for _ in range(200):  # until nginx listens
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.05)
            tree = procs.process_tree(nginx.pid)
            for client in ("http::Client", "wrk", "http::Client", "wrk"):
                cpu0 = sum(procs.cpu_seconds(p) for p in tree)
                if client == "wrk":
                    r = wrk_run(address, 16, seconds)
                else:
                    r = bench(build, "http", "--server", address, "--connections", "16",
                              "--concurrency", "16", "--duration", "%ds" % seconds)
                cpu = sum(procs.cpu_seconds(p) for p in tree) - cpu0
                r["nginx_cpu_us_per_request"] = cpu * 1e6 / max(1, r["requests"])
                rows.append(r)
        finally:
            nginx.send_signal(signal.SIGQUIT)
            nginx.wait(timeout=30)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--quick", action="store_true", help="shorter runs (a smoke test)")
    ap.add_argument("--json")
    a = ap.parse_args()
    runs = {"failover": failover, "balance": balance, "memory": memory, "http": http}
    result = {}
    for name, fn in runs.items():
        if a.only and name not in a.only:
            continue
        result[name] = fn(a.build, a.quick)
    text = json.dumps(result, indent=2)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")
    for r in result.get("failover", []):
        fz = r["freeze"]
        print("failover %-11s eject_after=%s: lost %d (%d beyond in-flight), eject %s ms, "
              "p99 before %.0f us, during %.0f us" % (r["balance"], r["eject_after"], fz["lost"],
                                                     fz["lost_beyond_in_flight"], fz["eject_ms"],
                                                     fz["p99_before_us"], fz["p99_during_us"]),
              file=sys.stderr)
    for r in result.get("balance", []):
        print("balance %-11s slow share %.3f, p99 %.0f us" % (r["balance"], r["slow_share"],
                                                              r["p99_us"]), file=sys.stderr)
    for r in result.get("memory", []):
        print("memory %-9s %.0f bytes per idle connection" % (r["kind"], r["bytes_per_connection"]),
              file=sys.stderr)
    for r in result.get("http", []) if isinstance(result.get("http"), list) else []:
        print("http %-12s %.0f req/s, client %.1f us CPU/request, nginx %.1f us CPU/request" % (
            r["client"], r["requests_per_s"], r["cpu_us_per_request"], r["nginx_cpu_us_per_request"]),
            file=sys.stderr)


if __name__ == "__main__":
    main()
