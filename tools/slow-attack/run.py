#!/usr/bin/python3
"""Slow and abusive clients against heartwheel-http and nginx, side by side.

For each size (attack connections), each attack (slowloris, slow body, slow
read) and each target (heartwheel-http, nginx) -- targets interleaved, so both
servers meet the same machine load -- this script:

  1. starts the server with the SAME timeouts and worker count (README.md:
     "Flag mapping"), on a free loopback port, as its own process;
  2. runs slowhttptest (one or more processes, connections split between them)
     with -g -o, so its CSV gives the attack connections' states per second;
  3. meanwhile runs the normal clients: heartwheel-load --mode http (keep-alive,
     a fixed request rate, latency from the intended send time) and a
     fresh-connection probe (one new connection per request, Python);
  4. samples the server's processes from /proc (RSS and PSS summed over every
     process of the server, peak during the attack; CPU time);
  5. stops everything it started, by PID, and prints one JSON line.

At the end a markdown table. Exit status: 0 done, 1 a run failed (a server did
not start, a tool is missing), 2 usage error.
"""

import argparse
import json
import math
import os
import re
import shutil
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "pylib"))
from procs import count_sockets, cpu_seconds, free_port, process_tree  # noqa: E402
ATTACKS = ("slowloris", "slowbody", "slowread", "slowread_big")
DEFAULT_ATTACKS = "slowloris,slowbody,slowread"
TARGETS = ("heartwheel", "nginx")
EXIT_FAILURE, EXIT_USAGE = 1, 2

NGINX_CONF = """
worker_processes {workers};
worker_rlimit_nofile {nofile};
master_process on;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log crit;
events {{ worker_connections {worker_connections}; }}
http {{
  access_log off;
  client_header_timeout {header_timeout}s;
  client_body_timeout {body_timeout}s;
  send_timeout {send_timeout}s;
  keepalive_timeout {keepalive_timeout}s;
  keepalive_requests 100000000;
  client_body_buffer_size 16k;
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
    # Like heartwheel-http's POST /echo, the body is read in full (with
    # client_body_timeout between reads) before anything is answered.
    location /echo {{
      proxy_pass http://127.0.0.1:{upstream_port}/;
    }}
    # heartwheel-http's GET /bytes?n=N: the same number of bytes, from a file
    # (sendfile on, as in Debian's default nginx.conf).
    location = /bytes {{
      sendfile on;
      default_type application/octet-stream;
      alias {prefix}/bytes.bin;
    }}
  }}
  server {{
    listen 127.0.0.1:{upstream_port};
    location / {{ return 200 "ok\\n"; }}
  }}
}}
"""


def log(msg):
    print(f"slow-attack: {msg}", file=sys.stderr, flush=True)


def die(msg, status=EXIT_FAILURE):
    print(f"slow-attack: error: {msg}", file=sys.stderr)
    sys.exit(status)


