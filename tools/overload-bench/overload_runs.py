#!/usr/bin/python3
"""heartwheel-echo's protection flags under heartwheel-load, at a few
thousand connections: the figures of docs/BENCHMARKS.md ("Overload
protection"). Three runs, each printing its commands and one result line:

  scaled   --read-idle 30s, scaled to 2 s from 4,000 to 8,000 connections;
           10,000 connections, 10% silent after their first echo
  drop     --max-connections 10000 --drop-idle-at-limit: 10,000 connections
           (10% silent), then 800 newcomers from another address
  per-ip   --workers 2 --max-connections-per-ip 2000: 10,000 connections from
           4 addresses (2,500 each)

Usage: tools/overload-bench/overload_runs.py [--build-dir build] [--only NAME]
Exit status: 0 when every run met its expectation, 1 otherwise, 2 usage error.
Servers and harnesses it starts are stopped by PID.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def start_echo(bin_dir, args, stats):
    cmd = [f"{bin_dir}/heartwheel-echo", "--listen", "127.0.0.1:0", "--stats-json", stats] + args
    print("  $", " ".join(cmd[:1] + cmd[3:]), flush=True)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if not line.startswith("listening on "):
        p.kill()
        raise RuntimeError("heartwheel-echo did not start: " + line)
    return p, int(line.rsplit(":", 1)[1])


def load(bin_dir, port, args, out):
    cmd = [f"{bin_dir}/heartwheel-load", "--target", f"127.0.0.1:{port}", "--quiet", "--json", out] + args
    print("  $", " ".join(cmd[:1] + cmd[3:4] + cmd[6:]), flush=True)
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL)


def stop(p):
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)


def read(path):
    with open(path) as f:
        return json.load(f)


def scaled(bin_dir, tmp):
    echo, port = start_echo(bin_dir, ["--read-idle", "30s", "--tick", "10ms", "--overload-start", "4000",
                                      "--overload-saturation", "8000", "--overload-min-timeout", "2s"],
                            f"{tmp}/echo.json")
    cpu0 = cpu_seconds(echo.pid)
    l = load(bin_dir, port, ["--connections", "10000", "--processes", "2", "--source-ips",
                             "127.0.0.1-127.0.0.2", "--connect-rate", "5000", "--message-interval", "1s",
                             "--dead-fraction", "0.1", "--expect-idle-close", "2s", "--idle-close-slack",
                             "1500ms", "--duration", "20s"], f"{tmp}/load.json")
    status = l.wait(timeout=120)
    cpu = cpu_seconds(echo.pid) - cpu0
    stop(echo)
    r, s = read(f"{tmp}/load.json"), read(f"{tmp}/echo.json")
    d = r["dead"]
    print(f"  dead closed {d['closed']}/{d['count']} (early {d['closed_early']}, late {d['closed_late']}), "
          f"close after last send ms p50 {d['close_after_ms']['p50']} p99 {d['close_after_ms']['p99']} "
          f"max {d['close_after_ms']['max']}; live closed {r['live_closed_by_server']}; "
          f"server: swept {s['overload']['swept']} in {s['overload']['sweeps']} sweeps, scale changes "
          f"{s['overload']['scale_changes']}, activity moves {s['overload']['activity_moves']}, "
          f"messages {r['messages_received']}, CPU {cpu:.2f} s")
    return status == 0 and d["closed"] == d["count"] and r["live_closed_by_server"] == 0


def drop(bin_dir, tmp):
    echo, port = start_echo(bin_dir, ["--max-connections", "10000", "--drop-idle-at-limit",
                                      "--drop-idle-after", "2s", "--tick", "10ms"], f"{tmp}/echo.json")
    cpu0 = cpu_seconds(echo.pid)
    first = load(bin_dir, port, ["--connections", "10000", "--processes", "2", "--source-ips",
                                 "127.0.0.1-127.0.0.2", "--connect-rate", "5000", "--message-interval", "1s",
                                 "--dead-fraction", "0.1", "--duration", "20s"], f"{tmp}/first.json")
    time.sleep(8)  # ramp (2 s) + the silent ones idle for more than 2 s
    second = load(bin_dir, port, ["--connections", "800", "--source-ips", "127.0.0.3", "--connect-rate",
                                  "2000", "--message-interval", "1s", "--duration", "8s"],
                  f"{tmp}/second.json")
    s2 = second.wait(timeout=120)
    s1 = first.wait(timeout=120)
    cpu = cpu_seconds(echo.pid) - cpu0
    stop(echo)
    a, b, s = read(f"{tmp}/first.json"), read(f"{tmp}/second.json"), read(f"{tmp}/echo.json")
    print(f"  first: dead closed {a['dead']['closed']}/{a['dead']['count']}, live closed "
          f"{a['live_closed_by_server']}; newcomers established {b['connections_established']}/800, "
          f"closed by server {b['live_closed_by_server']}, connect p99 {b['connect_us']['p99']} us; server: "
          f"overload {s['closed_by_reason']['overload']}, limit {s['closed_by_reason']['limit']}, "
          f"drop probes {s['overload']['drop_probes']}, activity moves {s['overload']['activity_moves']}, "
          f"CPU {cpu:.2f} s")
    return (s1 == 0 and s2 == 0 and a["live_closed_by_server"] == 0 and b["live_closed_by_server"] == 0
            and s["closed_by_reason"]["overload"] == 800)


def per_ip(bin_dir, tmp):
    echo, port = start_echo(bin_dir, ["--workers", "2", "--max-connections-per-ip", "2000"],
                            f"{tmp}/echo.json")
    cpu0 = cpu_seconds(echo.pid)
    l = load(bin_dir, port, ["--connections", "10000", "--processes", "2", "--source-ips",
                             "127.0.0.1-127.0.0.4", "--connect-rate", "5000", "--message-interval", "1s",
                             "--duration", "10s"], f"{tmp}/load.json")
    status = l.wait(timeout=120)
    cpu = cpu_seconds(echo.pid) - cpu0
    stop(echo)
    r, s = read(f"{tmp}/load.json"), read(f"{tmp}/echo.json")
    resets = r["connect_errors"].get("ECONNRESET", 0) + r["live_closed_by_server"]
    print(f"  established {r['connections_established']}, reset on connect "
          f"{r['connect_errors'].get('ECONNRESET', 0)} + after {r['live_closed_by_server']}, open at end "
          f"{r['open_at_end']}; server: ip_limit {s['closed_by_reason']['ip_limit']}, CPU {cpu:.2f} s")
    return status in (0, 1) and s["closed_by_reason"]["ip_limit"] == 2000 and resets == 2000


RUNS = {"scaled": scaled, "drop": drop, "per-ip": per_ip}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--only", choices=sorted(RUNS))
    a = ap.parse_args()
    bin_dir = os.path.join(a.build_dir, "bin")
    ok = True
    for name, run in RUNS.items():
        if a.only and name != a.only:
            continue
        print(name, flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            good = run(bin_dir, tmp)
        print("  ->", "as expected" if good else "NOT as expected", flush=True)
        ok = ok and good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
