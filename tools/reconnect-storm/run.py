#!/usr/bin/python3
"""Reconnect storm: N clients connected to heartwheel-echo; restart the
server; measure how the clients come back.

  1. starts build/bin/heartwheel-echo --processes P (SO_REUSEPORT, each
     process under the 20000-descriptor limit) on a fixed free port;
  2. starts build/bin/heartwheel-load --auto-reconnect (L processes, source
     addresses 127.0.0.x) and waits until every client is connected;
  3. restarts the server: SIGKILL (a crash: the kernel closes every socket at
     once) or SIGTERM (a drain) to the server's processes, then starts it
     again on the same port at once;
  4. samples the server's processes from /proc every 0.5 s (CPU, RSS, open
     files) and reads their counters (--stats-json: accept_errors,
     fd_exhausted, accept_pauses) when each instance exits;
  5. reports: time until every client was back (from the restart), connect
     errors during the storm, reconnects / failed attempts / server CPU per
     second, an ASCII histogram, and an SVG plot (--svg).

With tokens against heartwheel-chat (a version-2 connect per client, HS256
or ES256): tools/reconnect-storm/chat_tokens.py --help.

Everything started here is stopped by PID (process groups of our own).
Exit status: 0 every client came back, 1 not all came back or a run failed,
2 usage error.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "pylib"))
from procs import free_port, process_tree  # noqa: E402
EXIT_FAILURE, EXIT_USAGE = 1, 2
FD_LIMIT = 20000


def log(msg):
    print(f"reconnect-storm: {msg}", file=sys.stderr, flush=True)


def die(msg, status=EXIT_FAILURE):
    print(f"reconnect-storm: error: {msg}", file=sys.stderr)
    sys.exit(status)


def proc_stat(pid):
    """(cpu seconds, rss KiB, open files) of one process, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE") // 1024
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        return cpu, rss, fds
    except (OSError, IndexError, ValueError):
        return None


class Server:
    def __init__(self, args, port, tag, tmp):
        self.stats = os.path.join(tmp, f"echo-{tag}.json")
        self.cmd = [args.echo, "--listen", f"127.0.0.1:{port}", "--processes",
                    str(args.server_processes), "--workers", "1", "--read-idle", "10m",
                    "--drain-timeout", "2s", "--stats-json", self.stats] + args.server_arg
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, start_new_session=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on"):
            self.stop(signal.SIGKILL)
            raise RuntimeError(f"heartwheel-echo did not start: {line!r}")

    def stop(self, sig):
        try:
            os.killpg(self.proc.pid, sig)  # the group we created: the parent and its forks
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def counters(self):
        try:
            with open(self.stats) as f:
                j = json.load(f)
        except (OSError, ValueError):
            return None
        net = j.get("net", j)
        keys = ("connections_accepted", "connections_peak", "accept_errors", "fd_exhausted",
                "accept_pauses", "process_restarts", "closed_by_reason")
        return {k: net[k] for k in keys if k in net}


class Sampler(threading.Thread):
    """Server CPU (all processes, percent of one core), RSS, files; every 0.5 s."""

    def __init__(self, t0):
        super().__init__(daemon=True)
        self.t0, self.pid, self.rows = t0, None, []
        self.stop_event = threading.Event()
        self.last = {}

    def run(self):
        prev_time = time.monotonic()
        while not self.stop_event.is_set():
            now = time.monotonic()
            cpu = rss = fds = 0
            seen = {}
            for p in process_tree(self.pid) if self.pid else []:
                s = proc_stat(p)
                if s:
                    seen[p] = s[0]
                    rss, fds = rss + s[1], fds + s[2]
                    cpu += s[0] - self.last.get(p, s[0])
            dt = max(now - prev_time, 0.05)
            prev_time, self.last = now, seen
            self.rows.append({"t_s": round(now - self.t0, 2), "cpu_pct": round(100 * cpu / dt, 1),
                              "rss_mib": round(rss / 1024, 1), "files": fds})
            self.stop_event.wait(0.5)


def per_second_cpu(rows, seconds):
    out = [0.0] * seconds
    counts = [0] * seconds
    for r in rows:
        s = int(r["t_s"])
        if 0 <= s < seconds:
            out[s] += r["cpu_pct"]
            counts[s] += 1
    return [round(out[i] / counts[i], 1) if counts[i] else 0.0 for i in range(seconds)]


def ascii_histogram(series, restart_s, width=50):
    peak = max(series) or 1
    lines = []
    for s, n in enumerate(series):
        if s < restart_s - 1:
            continue
        bar = "#" * round(width * n / peak)
        mark = " <- restart" if s == int(restart_s) else ""
        lines.append(f"{s - restart_s:+6.1f}s {n:7d} {bar}{mark}")
    return "\n".join(lines)


