#!/usr/bin/env python3
"""TLS on heartwheel-http against nginx, side by side in one run, with the
same certificates and the same OpenSSL (issue 21):

  - memory per idle TLS keep-alive connection (each has done its handshake
    and one request and waits for the next), the server's RSS growth;
  - full handshakes per second with an ECDSA P-256 and an RSA 2048
    certificate, and resumed handshakes (session tickets), against one
    worker of each: `openssl s_time -new` / `-reuse` (one client process),
    with the server's CPU seconds over the run, so handshakes per server
    CPU second compares the servers even when the client is the bottleneck.

Usage: tls_bench.py [--http BIN] [--before BIN] [--nginx BIN] [--connections N]
                    [--seconds S] [--only memory|handshakes] [--rounds R] [--json]
       tls_bench.py stall [--peers N] [--handshake-timeout S] [--quick] [--no-nginx] [--json]

`stall`: N peers send half a ClientHello and stall (the TLS form of
slowloris); each server must close every one at its handshake timeout (not
before), and a normal client's handshake+request latency is measured before
and meanwhile (p50/p99/max), with the server's RSS growth and CPU seconds.
Exit status 1 if a peer was not closed, or closed early.

Every process started is stopped by PID; files go to a temporary folder
removed at exit; a watchdog ends a hung run. Figures: docs/BENCHMARKS.md
(row "TLS") and docs/bench-history/tls.md.
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
from procs import free_port, cpu_seconds, process_tree, read_http_response, rss_kib  # noqa: E402

BIN_DIR = os.path.join(HERE, "..", "..", "build", "bin")
OPENSSL = shutil.which("openssl") or "/usr/bin/openssl"
REQUEST = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"


def make_cert(tmp, name, kind):
    cert, key = os.path.join(tmp, name + ".pem"), os.path.join(tmp, name + ".key")
    keyopt = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"] if kind == "ecdsa" \
        else ["-newkey", "rsa:2048"]
    subprocess.run([OPENSSL, "req", "-x509", *keyopt, "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


class Heartwheel:
    name = "heartwheel-http"

    def __init__(self, binary, cert, key, tmp, handshake_timeout=None, name=None):
        if name:
            self.name = name
        self.proc = subprocess.Popen(
            [binary, "--listen", "127.0.0.1:0", "--workers", "1", "--tls-cert", cert,
             "--tls-key", key, "--keepalive-timeout", "10m", "--header-timeout", "10m",
             "--request-timeout", "10m",
             *(["--tls-handshake-timeout", "%gs" % handshake_timeout] if handshake_timeout
               else [])], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            self.stop()
            raise SystemExit("heartwheel-http did not start: %r" % line)
        self.port = int(line.strip().rsplit(":", 1)[1])

    def pids(self):
        return [self.proc.pid]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Nginx:
    name = "nginx"

    def __init__(self, binary, cert, key, tmp, handshake_timeout=None):
        self.port = free_port()
        # nginx's http module bounds the TLS handshake by client_header_timeout.
        header_timeout = "client_header_timeout %dms;" % (handshake_timeout * 1000) \
            if handshake_timeout else ""
        self.dir = tempfile.mkdtemp(dir=tmp)
        conf = os.path.join(self.dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write("""
