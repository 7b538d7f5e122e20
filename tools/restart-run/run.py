#!/usr/bin/python3
"""The restart at full size (issue 39, docs/operating.md): heartwheel-chat with
--redis and N WebSocket subscribers (10,000 by default) held by heartwheel-load
in several processes (the open-file limit is 20,000 per process), a publisher
publishing numbered messages throughout, and a client connecting in a loop
(plain HTTP requests, each a new connection); `kill -USR2` replaces the
process. Prints one JSON line: connections refused (must be 0), subscribers
closed with 1012 / back / recovered, publications missed (each subscriber's
offsets checked for gaps after its recovery: heartwheel-load's
--expect-delivery), the reconnects per second after the signal over the drain
window, the CPU each side used, the load average (also in OUT/result.json,
beside heartwheel-load's report and both programs' logs).

usage: tools/restart-run/run.py [--chat BIN] [--load BIN] [--clients N]
         [--load-processes P] [--source-ips RANGE] [--channels K] [--drain 20s]
         [--workers N] [--publish-rate R] [--connect-rate R] [--server-arg=FLAG ...]
         [--out DIR]
Exit status 0 when "met": nothing refused, every subscriber closed once with
1012, back and recovered, nothing missed or repeated, no error. Run under
/usr/bin/python3. docs/BENCHMARKS.md quotes it."""
import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "pylib"))
from redis_server import RedisServer  # noqa: E402
from restart_clients import Chat, alive, connect_loop, eventually, write  # noqa: E402


def seconds(text):
    units = {"ms": 0.001, "s": 1, "m": 60}
    for u in ("ms", "s", "m"):
        if text.endswith(u):
            return float(text[:-len(u)]) * units[u]
    raise SystemExit("--drain: a duration like 20s")


