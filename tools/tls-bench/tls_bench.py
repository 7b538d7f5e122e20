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

Usage: tls_bench.py [--http BIN] [--nginx BIN] [--connections N] [--seconds S] [--json]

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
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
from procs import cpu_seconds, process_tree  # noqa: E402

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


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Heartwheel:
    name = "heartwheel-http"

    def __init__(self, binary, cert, key, tmp):
        self.proc = subprocess.Popen(
            [binary, "--listen", "127.0.0.1:0", "--workers", "1", "--tls-cert", cert,
             "--tls-key", key, "--keepalive-timeout", "10m", "--header-timeout", "10m",
             "--request-timeout", "10m"], stdout=subprocess.PIPE, text=True)
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

    def __init__(self, binary, cert, key, tmp):
        self.port = free_port()
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
  server {
    listen 127.0.0.1:%(port)d ssl;
    ssl_certificate %(cert)s;
    ssl_certificate_key %(key)s;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_tickets on;
    location / { return 200 "ok\\n"; }
  }
}
""" % {"d": self.dir, "port": self.port, "cert": cert, "key": key})
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


def rss_kib(pids):
    total = 0
    for pid in pids:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS"):
                    total += int(line.split()[1])
    return total


def read_response(sock):
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            raise SystemExit("closed before a response: %r" % buf)
        buf += chunk
    head, body = buf.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        body += sock.recv(4096)


def open_tls(port, n, first, ctx):
    socks = []
    for i in range(first, first + n):
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        raw.bind(("127.0.0.%d" % (2 + i % 8), 0))
        raw.connect(("127.0.0.1", port))
        s = ctx.wrap_socket(raw, server_hostname="localhost")
        s.sendall(REQUEST)
        read_response(s)
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--http", default=os.path.join(BIN_DIR, "heartwheel-http"))
    ap.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    ap.add_argument("--connections", type=int, default=5000)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--only", choices=["memory", "handshakes"], default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("watchdog")))
    signal.alarm(1800)
    tmp = tempfile.mkdtemp(prefix="hw-tls-bench-")
    results = []
    try:
        certs = {k: make_cert(tmp, k, k) for k in ("ecdsa", "rsa")}
        for key_kind in ("ecdsa", "rsa"):
            cert, key = certs[key_kind]
            for cls, binary in ((Heartwheel, args.http), (Nginx, args.nginx)):
                server = cls(binary, cert, key, tmp)
                try:
                    r = {"server": server.name, "key": key_kind,
                         "load": round(os.getloadavg()[0], 1)}
                    if args.only != "memory":
                        r["full"] = s_time(server, args.seconds, "new")
                        if key_kind == "ecdsa":
                            r["resumed"] = s_time(server, args.seconds, "reuse")
                    if args.only != "handshakes" and key_kind == "ecdsa":
                        r["memory"] = memory(server, args.connections)
                        r["memory"]["connections"] = args.connections
                finally:
                    server.stop()
                results.append(r)
                print(json.dumps(r) if args.json else
                      "%-16s %-5s %s" % (r["server"], key_kind,
                                         json.dumps({k: v for k, v in r.items()
                                                     if k not in ("server", "key")})),
                      flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