worker_processes 1;
daemon off;
pid %(d)s/nginx.pid;
error_log %(d)s/error.log error;
events { worker_connections 40000; }
http {
  access_log off;
  client_body_temp_path %(d)s; proxy_temp_path %(d)s; fastcgi_temp_path %(d)s;
  uwsgi_temp_path %(d)s; scgi_temp_path %(d)s;
  keepalive_timeout 10m;
  keepalive_requests 100000;
  %(header_timeout)s
  server {
    listen 127.0.0.1:%(port)d ssl backlog=4096;
    ssl_certificate %(cert)s;
    ssl_certificate_key %(key)s;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_tickets on;
    location / { return 200 "ok\\n"; }
  }
}
""" % {"d": self.dir, "port": self.port, "cert": cert, "key": key,
       "header_timeout": header_timeout})
        self.proc = subprocess.Popen([binary, "-c", conf, "-e", os.path.join(self.dir, "error.log")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            self.stop()
            raise SystemExit("nginx did not start")
        time.sleep(0.2)

    def pids(self):
        return [p for p in process_tree(self.proc.pid) if p != self.proc.pid]  # the worker

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def open_tls(port, n, first, ctx):
    socks = []
    for i in range(first, first + n):
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        raw.bind(("127.0.0.%d" % (2 + i % 8), 0))
        raw.connect(("127.0.0.1", port))
        s = ctx.wrap_socket(raw, server_hostname="localhost")
        s.sendall(REQUEST)
        read_http_response(s)
        socks.append(s)
    return socks


def memory(server, n):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    socks = []
    try:
        socks += open_tls(server.port, 200, 0, ctx)
        time.sleep(0.5)
        before = rss_kib(server.pids())
        socks += open_tls(server.port, n, 200, ctx)
        time.sleep(0.5)
        after = rss_kib(server.pids())
    finally:
        for s in socks:
            s.close()
    return {"rss_before_kib": before, "rss_after_kib": after,
            "bytes_per_connection": round((after - before) * 1024 / n)}


def s_time(server, seconds, mode):
    cpu0 = sum(cpu_seconds(p) for p in server.pids())
    r = subprocess.run([OPENSSL, "s_time", "-connect", "127.0.0.1:%d" % server.port,
                        "-" + mode, "-time", str(seconds), "-www", "/"],
                       capture_output=True, text=True, timeout=seconds * 3 + 30)
    cpu = sum(cpu_seconds(p) for p in server.pids()) - cpu0
    # "N connections in T real seconds": whole seconds of wall time (the
    # other line's seconds are the client's user CPU).
    m = re.search(r"(\d+) connections in (\d+) real seconds", r.stdout)
    if not m:
        raise SystemExit("s_time: %s %s" % (r.stdout, r.stderr))
    count, real = int(m.group(1)), max(1, int(m.group(2)))
    return {"handshakes": count, "seconds": real, "per_second": round(count / real),
            "server_cpu_s": round(cpu, 2),
            "per_server_cpu_second": round(count / cpu) if cpu > 0 else None}


# A TLS record header announcing 512 bytes of handshake, then the first 100
# of a ClientHello: a server must wait for the rest.
HALF_HELLO = b"\x16\x03\x01\x02\x00" + b"\x01\x00\x01\xfc\x03\x03" + bytes(range(94))


def percentiles_ms(samples):
    if not samples:
        return {"count": 0}
    xs = sorted(samples)
    at = lambda q: round(xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))] * 1000, 2)  # noqa: E731
    return {"count": len(xs), "p50": at(0.5), "p99": at(0.99), "max": round(xs[-1] * 1000, 2)}


def normal_client(port, stop, latencies):
    """Handshake + GET + answer + close, back to back with a 20 ms pause: the
    latency of each (TLS 1.3, full handshakes) into `latencies`."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            with ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=30),
                                 server_hostname="localhost") as s:
                s.sendall(REQUEST)
                read_http_response(s)
            latencies.append(time.monotonic() - t0)
        except (OSError, SystemExit) as e:
            latencies.append(float("inf"))
            print("normal client: %r" % e, file=sys.stderr)
        stop.wait(0.02)