def scrape(port, name):
    """The sum of a metric's samples on heartwheel-chat's /metrics (0 if none)."""
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and line[len(name):len(name) + 1] in (" ", "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def listen_overflows():
    """The kernel's count of connections dropped because an accept queue was
    full (TcpExt ListenOverflows, the whole machine)."""
    with open("/proc/net/netstat") as f:
        rows = [l.split() for l in f if l.startswith("TcpExt:")]
    return int(dict(zip(rows[0][1:], rows[1][1:]))["ListenOverflows"])


def cpu_seconds(pid):
    """utime + stime of `pid` so far, or None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class CpuWindow(threading.Thread):
    """CPU seconds each role's processes used from start() until stop():
    `roles` maps a name to a function giving the role's pids now. Sampled
    every 0.2 s, so a process that exits meanwhile keeps its last reading."""

    def __init__(self, roles):
        super().__init__(daemon=True)
        self.roles, self.first, self.last = roles, {}, {}
        self.done = threading.Event()
        self.sample()

    def sample(self):
        for role, pids in self.roles.items():
            for pid in pids():
                v = cpu_seconds(pid)
                if v is not None:
                    self.first.setdefault((role, pid), v)
                    self.last[(role, pid)] = v

    def run(self):
        while not self.done.wait(0.2):
            self.sample()

    def stop(self):
        self.done.set()
        self.join()
        self.sample()
        used = {}
        for key, v in self.last.items():
            used[key[0]] = round(used.get(key[0], 0) + v - self.first[key], 2)
        return used


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def per_second_after(series, load_start, signal_at):
    """heartwheel-load's per-second counts (index = second since its start)
    as counts per second since the signal (a count in the second the signal
    fell in goes to second 0)."""
    offset = signal_at - load_start
    out = []
    for i, n in enumerate(series):
        if n == 0:
            continue
        k = max(0, int(i - offset + 0.5))
        out.extend([0] * (k + 1 - len(out)))
        out[k] += n
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chat", default=os.path.join(ROOT, "build", "bin", "heartwheel-chat"))
    ap.add_argument("--load", default=None, help="heartwheel-load (default: beside --chat)")
    ap.add_argument("--clients", type=int, default=10000)
    ap.add_argument("--load-processes", type=int, default=4)
    ap.add_argument("--source-ips", default="127.0.0.1-127.0.0.4")
    ap.add_argument("--channels", type=int, default=100)
    ap.add_argument("--drain", default="20s")
    ap.add_argument("--workers", type=int, default=2, help="heartwheel-chat's worker loops")
    ap.add_argument("--publish-rate", type=float, default=50)
    ap.add_argument("--connect-rate", type=int, default=1000)
    ap.add_argument("--server-arg", action="append", default=[],
                    help="one more heartwheel-chat flag (repeatable), e.g. --server-arg=--no-join-leave")
    ap.add_argument("--out", default=None, help="keep the load report and logs here")
    a = ap.parse_args()
    load_bin = a.load or os.path.join(os.path.dirname(a.chat), "heartwheel-load")
    for b in (a.chat, load_bin):
        if not os.access(b, os.X_OK):
            raise SystemExit("%s: not built" % b)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the server inherits it
    if a.clients + 200 > hard:
        raise SystemExit("--clients %d: heartwheel-chat would pass the descriptor limit %d"
                         % (a.clients, hard))
    drain = seconds(a.drain)
    out = a.out or tempfile.mkdtemp(prefix="restart-run-")
    os.makedirs(out, exist_ok=True)
    # The run's length: the ramp, every channel published to twice, the
    # drain, the successor's own ramp of reconnects, and room after it.
    ramp = a.clients / a.connect_rate
    lead = 2 * a.channels / a.publish_rate + 3
    duration = int(ramp + lead + 30 + drain * 1.5)

    with RedisServer() as r:
        pidfile = os.path.join(out, "chat.pid")
        conf = os.path.join(out, "chat.toml")
        write(conf, "redis = \"%s\"\npubsub-prefix = \"restart-run:%d:\"\nworkers = %d\n"
                    "drain-timeout = \"%s\"\npid-file = \"%s\"\n"
                    % (r.address(), os.getpid(), a.workers, a.drain, pidfile))
        with Chat(a.chat, "--config", conf, "--metrics-listen", "127.0.0.1:0",
                  *a.server_arg) as c:
            old = c.proc.pid
            report = os.path.join(out, "load.json")
            load_log = open(os.path.join(out, "load.log"), "w")
            argv = [load_bin, "--mode", "ws", "--target", "127.0.0.1:%d" % c.port,
                    "--connections", str(a.clients), "--processes", str(a.load_processes),
                    "--source-ips", a.source_ips, "--channels", str(a.channels),
                    "--channel-prefix", "rr%d-" % os.getpid(),
                    "--publish-rate", str(a.publish_rate), "--publish-targets", "first",
                    "--publish-start", "%gs" % (ramp + 1), "--connect-rate", str(a.connect_rate),
                    "--expect-delivery", "--duration", "%ds" % duration, "--json", report]
            load_start = time.monotonic()
            load = subprocess.Popen(argv, stdout=load_log, stderr=subprocess.STDOUT)
            try:
                # Every subscriber in, and every channel published to (each
                # resubscribe then has a stream and an epoch to recover from).
                eventually(lambda: scrape(c.metrics, "heartwheel_pubsub_subscriptions")
                           >= a.clients or load.poll() is not None, ramp + 60, "all subscribed")
                eventually(lambda: scrape(c.metrics, "heartwheel_pubsub_publications_total")
                           >= 2 * a.channels or load.poll() is not None, lead + 30,
                           "publishing")
                if load.poll() is not None:
                    raise SystemExit("heartwheel-load ended early (%s/load.log)" % out)
                counts = {"ok": 0, "refused": 0, "failed": 0}
                stop = threading.Event()
                looper = threading.Thread(target=connect_loop, args=(c.port, stop, counts))
                looper.start()
                time.sleep(1)  # the connecting client's baseline before the signal
                load_before = os.getloadavg()
                overflows = listen_overflows()
                # Who used the CPU during the restart: the old process, its
                # successor, the clients (heartwheel-load's workers).
                window = CpuWindow({
                    "old_server": lambda: [old],
                    "successor": lambda: [p for p in [int(open(pidfile).read() or 0)]
                                          if p not in (0, old)],
                    "clients": lambda: children(load.pid)})
                window.start()
                sent = time.monotonic()
                os.kill(old, signal.SIGUSR2)
                eventually(lambda: c.proc.poll() is not None, drain + 60, "the old process gone")
                drained = time.monotonic()
                new = int(open(pidfile).read())
                c.others.append(new)
                assert new != old and alive(new), (old, new)
                time.sleep(5)  # the last ones' comeback
                cpu = window.stop()
                cpu_span = time.monotonic() - sent
                load_during = os.getloadavg()
                load.wait(timeout=duration + 60)
                overflows = listen_overflows() - overflows
                stop.set()
                looper.join()
            finally:
                if load.poll() is None:
                    load.kill()
                    load.wait()
                load_log.close()
            write(os.path.join(out, "chat.log"), "\n".join(c.err) + "\n")
            with open(report) as f:
                rep = json.load(f)
            ws = rep["ws"]
            sr = ws["server_restart"]
            refused = rep["connect_errors"].get("ECONNREFUSED", 0) + counts["refused"]
            met = (refused == 0 and counts["failed"] == 0 and rep["errors"] == {}
                   and sr["closes"] == sr["resubscribed"] == sr["recovered"] == a.clients
                   and ws["missing"] == 0 and ws["duplicates"] == 0 and load.returncode == 0)
            result = json.dumps({
                "met": met,
                "clients": a.clients, "load_processes": a.load_processes,
                "server_args": a.server_arg,
                "channels": a.channels, "workers": a.workers, "drain_s": drain,
                "old_exit_status": c.proc.returncode,
                "old_gone_after_signal_s": round(drained - sent, 2),
                "connecting_client": counts,
                "refused": refused,
                "connect_errors": rep["connect_errors"], "errors": rep["errors"],
                "live_closed_by_server": rep["live_closed_by_server"],
                "closed_1012": sr["closes"], "reconnected": sr["resubscribed"],
                "recovered": sr["recovered"], "not_recovered": ws["not_recovered"],
                "publisher_closes_1012": sr["publisher_closes"],
                "publications_acked": ws["publish_acks"],
                "publish_skipped": ws["publish_skipped"],
                "delivered": ws["delivered"], "recovered_publications":
                ws["recovered_publications"], "expected": ws["expected"],
                "missing": ws["missing"], "duplicates": ws["duplicates"],
                "every_publication_reached_every_subscriber":
                ws["every_publication_reached_every_live_subscriber"],
                "back_ms": sr["back_ms"],
                "listen_overflows_machine": overflows,
                "cpu_s_during_restart": cpu, "restart_window_s": round(cpu_span, 1),
                "closes_per_second_after_signal": per_second_after(sr["closes_per_s"],
                                                                   load_start, sent),
                "back_per_second_after_signal": per_second_after(sr["back_per_s"], load_start,
                                                                 sent),
                "spread_s": 0.8 * drain,  # serve's RestartOptions::spread
                "load_exit_status": load.returncode,
                "loadavg_before": load_before, "loadavg_during": load_during,
                "run_s": round(time.monotonic() - load_start, 1), "out": out,
            })
            write(os.path.join(out, "result.json"), result + "\n")
            print(result)
            return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