def wait_listening(port, proc, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with status {proc.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def stop_pid(proc, grace=10.0):
    """SIGTERM, wait up to `grace`, then SIGKILL; always reaps."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --------------------------------------------------------------------------- /proc sampling

def tcp_mem_pages():
    """Pages of TCP buffers in use on the whole machine (sockstat's TCP mem)."""
    try:
        with open("/proc/net/sockstat") as f:
            for line in f:
                if line.startswith("TCP:"):
                    parts = line.split()
                    return int(parts[parts.index("mem") + 1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def tcp_mem_limit_pages():
    try:
        with open("/proc/sys/net/ipv4/tcp_mem") as f:
            return int(f.read().split()[2])
    except (OSError, ValueError, IndexError):
        return 0


# The kernel's TCP counters that tell where packets waited when memory ran
# short: pressure episodes, drops and prunes of receive queues, retransmission
# timeouts (the 200 ms ... 3 s steps a client then sees as latency).
TCP_COUNTERS = ("TcpExt:TCPMemoryPressures", "TcpExt:TCPMemoryPressuresChrono",
                "TcpExt:TCPAbortOnMemory", "TcpExt:TCPRcvQDrop", "TcpExt:PruneCalled",
                "TcpExt:RcvPruned", "TcpExt:OfoPruned", "TcpExt:TCPTimeouts",
                "TcpExt:TCPLossProbes", "TcpExt:TCPBacklogDrop", "TcpExt:ListenDrops",
                "TcpExt:TCPRetransFail", "TcpExt:TCPZeroWindowDrop", "Tcp:RetransSegs")


def tcp_counters():
    """{"TcpExt:Name": value} from /proc/net/netstat and /proc/net/snmp."""
    out = {}
    for path in ("/proc/net/netstat", "/proc/net/snmp"):
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for names, values in zip(lines[0::2], lines[1::2]):
            prefix, names = names.split(":", 1)
            for n, v in zip(names.split(), values.split()[1:]):
                try:
                    out[f"{prefix}:{n}"] = int(v)
                except ValueError:
                    pass
    return out


def read_kib(path, key):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Sampler(threading.Thread):
    """Every `period` s: RSS and PSS summed over the server's processes."""

    def __init__(self, pid, period=0.5):
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.stop_event = threading.Event()
        self.peak_rss = self.peak_pss = 0
        self.cpu = {}  # pid -> last seen CPU seconds (workers may exit first)
        self.sockets = []  # (seconds since start, sockets the server holds)
        self.peak_tcp_mem = 0  # pages, the whole machine's TCP buffers (/proc/net/sockstat)
        self.tcp_mem = []  # MiB, every sample
        self.t0 = time.monotonic()

    def sample(self):
        rss = pss = sockets = 0
        for p in process_tree(self.pid):
            rss += read_kib(f"/proc/{p}/status", "VmRSS:")
            pss += read_kib(f"/proc/{p}/smaps_rollup", "Pss:")
            self.cpu[p] = cpu_seconds(p)
            sockets += count_sockets(p)
        self.sockets.append((round(time.monotonic() - self.t0, 1), sockets))
        pages = tcp_mem_pages()
        self.peak_tcp_mem = max(self.peak_tcp_mem, pages)
        self.tcp_mem.append(pages * 4 // 1024)
        return rss, pss

    def run(self):
        while not self.stop_event.is_set():
            rss, pss = self.sample()
            self.peak_rss, self.peak_pss = max(self.peak_rss, rss), max(self.peak_pss, pss)
            self.stop_event.wait(self.period)

    def cpu_total(self):
        return sum(self.cpu.values())


def held_after_clients(pid, base, limit=10.0):
    """Sockets the server holds beyond `base` once every client process has
    exited, and how long it took to let the rest go (polled every 0.1 s, for
    at most `limit` s): 0 unless it keeps sockets its peers closed. The last
    0.5 s sample (`at_end`) can be taken while the timeouts of attack
    connections opened late (on a loaded machine) are still firing."""
    start = time.monotonic()
    while True:
        held = max(0, sum(count_sockets(p) for p in process_tree(pid)) - base)
        waited = time.monotonic() - start
        if held == 0 or waited >= limit:
            return held, round(waited, 2)
        time.sleep(0.1)


# --------------------------------------------------------------------------- servers

def start_heartwheel(args, port, tmp, attack):
    stats = os.path.join(tmp, "stats.json")
    cmd = [args.server, "--listen", f"127.0.0.1:{port}", "--workers", str(args.workers),
           "--header-timeout", f"{args.header_timeout}s", "--body-timeout", f"{args.body_timeout}s",
           "--send-timeout", f"{args.send_timeout}s",
           "--keepalive-timeout", f"{args.keepalive_timeout}s",
           "--request-timeout", f"{args.request_timeout}s" if args.request_timeout else "0",
           "--max-connections", "0", "--stats-json", stats] + shlex.split(args.heartwheel_args)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, cmd, stats


def start_nginx(args, port, tmp, attack):
    # We run as root, so nginx's workers run as nobody: they must be able to
    # read the file (mkdtemp makes the directory 0700).
    os.chmod(tmp, 0o755)
    for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(tmp, d), exist_ok=True)
    with open(os.path.join(tmp, "bytes.bin"), "wb") as f:
        f.write(b"x" * (args.read_bytes if attack == "slowread" else args.read_big_bytes))
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w") as f:
        f.write(NGINX_CONF.format(
            workers=args.workers, nofile=args.nofile, worker_connections=args.nofile - 500,
            prefix=tmp, port=port, upstream_port=free_port(), header_timeout=args.header_timeout,
            body_timeout=args.body_timeout, send_timeout=args.send_timeout,
            keepalive_timeout=args.keepalive_timeout))
    cmd = [args.nginx, "-p", tmp, "-c", conf, "-e", os.path.join(tmp, "error.log"),
           "-g", "daemon off;"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, cmd, None


# --------------------------------------------------------------------------- clients

def attack_args(args, attack, url_base, count):
    common = ["-c", str(count), "-r", str(args.attack_rate), "-l", str(args.duration),
              "-p", "3"]
    if attack == "slowloris":
        return common + ["-H", "-i", str(args.interval), "-x", "24", "-t", "GET",
                         "-u", url_base + "/"]
    if attack == "slowbody":
        return common + ["-B", "-i", str(args.interval), "-x", "10", "-s", "8192", "-t", "POST",
                         "-u", url_base + "/echo"]
    size = args.read_bytes if attack == "slowread" else args.read_big_bytes
    return common + ["-X", "-k", str(args.pipeline), "-w", "512", "-y", "1024", "-n", "5",
                     "-z", "32", "-t", "GET", "-u", f"{url_base}/bytes?n={size}"]


def read_csv(path):
    """slowhttptest's CSV: Seconds,Closed,Pending,Connected,Service Available."""
    rows = {}
    try:
        with open(path) as f:
            next(f)
            for line in f:
                parts = line.strip().split(",")
                if len(parts) >= 5:
                    rows[int(parts[0])] = [int(x) for x in parts[1:5]]
    except (OSError, StopIteration, ValueError):
        pass
    return rows


def ended_empty(out_path):
    """The second slowhttptest stopped at because no connection was left
    open (it writes no CSV row for that moment), or None."""
    try:
        with open(out_path, errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r"Test ended on (\d+)\w* second", text)
    if m and "No open connections left" in text:
        return int(m.group(1))
    return None


def merge_csvs(paths, outs):
    """Adds the attack processes' columns second by second; a process that
    ended early keeps its last row (its connections stay closed)."""
    tables = [read_csv(p) for p in paths]
    for t, out in zip(tables, outs):
        end = ended_empty(out)
        if t and end is not None and end >= max(t):
            # slowhttptest's last row may predate the final closes it reports.
            last = t[max(t)]
            t[end] = [last[0] + last[1] + last[2], 0, 0, last[3]]
    last = max((max(t) for t in tables if t), default=-1)
    merged = []
    for s in range(last + 1):
        closed = pending = connected = 0
        available = True
        for t in tables:
            if not t:
                continue
            keys = [k for k in t if k <= s]
            if not keys:
                continue
            row = t[max(keys)]
            closed, pending, connected = closed + row[0], pending + row[1], connected + row[2]
            available = available and row[3] != 0
        merged.append({"t_s": s, "closed": closed, "pending": pending, "connected": connected,
                       "available": available})
    return merged


def survival(series, size):
    if not series:
        return {}
    final = series[-1]
    total = max(final["closed"] + final["connected"], 1)
    lifetime = sum(r["connected"] for r in series) / total
    first_close = next((r["t_s"] for r in series if r["closed"] > 0), None)
    return {"peak_connected": max(r["connected"] for r in series),
            "opened": final["closed"] + final["connected"], "asked": size,
            "open_at_end": final["connected"], "mean_lifetime_s": round(lifetime, 1),
            "first_close_s": first_close,
            "probe_unavailable_s": sum(1 for r in series if not r["available"])}


class FreshProbe(threading.Thread):
    """One new connection per request (GET /, Connection: close) every
    1/rate s: whether NEW clients still get in during the attack."""

    def __init__(self, port, rate, timeout=3.0):
        super().__init__(daemon=True)
        self.port, self.period, self.timeout = port, 1.0 / rate, timeout
        self.stop_event = threading.Event()
        self.ok, self.failed, self.latencies_ms = 0, 0, []

    def one(self):
        start = time.monotonic()
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout) as s:
                s.sendall(b"GET / HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n")
                data = b""
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            if data.startswith(b"HTTP/1.1 200") and data.endswith(b"Hello from heartwheel\n"):
                self.ok += 1
                self.latencies_ms.append((time.monotonic() - start) * 1000)
                return
        except OSError:
            pass
        self.failed += 1

    def run(self):
        next_at = time.monotonic()
        while not self.stop_event.is_set():
            self.one()
            next_at += self.period
            self.stop_event.wait(max(0.0, next_at - time.monotonic()))

    def summary(self):
        lat = sorted(self.latencies_ms)
        p99 = lat[min(len(lat) - 1, math.ceil(0.99 * len(lat)) - 1)] if lat else None
        total = self.ok + self.failed
        return {"requests": total, "ok": self.ok,
                "success": round(self.ok / total, 4) if total else None,
                "p99_ms": round(p99, 1) if p99 is not None else None}


def http_get(port, target):
    """(status, body length) of one GET on a fresh connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: check\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), len(body)


def check_answers(port, args, attack):
    """Both servers must give the same answers, or the comparison is void
    (a 403 from nginx for an unreadable file once made slow read look free)."""
    want = [("/", 200, len(b"Hello from heartwheel\n"))]
    if attack.startswith("slowread"):
        n = args.read_bytes if attack == "slowread" else args.read_big_bytes
        want.append((f"/bytes?n={n}", 200, n))
    for target, status, length in want:
        got = http_get(port, target)
        if got != (status, length):
            raise RuntimeError(f"GET {target}: got status {got[0]} with {got[1]} bytes, "
                               f"want {status} with {length}")


def normal_load_cmd(args, port, out):
    interval_ms = int(1000 * args.normal_connections / args.normal_rate)
    return [args.load, "--target", f"127.0.0.1:{port}", "--mode", "http", "--http-path", "/",
            "--connections", str(args.normal_connections), "--message-interval", f"{interval_ms}ms",
            "--duration", f"{args.duration}s", "--quiet", "--json", out]


def normal_summary(path, args):
    try:
        with open(path) as f:
            r = json.load(f)
    except (OSError, ValueError):
        return {"error": "no result"}
    due = args.normal_rate * args.duration
    ok = int(r.get("http_status", {}).get("200", 0))
    lat = r.get("latency_us", {})
    return {"requests_due": due, "sent": r.get("messages_sent"), "ok_200": ok,
            "success": round(min(ok / due, 1.0), 4) if due else None,
            "p50_ms": round(lat.get("p50", 0) / 1000, 2), "p99_ms": round(lat.get("p99", 0) / 1000, 2),
            "max_ms": round(lat.get("max", 0) / 1000, 2),
            "connect_errors": r.get("connect_errors", {}), "errors": r.get("errors", {}),
            "closed_by_server": r.get("live_closed_by_server", 0)}


# --------------------------------------------------------------------------- one run

def one_run(args, target, attack, size):
    tmp = tempfile.mkdtemp(prefix=f"slow-attack-{target}-")
    port = free_port()
    starter = start_heartwheel if target == "heartwheel" else start_nginx
    server, server_cmd, stats_path = starter(args, port, tmp, attack)
    procs = []
    try:
        wait_listening(port, server)
        check_answers(port, args, attack)
        time.sleep(0.5)
        sampler = Sampler(server.pid)
        base_rss, base_pss = sampler.sample()
        cpu_before = sampler.cpu_total()
        load_before = os.getloadavg()
        counters_before = tcp_counters()
        sampler.start()
        normal_json = os.path.join(tmp, "normal.json")
        procs.append(subprocess.Popen(normal_load_cmd(args, port, normal_json),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        probe = FreshProbe(port, args.fresh_rate)
        probe.start()
        nproc = max(1, math.ceil(size / args.per_attack_process))
        csvs, outs, attack_cmds = [], [], []
        for k in range(nproc):
            count = size // nproc + (1 if k < size % nproc else 0)
            prefix = os.path.join(tmp, f"attack{k}")
            cmd = [args.slowhttptest, "-g", "-o", prefix] + attack_args(
                args, attack, f"http://127.0.0.1:{port}", count)
            attack_cmds.append(cmd)
            csvs.append(prefix + ".csv")
            outs.append(prefix + ".out")
            # --attack-nice: the attack's own CPU behind the servers' and the
            # normal client's, as when it comes from other machines.
            nice = (lambda: os.nice(args.attack_nice)) if args.attack_nice else None
            with open(outs[-1], "w") as out:
                procs.append(subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                              preexec_fn=nice))
        deadline = time.monotonic() + args.duration + 30
        for p in procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                stop_pid(p, grace=2)
        probe.stop_event.set()
        probe.join(10)
        sampler.stop_event.set()
        sampler.join(5)
        load_after = os.getloadavg()
        counters_after = tcp_counters()
        series = merge_csvs(csvs, outs)
        base_sockets = sampler.sockets[0][1] if sampler.sockets else 0
        held = [max(0, n - base_sockets) for _, n in sampler.sockets]
        after, after_s = held_after_clients(server.pid, base_sockets)
        result = {
            "target": target, "attack": attack, "connections": size,
            "attack_processes": nproc,
            "normal": normal_summary(normal_json, args),
            "fresh": probe.summary(),
            "attack_survival": survival(series, size),
            "server_held": {"peak": max(held, default=0),
                            "at_end": held[-1] if held else None,
                            # every 0.5 s: sockets the server holds beyond its idle count
                            "series": held,
                            # once every client process is gone (see held_after_clients)
                            "after_clients": after, "after_clients_s": after_s},
            "memory_kib": {"base_rss": base_rss, "peak_rss": sampler.peak_rss,
                           "base_pss": base_pss, "peak_pss": sampler.peak_pss,
                           "peak_rss_growth": sampler.peak_rss - base_rss},
            "server_cpu_s": round(sampler.cpu_total() - cpu_before, 2),
            # the machine's TCP buffers (every socket, also other users'), and the
            # kernel's hard limit (tcp_mem[2]): at the limit every socket starves
            "tcp_mem_mib": {"peak": sampler.peak_tcp_mem * 4 // 1024,
                            "limit": tcp_mem_limit_pages() * 4 // 1024,
                            "series": sampler.tcp_mem},
            "loadavg_1m": [round(load_before[0], 2), round(load_after[0], 2)],
            # the whole machine's, during the run (attack, normal clients, server)
            "tcp_counters": {k: counters_after.get(k, 0) - counters_before.get(k, 0)
                             for k in TCP_COUNTERS if k in counters_after},
            "server_cmd": " ".join(server_cmd), "attack_cmd": " ".join(attack_cmds[0]),
            "attack_nice": args.attack_nice,
            "attack_series": series,
        }
        if stats_path:
            stop_pid(server)  # heartwheel-http writes its counters at exit
            try:
                with open(stats_path) as f:
                    stats = json.load(f)
                h = stats["http"]
                loop = stats.get("net", {}).get("loop", {})
                result["heartwheel_http"] = {
                    "timeouts": h["timeouts"], "closed_by_reason": h["closed_by_reason"],
                    "loop": {k: loop.get(k) for k in ("stalls", "stall_ms", "expiries_deferred")
                             if k in loop}}
            except (OSError, ValueError, KeyError):
                pass
        return result
    finally:
        for p in procs:
            stop_pid(p, grace=2)
        stop_pid(server)
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            log(f"kept {tmp}")


# --------------------------------------------------------------------------- report

def fmt(v, unit=""):
    return "-" if v is None else f"{v}{unit}"


def table(results):
    head = ("| target | attack | conns | normal ok | normal p99 | fresh ok | fresh p99 | "
            "attack open peak / end (client) | held by server peak / end | mean life (client) | "
            "peak RSS | RSS growth | peak PSS | server CPU | load 1m |\n|" + "---|" * 15)
    lines = [head]
    for r in results:
        n, fr, s, m, h = (r["normal"], r["fresh"], r["attack_survival"], r["memory_kib"],
                          r["server_held"])
        lines.append(
            f"| {r['target']} | {r['attack']} | {r['connections']} | "
            f"{fmt(n.get('success') and round(100 * n['success'], 2), '%')} | "
            f"{fmt(n.get('p99_ms'), ' ms')} | "
            f"{fmt(fr.get('success') and round(100 * fr['success'], 1), '%')} | "
            f"{fmt(fr.get('p99_ms'), ' ms')} | "
            f"{fmt(s.get('peak_connected'))} / {fmt(s.get('open_at_end'))} | "
            f"{h['peak']} / {fmt(h['at_end'])} | {fmt(s.get('mean_lifetime_s'), ' s')} | "
            f"{m['peak_rss'] / 1024:.1f} MiB | {m['peak_rss_growth'] / 1024:.1f} MiB | "
            f"{m['peak_pss'] / 1024:.1f} MiB | {r['server_cpu_s']} s | "
            f"{r['loadavg_1m'][0]}-{r['loadavg_1m'][1]} |")
    return "\n".join(lines)


def main():
    default_bin = os.path.join(ROOT, "build", "bin")
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--targets", default="heartwheel,nginx", help="comma list of heartwheel,nginx")
    p.add_argument("--attacks", default=DEFAULT_ATTACKS, help="comma list of " + ",".join(ATTACKS))
    p.add_argument("--sizes", default="2000,15000", help="attack connections, comma list")
    p.add_argument("--duration", type=int, default=60, help="seconds per run (attack and normal client)")
    p.add_argument("--heartwheel-args", default="",
                   help="more flags for heartwheel-http, one string (e.g. '--accept-batch 16')")
    p.add_argument("--workers", type=int, default=2, help="server workers (threads / nginx processes)")
    p.add_argument("--header-timeout", type=int, default=10, help="s; nginx client_header_timeout")
    p.add_argument("--body-timeout", type=int, default=10, help="s; nginx client_body_timeout")
    p.add_argument("--send-timeout", type=int, default=10, help="s; nginx send_timeout")
    p.add_argument("--keepalive-timeout", type=int, default=5, help="s; nginx keepalive_timeout")
    p.add_argument("--request-timeout", type=int, default=0,
                   help="s; heartwheel-http only (nginx has none): 0 = off, the fair default")
    p.add_argument("--nofile", type=int, default=20000,
                   help="nginx worker_rlimit_nofile (worker_connections = this - 500)")
    p.add_argument("--attack-rate", type=int, default=1000, help="slowhttptest -r per process")
    p.add_argument("--per-attack-process", type=int, default=2000,
                   help="attack connections per slowhttptest process (one process ramps ~250/s here)")
    p.add_argument("--attack-nice", type=int, default=0,
                   help="run the slowhttptest processes at this nice value (0..19): their CPU "
                        "behind the servers' and the normal client's, as an attack from other "
                        "machines would be; 0 (the default) = the same priority")
    p.add_argument("--interval", type=int, default=5, help="slowhttptest -i (slowloris, slow body)")
    p.add_argument("--pipeline", type=int, default=10, help="slowhttptest -k (slow read, 1..10)")
    p.add_argument("--read-bytes", type=int, default=16384,
                   help="slow read: size of each answer (GET /bytes?n=N; nginx: a file)")
    p.add_argument("--read-big-bytes", type=int, default=1024 * 1024,
                   help="slowread_big: size of each answer (10 of them pass the kernel's buffers)")
    p.add_argument("--normal-rate", type=int, default=200, help="normal keep-alive requests per second")
    p.add_argument("--normal-connections", type=int, default=10, help="normal keep-alive connections")
    p.add_argument("--fresh-rate", type=float, default=10, help="fresh-connection probes per second")
    p.add_argument("--server", default=os.path.join(default_bin, "heartwheel-http"))
    p.add_argument("--load", default=os.path.join(default_bin, "heartwheel-load"))
    p.add_argument("--nginx", default="/usr/sbin/nginx")
    p.add_argument("--slowhttptest", default=shutil.which("slowhttptest") or "/usr/bin/slowhttptest")
    p.add_argument("--json", help="write every result (with per-second attack series) to FILE")
    p.add_argument("--keep", action="store_true", help="keep each run's temp dir (CSV, HTML, logs)")
    args = p.parse_args()

    targets = [t for t in args.targets.split(",") if t]
    attacks = [a for a in args.attacks.split(",") if a]
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s]
    except ValueError:
        die(f"--sizes wants numbers, got '{args.sizes}'", EXIT_USAGE)
    if any(t not in TARGETS for t in targets) or any(a not in ATTACKS for a in attacks):
        die(f"--targets from {TARGETS}, --attacks from {ATTACKS}", EXIT_USAGE)
    if args.duration < 5 or args.workers < 1 or any(s < 1 for s in sizes):
        die("--duration >= 5, --workers >= 1, sizes >= 1", EXIT_USAGE)
    if not 1 <= args.pipeline <= 10 or not 0 <= args.read_bytes <= 1024 * 1024 or \
            not 0 <= args.read_big_bytes <= 1024 * 1024:
        die("--pipeline is 1..10 (slowhttptest's limit), --read-bytes 0..1048576", EXIT_USAGE)
    if not 0 <= args.attack_nice <= 19:
        die("--attack-nice is 0..19", EXIT_USAGE)
    if args.per_attack_process > 19000:
        die("--per-attack-process must stay under the 20000 open-file limit", EXIT_USAGE)
    needed = {"slowhttptest": args.slowhttptest, "heartwheel-load": args.load}
    if "heartwheel" in targets:
        needed["heartwheel-http"] = args.server
    if "nginx" in targets:
        needed["nginx"] = args.nginx
    for name, path in needed.items():
        if not (path and os.access(path, os.X_OK)):
            die(f"{name} not found at '{path}' (build it, or tools/install-deps bench)")

    results = []
    for size in sizes:
        for attack in attacks:
            for target in targets:
                log(f"{target} {attack} {size} connections, {args.duration} s "
                    f"(load {os.getloadavg()[0]:.2f})")
                try:
                    r = one_run(args, target, attack, size)
                except RuntimeError as e:
                    die(f"{target} {attack} {size}: {e}")
                results.append(r)
                line = {k: v for k, v in r.items() if k != "attack_series"}
                print(json.dumps(line), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print()
    print(table(results))


if __name__ == "__main__":
    main()