def stall(server, peers, timeout):
    """`peers` connections each send HALF_HELLO and stall; how long until the
    server closes each (it must: the handshake timeout), and a normal client's
    latency before and meanwhile."""
    import selectors
    import threading
    baseline, during = [], []
    stop = threading.Event()
    t = threading.Thread(target=normal_client, args=(server.port, stop, baseline))
    t.start()
    time.sleep(2)
    stop.set()
    t.join()
    rss0 = rss_kib(server.pids())
    cpu0 = sum(cpu_seconds(p) for p in server.pids())
    sel = selectors.DefaultSelector()
    sent = {}
    closed_after = []
    for i in range(peers):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.%d" % (2 + i % 8), 0))
        sock.connect(("127.0.0.1", server.port))
        sock.sendall(HALF_HELLO)
        sock.setblocking(False)
        sent[sock] = time.monotonic()
        sel.register(sock, selectors.EVENT_READ)
    opened = time.monotonic()
    stop = threading.Event()
    t = threading.Thread(target=normal_client, args=(server.port, stop, during))
    t.start()
    rss_peak = rss_kib(server.pids())
    deadline = opened + timeout * 1.5 + 5
    try:
        while sent and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=0.1):
                sock = key.fileobj
                try:
                    data = sock.recv(4096)
                except OSError:
                    data = b""
                if data:
                    continue  # an alert first; the close follows
                closed_after.append(time.monotonic() - sent.pop(sock))
                sel.unregister(sock)
                sock.close()
            if time.monotonic() - opened < timeout:
                rss_peak = max(rss_peak, rss_kib(server.pids()))
    finally:
        stop.set()
        t.join()
        for sock in sent:
            sock.close()
        sel.close()
    cpu = sum(cpu_seconds(p) for p in server.pids()) - cpu0
    closed_after.sort()
    return {"peers": peers, "handshake_timeout_s": timeout, "closed": len(closed_after),
            "not_closed": len(sent),
            "closed_early": sum(1 for x in closed_after if x < timeout - 0.05),
            "closed_after_s": {"min": round(closed_after[0], 3) if closed_after else None,
                               "p50": round(closed_after[len(closed_after) // 2], 3)
                               if closed_after else None,
                               "max": round(closed_after[-1], 3) if closed_after else None},
            "normal_client_ms": {"before": percentiles_ms(baseline),
                                 "during": percentiles_ms(during)},
            "rss_growth_kib": rss_peak - rss0,
            "server_cpu_s": round(cpu, 2)}


def stall_main(argv):
    ap = argparse.ArgumentParser(
        prog="tls_bench.py stall",
        description="Peers that send half a ClientHello and stall, against heartwheel-http and "
                    "nginx in turn: all must be closed at the handshake timeout (nginx: "
                    "client_header_timeout), while a normal client's latency is measured.")
    ap.add_argument("--http", default=os.path.join(BIN_DIR, "heartwheel-http"))
    ap.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    ap.add_argument("--peers", type=int, default=2000)
    ap.add_argument("--handshake-timeout", type=float, default=10.0, help="seconds")
    ap.add_argument("--quick", action="store_true",
                    help="a small run that shows it works: 200 peers, a 2 s timeout")
    ap.add_argument("--no-nginx", action="store_true", help="heartwheel-http only")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.peers, args.handshake_timeout = 200, 2.0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("watchdog")))
    signal.alarm(int(args.handshake_timeout * 4) + 300)
    tmp = tempfile.mkdtemp(prefix="hw-tls-bench-")
    status = 0
    try:
        cert, key = make_cert(tmp, "ecdsa", "ecdsa")
        servers = [(Heartwheel, args.http)] + ([] if args.no_nginx else [(Nginx, args.nginx)])
        for cls, binary in servers:
            server = cls(binary, cert, key, tmp, handshake_timeout=args.handshake_timeout)
            try:
                r = {"server": server.name, "mode": "stall", "load": round(os.getloadavg()[0], 1),
                     **stall(server, args.peers, args.handshake_timeout)}
            finally:
                server.stop()
            if r["not_closed"] or r["closed_early"]:
                status = 1
            print(json.dumps(r) if args.json else "%-16s %s" % (
                r["server"], json.dumps({k: v for k, v in r.items() if k != "server"})),
                flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return status


def one_server(cls, binary, cert, key, tmp, key_kind, args, name=None):
    server = cls(binary, cert, key, tmp, name=name) if name else cls(binary, cert, key, tmp)
    try:
        r = {"server": server.name, "key": key_kind, "load": round(os.getloadavg()[0], 1)}
        if args.only != "memory":
            r["full"] = s_time(server, args.seconds, "new")
            if key_kind == "ecdsa":
                r["resumed"] = s_time(server, args.seconds, "reuse")
        if args.only != "handshakes" and key_kind == "ecdsa":
            r["memory"] = memory(server, args.connections)
            r["memory"]["connections"] = args.connections
    finally:
        server.stop()
    return r


BEFORE_NAME = "heartwheel-http-before"


def summary(results):
    """Medians over the rounds of each figure, per server, and the ratio
    heartwheel / nginx of the medians (for memory: bytes, lower is better)."""
    figures = {"ecdsa full": ("ecdsa", "full", "per_server_cpu_second"),
               "ecdsa resumed": ("ecdsa", "resumed", "per_server_cpu_second"),
               "rsa full": ("rsa", "full", "per_server_cpu_second"),
               "memory": ("ecdsa", "memory", "bytes_per_connection")}
    out = {"summary": "median of %d rounds" % max(r["round"] for r in results)}
    for label, (key_kind, part, field) in figures.items():
        med = {}
        for name in ("heartwheel-http", BEFORE_NAME, "nginx"):
            xs = [r[part][field] for r in results
                  if r["server"] == name and r["key"] == key_kind and part in r
                  and r[part].get(field) is not None]
            if xs:
                med[name] = statistics.median(xs)
        if "heartwheel-http" in med and "nginx" in med:
            out[label] = {"heartwheel-http": med["heartwheel-http"], "nginx": med["nginx"],
                          "heartwheel / nginx": round(med["heartwheel-http"] / med["nginx"], 3)}
            if BEFORE_NAME in med:
                out[label][BEFORE_NAME] = med[BEFORE_NAME]
                out[label]["heartwheel / before"] = round(
                    med["heartwheel-http"] / med[BEFORE_NAME], 3)
    out["load"] = [min(r["load"] for r in results), max(r["load"] for r in results)]
    return out


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "stall":
        return stall_main(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--http", default=os.path.join(BIN_DIR, "heartwheel-http"))
    ap.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    ap.add_argument("--before", metavar="BIN",
                    help="a heartwheel-http built before a change, measured in the same rounds "
                         "(reported as heartwheel-http-before)")
    ap.add_argument("--connections", type=int, default=5000)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--only", choices=["memory", "handshakes"], default=None)
    ap.add_argument("--rounds", type=int, default=1,
                    help="alternating rounds (who goes first alternates); with more than one, "
                         "a last line gives the medians and their ratios")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("watchdog")))
    signal.alarm(1800)
    tmp = tempfile.mkdtemp(prefix="hw-tls-bench-")
    results = []
    try:
        certs = {k: make_cert(tmp, k, k) for k in ("ecdsa", "rsa")}
        servers = [(Heartwheel, args.http, None), (Nginx, args.nginx, None)]
        if args.before:
            servers.insert(1, (Heartwheel, args.before, BEFORE_NAME))
        for rnd in range(args.rounds):
            # Alternate the order, so a drift in the machine's load falls on
            # every server alike.
            order = servers if rnd % 2 == 0 else servers[::-1]
            for key_kind in ("ecdsa", "rsa"):
                cert, key = certs[key_kind]
                for cls, binary, name in order:
                    r = one_server(cls, binary, cert, key, tmp, key_kind, args, name)
                    r["round"] = rnd + 1
                    results.append(r)
                    print(json.dumps(r) if args.json else
                          "%-16s %-5s %s" % (r["server"], key_kind,
                                             json.dumps({k: v for k, v in r.items()
                                                         if k not in ("server", "key")})),
                          flush=True)
        if args.rounds > 1:
            s = summary(results)
            print(json.dumps(s) if args.json else "summary " + json.dumps(s), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
