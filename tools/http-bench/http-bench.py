#!/usr/bin/env python3
"""heartwheel-http-bench: heartwheel-http against nginx (Debian nginx-light),
end to end, with wrk keep-alive load. Prints one JSON object (--json) or a
short table, including the ratio heartwheel / nginx measured in this run.

The machine is shared, so single runs are noisy: the servers run in
--rounds alternating rounds (heartwheel, nginx, nginx, heartwheel, ...), each
a --duration wrk run against a freshly started server, and the medians and
their ratio are reported (plus every round and the load average).

Each round also reports the CPU wrk itself used (client_cpu_cores) and how
often it blocked waiting for an answer (client_waits_per_request): a client
near 1.0 core per thread that (almost) never waits is the limit, not the
server, and no server can answer faster than that client asks.

--instructions runs each server once under valgrind's callgrind instead and
reports the instructions it executed per request (user space: ours, libuv,
libc; not the kernel), minus an idle start and stop of the same server. It
does not depend on the machine's load, so it is the number to compare two
builds with; it says nothing about the kernel's share.

Both servers: loopback, the same worker count, the same small response
("Hello from heartwheel\\n", 22 bytes, text/plain), keep-alive, no access log.
nginx runs from a temporary prefix with its own config on a free port and is
stopped by PID afterwards, like heartwheel-http.

  tools/http-bench/http-bench.py --server build/bin/heartwheel-http --json
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

BODY = "Hello from heartwheel\n"

NGINX_CONF = """
worker_processes {workers};
daemon off;
master_process on;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 60s;
  client_body_temp_path {prefix}/body;
  proxy_temp_path {prefix}/proxy;
  fastcgi_temp_path {prefix}/fastcgi;
  uwsgi_temp_path {prefix}/uwsgi;
  scgi_temp_path {prefix}/scgi;
  server {{
    listen 127.0.0.1:{port} reuseport;
    location / {{
      default_type text/plain;
      return 200 "Hello from heartwheel\\n";
    }}
  }}
}}
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_listening(port, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("nothing listens on port %d" % port)


def stop(proc, timeout=10):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def to_ms(text):
    m = re.match(r"([\d.]+)(us|ms|s|m)$", text)
    if not m:
        return None
    v, unit = float(m.group(1)), m.group(2)
    return v * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def cpu_seconds(pid):
    """user + system CPU time of pid and its children processes (nginx's
    workers), from /proc: clock ticks, so good to ~10 ms over a round."""
    pids = [pid]
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                pids.append(int(entry))
    total = 0
    for p in pids:
        try:
            with open("/proc/%d/stat" % p) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def children_usage():
    """(user + system CPU seconds, voluntary context switches) of this
    script's finished children (wrk)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime, ru.ru_nvcsw


def run_wrk(args, port, server_pid):
    cpu_before = cpu_seconds(server_pid)
    client_before, sleeps_before = children_usage()
    cmd = ["wrk", "-t%d" % args.threads, "-c%d" % args.connections, "-d%s" % args.duration,
           "--latency", "http://127.0.0.1:%d/" % port]
    began = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300).stdout
    wall = time.monotonic() - began
    client_cpu, client_sleeps = children_usage()
    client_cpu -= client_before
    client_sleeps -= sleeps_before
    # As a user would type it: the port is the run's own.
    res = {"command": " ".join(cmd[:-1] + ["http://127.0.0.1:PORT/"])}
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    res["requests_per_sec"] = float(m.group(1)) if m else None
    m = re.search(r"(\d+) requests in", out)
    res["requests"] = int(m.group(1)) if m else None
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    res["non_2xx"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: (.*)", out)
    res["socket_errors"] = m.group(1).strip() if m else None
    for p in ("50", "90", "99"):
        m = re.search(r"^\s+%s%%\s+(\S+)" % p, out, re.M)
        res["latency_p%s_ms" % p] = to_ms(m.group(1)) if m else None
    if res["requests_per_sec"] is None:
        raise RuntimeError("could not read wrk output:\n" + out)
    # The server's CPU per request suffers less from a loaded machine than
    # requests/s: it counts only the time the server actually ran.
    cpu = cpu_seconds(server_pid) - cpu_before
    res["server_cpu_s"] = round(cpu, 3)
    res["server_cpu_us_per_request"] = (round(cpu * 1e6 / res["requests"], 3)
                                        if res["requests"] else None)
    # wrk's own CPU, in cores over the run (its start-up is a few ms of it).
    res["server_cpu_cores"] = round(cpu / wall, 3)
    res["client_cpu_cores"] = round(client_cpu / wall, 3)
    res["client_cpu_us_per_request"] = (round(client_cpu * 1e6 / res["requests"], 3)
                                        if res["requests"] else None)
    # How often wrk blocked waiting for the server: near 0, it never waited,
    # so it (not the server) set the pace.
    res["client_waits_per_request"] = (round(client_sleeps / res["requests"], 4)
                                       if res["requests"] else None)
    return res


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def start_heartwheel(args, wrap=()):
    """heartwheel-http on a free port: (process, port, stop function)."""
    proc = subprocess.Popen(list(wrap) + [args.server, "--listen", "127.0.0.1:0", "--workers",
                                          str(args.workers), "--tick", args.tick] +
                            list(getattr(args, "server_arg", None) or []),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        stop(proc)
        raise RuntimeError("heartwheel-http did not start: %r" % line)
    return proc, int(line.rsplit(":", 1)[1]), lambda: stop(proc, 120 if wrap else 10)


def start_nginx(args, wrap=()):
    """nginx from a temporary prefix on a free port: (process, port, stop
    function). Under `wrap` (valgrind) it runs as one process, no master."""
    prefix = tempfile.mkdtemp(prefix="hw-nginx-")
    port = free_port()
    conf = os.path.join(prefix, "nginx.conf")
    text = NGINX_CONF.format(workers=args.workers, prefix=prefix, port=port)
    if wrap:
        text = text.replace("master_process on;", "master_process off;")
    with open(conf, "w") as f:
        f.write(text)
    proc = subprocess.Popen(list(wrap) + [args.nginx, "-p", prefix, "-c", conf,
                                          "-e", prefix + "/error.log"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def cleanup():
        stop(proc, 120 if wrap else 10)  # SIGTERM to the master: it stops its workers
        shutil.rmtree(prefix, ignore_errors=True)
    try:
        wait_listening(port, 60 if wrap else 10)
    except Exception:
        cleanup()
        raise
    return proc, port, cleanup


def bench(start, args):
    """One wrk round against the server `start` makes (start_heartwheel,
    start_nginx, or a script's own): started, its answer checked, stopped."""
    proc, port, cleanup = start(args)
    try:
        check_body(port)
        return run_wrk(args, port, proc.pid)
    finally:
        cleanup()


def bench_heartwheel(args):
    return bench(start_heartwheel, args)


def bench_nginx(args):
    res = bench(start_nginx, args)
    res["version"] = subprocess.run([args.nginx, "-v"], capture_output=True,
                                    text=True).stderr.strip()
    return res


def callgrind_total(path):
    """The instruction count a callgrind output file ends with."""
    with open(path) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError("no totals in %s" % path)


def count_instructions(args, start):
    """Instructions per request of one server under callgrind: a run with
    wrk's load minus an idle run (start, one request, stop)."""
    totals, load = {}, None
    with tempfile.TemporaryDirectory(prefix="hw-callgrind-") as tmp:
        for phase in ("idle", "load"):
            out = os.path.join(tmp, phase + ".out")
            proc, port, cleanup = start(args, ["valgrind", "--tool=callgrind",
                                               "--callgrind-out-file=" + out])
            try:
                check_body(port)
                if phase == "load":
                    load = run_wrk(args, port, proc.pid)
            finally:
                cleanup()
            totals[phase] = callgrind_total(out)
    return {"requests": load["requests"], "instructions_idle": totals["idle"],
            "instructions_load": totals["load"],
            "instructions_per_request": round((totals["load"] - totals["idle"]) /
                                              load["requests"]),
            "command": load["command"]}


def instructions_main(args):
    if shutil.which("valgrind") is None:
        sys.exit("heartwheel-http-bench: error: valgrind not found (apt-get install valgrind)")
    hw = count_instructions(args, start_heartwheel)
    ng = count_instructions(args, start_nginx)
    result = {"bench": "http_keepalive_instructions", "workers": args.workers,
              "connections": args.connections, "duration": args.duration,
              "heartwheel": hw, "nginx": ng,
              # below 1: heartwheel runs fewer instructions per request than nginx
              "ratio_instructions_per_request": round(hw["instructions_per_request"] /
                                                      ng["instructions_per_request"], 3)}
    if args.json:
        print(json.dumps(result))
    else:
        print("%-11s %10s %22s" % ("server", "requests", "instructions/request"))
        for name, r in (("heartwheel", hw), ("nginx", ng)):
            print("%-11s %10d %22d" % (name, r["requests"], r["instructions_per_request"]))
        print("ratio heartwheel/nginx: %.3f" % result["ratio_instructions_per_request"])


def check_body(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data or not data.endswith(BODY.encode()):
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    s.close()
    if not data.startswith(b"HTTP/1.1 200") or not data.endswith(BODY.encode()):
        raise RuntimeError("unexpected response on port %d: %r" % (port, data))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_server = os.path.normpath(os.path.join(here, "..", "..", "build", "bin",
                                                   "heartwheel-http"))
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--server", default=default_server, help="heartwheel-http binary")
    p.add_argument("--nginx", default="/usr/sbin/nginx", help="nginx binary")
    p.add_argument("--workers", type=int, default=1, help="server workers (both servers)")
    p.add_argument("--connections", type=int, default=50, help="wrk -c")
    p.add_argument("--threads", type=int, default=1, help="wrk -t")
    p.add_argument("--duration", default="5s", help="wrk -d per round (keep it short: shared machine)")
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds per server")
    p.add_argument("--tick", default="10ms", help="heartwheel-http --tick")
    p.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                   help="one more argument for heartwheel-http, repeatable "
                        "(--server-arg=--level-triggered-reads)")
    p.add_argument("--instructions", action="store_true",
                   help="count each server's instructions per request under valgrind's "
                        "callgrind (one run each, --duration of wrk) instead of timed rounds")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args()
    for tool in ("wrk", args.nginx, args.server):
        if shutil.which(tool) is None and not os.access(tool, os.X_OK):
            sys.exit("heartwheel-http-bench: error: %s not found (tools/install-deps bench)" % tool)

    if args.instructions:
        instructions_main(args)
        return
    load_before = os.getloadavg()[0]
    rounds = {"heartwheel": [], "nginx": []}
    for i in range(args.rounds):
        order = (("heartwheel", bench_heartwheel), ("nginx", bench_nginx))
        for name, run in (order if i % 2 == 0 else order[::-1]):
            rounds[name].append(run(args))
            time.sleep(0.5)

    def summary(rs):
        out = {"requests_per_sec": median([r["requests_per_sec"] for r in rs]),
               "rounds_rps": [r["requests_per_sec"] for r in rs],
               "non_2xx": sum(r["non_2xx"] for r in rs),
               "server_cpu_us_per_request": median([r["server_cpu_us_per_request"] for r in rs
                                                    if r["server_cpu_us_per_request"]] or [0]),
               "rounds_cpu_us_per_request": [r["server_cpu_us_per_request"] for r in rs],
               "rounds_p99_ms": [r["latency_p99_ms"] for r in rs],
               "server_cpu_cores": median([r["server_cpu_cores"] for r in rs]),
               "client_cpu_cores": median([r["client_cpu_cores"] for r in rs]),
               "rounds_client_cpu_cores": [r["client_cpu_cores"] for r in rs],
               "client_waits_per_request": median([r["client_waits_per_request"] for r in rs]),
               "client_cpu_us_per_request": median([r["client_cpu_us_per_request"] for r in rs
                                                    if r["client_cpu_us_per_request"]] or [0]),
               "command": rs[0]["command"]}
        for p in ("50", "90", "99"):
            key = "latency_p%s_ms" % p
            vals = [r[key] for r in rs if r[key] is not None]
            out[key] = median(vals) if vals else None
        if "version" in rs[0]:
            out["version"] = rs[0]["version"]
        return out

    hw, ng = summary(rounds["heartwheel"]), summary(rounds["nginx"])
    result = {"bench": "http_keepalive", "workers": args.workers,
              "server_args": args.server_arg,
              "connections": args.connections, "wrk_threads": args.threads,
              "duration_per_round": args.duration, "rounds": args.rounds,
              "body_bytes": len(BODY), "loadavg_1m": [load_before, os.getloadavg()[0]],
              "heartwheel": hw, "nginx": ng,
              "ratio_rps": round(hw["requests_per_sec"] / ng["requests_per_sec"], 3),
              # below 1: heartwheel spends less CPU per request than nginx
              "ratio_cpu_per_request": (round(hw["server_cpu_us_per_request"] /
                                              ng["server_cpu_us_per_request"], 3)
                                        if ng["server_cpu_us_per_request"] else None)}
    if args.json:
        print(json.dumps(result))
    else:
        print("%-11s %12s %9s %9s %9s %12s %11s %11s" % (
            "server", "req/s", "p50 ms", "p90 ms", "p99 ms", "cpu us/req", "server cpu",
            "wrk cpu"))
        for name, r in (("heartwheel", hw), ("nginx", ng)):
            print("%-11s %12.0f %9.3f %9.3f %9.3f %12.2f %11.2f %11.2f" % (
                name, r["requests_per_sec"], r["latency_p50_ms"] or 0,
                r["latency_p90_ms"] or 0, r["latency_p99_ms"] or 0,
                r["server_cpu_us_per_request"], r["server_cpu_cores"], r["client_cpu_cores"]))
        print("ratio heartwheel/nginx (medians of %d rounds): %.3f" % (args.rounds,
                                                                     result["ratio_rps"]))
        print("ratio of server CPU per request (medians): %s" % result["ratio_cpu_per_request"])


if __name__ == "__main__":
    main()