def svg_plot(path, rec, fail, cpu, restart_s, title):
    w, h, ml, mb, mt = 900, 360, 70, 40, 30
    n = max(len(rec), len(cpu), 1)
    peak = max(max(rec, default=0), max(fail, default=0), 1)
    cpu_peak = max(max(cpu, default=0), 100)
    x = lambda s: ml + (w - ml - 20) * s / n  # noqa: E731
    y = lambda v: h - mb - (h - mb - mt) * v / peak  # noqa: E731
    yc = lambda v: h - mb - (h - mb - mt) * v / cpu_peak  # noqa: E731
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{w}" height="{h}" fill="white"/>',
             f'<text x="{ml}" y="18">{title}</text>',
             f'<line x1="{ml}" y1="{h - mb}" x2="{w - 20}" y2="{h - mb}" stroke="black"/>',
             f'<line x1="{ml}" y1="{mt}" x2="{ml}" y2="{h - mb}" stroke="black"/>',
             f'<text x="5" y="{mt + 10}">{peak}/s</text>',
             f'<text x="{w - 120}" y="{mt + 10}" fill="#c60">CPU {cpu_peak:.0f}%</text>',
             f'<line x1="{x(restart_s):.1f}" y1="{mt}" x2="{x(restart_s):.1f}" y2="{h - mb}" '
             f'stroke="gray" stroke-dasharray="4"/>',
             f'<text x="{x(restart_s) + 3:.1f}" y="{mt + 25}" fill="gray">restart</text>']
    for s in range(0, n + 1, max(1, n // 12)):
        parts.append(f'<text x="{x(s) - 5:.1f}" y="{h - mb + 15}">{s}</text>')
    parts.append(f'<text x="{w // 2}" y="{h - 5}">seconds since the clients started</text>')
    bw = max(1.0, (w - ml - 20) / n - 1)
    for s, v in enumerate(rec):
        if v:
            parts.append(f'<rect x="{x(s):.1f}" y="{y(v):.1f}" width="{bw:.1f}" '
                         f'height="{h - mb - y(v):.1f}" fill="#36c"/>')
    for s, v in enumerate(fail):
        if v:
            parts.append(f'<rect x="{x(s) + bw / 3:.1f}" y="{y(v):.1f}" width="{bw / 3:.1f}" '
                         f'height="{h - mb - y(v):.1f}" fill="#c33"/>')
    pts = " ".join(f"{x(s + 0.5):.1f},{yc(v):.1f}" for s, v in enumerate(cpu))
    parts.append(f'<polyline points="{pts}" fill="none" stroke="#c60" stroke-width="2"/>')
    parts.append(f'<text x="{ml + 10}" y="{h - mb - 10}" fill="#36c">reconnects/s</text>'
                 f'<text x="{ml + 110}" y="{h - mb - 10}" fill="#c33">failed attempts/s</text>'
                 f'<text x="{ml + 240}" y="{h - mb - 10}" fill="#c60">server CPU %</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def wait_open(load, clients, timeout):
    """Reads heartwheel-load's progress lines until `open` reaches clients."""
    end = time.monotonic() + timeout
    best = 0
    while time.monotonic() < end:
        line = load.stderr.readline()
        if not line:
            return best
        parts = line.split()
        if "open" in parts:
            best = int(parts[parts.index("open") + 1])
            if best >= clients:
                return best
    return best


def main():
    b = os.path.join(ROOT, "build", "bin")
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clients", type=int, default=20000)
    p.add_argument("--server-processes", type=int, help="default: enough for the fd limit, +1")
    p.add_argument("--load-processes", type=int, help="default: clients / 15000, rounded up")
    p.add_argument("--source-ips", type=int, default=8, help="127.0.0.1..127.0.0.N")
    p.add_argument("--connect-rate", type=int, default=10000, help="initial ramp, connections/s")
    p.add_argument("--restart", choices=("kill", "term"), default="kill",
                   help="kill: SIGKILL (a crash); term: SIGTERM (drain, --drain-timeout 2s)")
    p.add_argument("--after-restart", type=int, default=40, help="seconds to watch after it")
    p.add_argument("--down", type=float, default=2.0,
                   help="seconds the server stays down between stop and start (a real restart)")
    p.add_argument("--reconnect-initial", default="100ms")
    p.add_argument("--reconnect-max", default="10s")
    p.add_argument("--reconnect-jitter", default="1", help="0 lockstep .. 1 full jitter")
    p.add_argument("--message-interval", default="0", help="heartwheel-load -i (0: silent clients)")
    p.add_argument("--echo", default=os.path.join(b, "heartwheel-echo"))
    p.add_argument("--load", default=os.path.join(b, "heartwheel-load"))
    p.add_argument("--server-arg", action="append", default=[], help="extra heartwheel-echo flag")
    p.add_argument("--json", help="write the whole result here")
    p.add_argument("--svg", help="write the plot here")
    args = p.parse_args()

    if args.clients < 1 or args.after_restart < 5:
        die("--clients >= 1, --after-restart >= 5", EXIT_USAGE)
    per = FD_LIMIT - 200
    args.server_processes = args.server_processes or -(-args.clients // per) + 1
    args.load_processes = args.load_processes or max(1, -(-args.clients // 15000))
    if -(-args.clients // args.load_processes) > FD_LIMIT - 100:
        die("too many clients per load process: raise --load-processes", EXIT_USAGE)
    for name, path in (("heartwheel-echo", args.echo), ("heartwheel-load", args.load)):
        if not os.access(path, os.X_OK):
            die(f"{name} not found at '{path}' (cmake --build build --target {name})")

    tmp = tempfile.mkdtemp(prefix="reconnect-storm-")
    port = free_port()
    ramp_s = args.clients / args.connect_rate
    duration = int(ramp_s + 15 + args.down + args.after_restart)
    load_json = os.path.join(tmp, "load.json")
    load_cmd = [args.load, "--target", f"127.0.0.1:{port}", "--connections", str(args.clients),
                "--processes", str(args.load_processes),
                "--source-ips", f"127.0.0.1-127.0.0.{args.source_ips}",
                "--connect-rate", str(args.connect_rate), "--message-interval",
                args.message_interval, "--duration", f"{duration}s", "--grace", "20s",
                "--auto-reconnect", "--reconnect-initial", args.reconnect_initial,
                "--reconnect-max", args.reconnect_max, "--reconnect-jitter",
                args.reconnect_jitter, "--linger-reset", "--json", load_json]
    load_before = os.getloadavg()
    first = Server(args, port, "before", tmp)
    t0 = time.monotonic()
    sampler = Sampler(t0)
    sampler.pid = first.proc.pid
    sampler.start()
    load = subprocess.Popen(load_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    second = None
    try:
        opened = wait_open(load, args.clients, ramp_s + 20)
        if opened < args.clients:
            log(f"only {opened} of {args.clients} connected before the restart")
        time.sleep(3)
        restart_s = time.monotonic() - t0
        log(f"restart ({args.restart}) at {restart_s:.1f} s with {opened} open")
        first.stop(signal.SIGKILL if args.restart == "kill" else signal.SIGTERM)
        down_s = time.monotonic() - t0
        time.sleep(args.down)
        second = Server(args, port, "after", tmp)
        up_s = time.monotonic() - t0
        sampler.pid = second.proc.pid
        threading.Thread(target=lambda: [None for _ in load.stderr], daemon=True).start()
        load.wait(duration + 60)
    finally:
        if load.poll() is None:
            os.killpg(load.pid, signal.SIGTERM)
            load.wait(30)
        sampler.stop_event.set()
        sampler.join(5)
        if second:
            second.stop(signal.SIGTERM)
        first.stop(signal.SIGKILL)
    load_after = os.getloadavg()

    with open(load_json) as f:
        r = json.load(f)
    shutil.rmtree(tmp, ignore_errors=True)
    rc = r["reconnect"]
    seconds = len(rc["reconnects_per_s"])
    cpu = per_second_cpu(sampler.rows, max(seconds, int(up_s) + 1))
    back_s = (rc["all_back_ms"] / 1000 - restart_s) if rc["all_back_ms"] else None
    peak_s = max(range(seconds), key=lambda s: rc["reconnects_per_s"][s]) if seconds else None
    storm_cpu = [c for s, c in enumerate(cpu) if s >= int(up_s)]
    out = {
        "clients": args.clients, "server_processes": args.server_processes,
        "load_processes": args.load_processes, "restart": args.restart, "down": args.down,
        "reconnect": {"initial": args.reconnect_initial, "max": args.reconnect_max,
                      "jitter": args.reconnect_jitter},
        "open_before_restart": opened,
        "restart_at_s": round(restart_s, 2), "server_down_s": round(up_s - restart_s, 2),
        "server_stop_s": round(down_s - restart_s, 2),
        "all_back_after_s": round(back_s, 2) if back_s is not None else None,
        "down_at_end": rc["down_at_end"], "open_at_end": r["open_at_end"],
        "losses": rc["losses"], "reconnects": rc["reconnects"],
        "reconnect_attempts": rc["attempts"], "failed_attempts": rc["failures"],
        "failed_by_errno": rc["errors"],
        "peak_reconnects_per_s": max(rc["reconnects_per_s"], default=0),
        "peak_second_after_restart": round(peak_s - restart_s, 1) if peak_s is not None else None,
        "server_cpu_pct_max_after_restart": max(storm_cpu, default=0),
        "server_before": first.counters(), "server_after": second.counters() if second else None,
        "loadavg_1m": [round(load_before[0], 2), round(load_after[0], 2)],
        "reconnects_per_s": rc["reconnects_per_s"], "failures_per_s": rc["failures_per_s"],
        "losses_per_s": rc["losses_per_s"], "server_cpu_pct_per_s": cpu,
        "load_cmd": " ".join(load_cmd), "server_cmd": " ".join(first.cmd),
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    if args.svg:
        svg_plot(args.svg, rc["reconnects_per_s"], rc["failures_per_s"], cpu, restart_s,
                 f"{args.clients} clients, {args.server_processes} server processes, restart by "
                 f"{args.restart}, jitter {args.reconnect_jitter}")
    brief = {k: v for k, v in out.items() if not k.endswith("_per_s") and not k.endswith("_cmd")}
    print(json.dumps(brief))
    print(ascii_histogram(rc["reconnects_per_s"], restart_s))
    sys.exit(0 if rc["down_at_end"] == 0 and back_s is not None else EXIT_FAILURE)


if __name__ == "__main__":
    main()
