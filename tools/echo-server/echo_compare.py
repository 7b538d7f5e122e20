#!/usr/bin/python3
"""heartwheel-echo against the echo floor (heartwheel-echo-floor, a bare C
epoll echo: one read() and one write() per message), same load, same run.

Each round runs both servers one after the other (the order alternates from
round to round, so a change in the machine's load hits both), each under
`heartwheel-load --mode echo`: N connections, one message of --message-size
bytes per connection every --interval. Over the steady window (from one
second after the ramp to one second before the end) it samples the server
from /proc and reports per echoed message:

  cpu_us_per_message     the server's CPU (/proc/PID/task/*/schedstat: the
                         scheduler's exact run time of every thread) / messages
  user_us_per_message    its user-space part (/proc/PID/stat utime, tick
                         sampled: right over a window of seconds)
  system_us_per_message  the rest (cpu - user)

where messages = bytes the server wrote (/proc/PID/io wchar) / message size
(both servers write nothing but echoes), and the ratios heartwheel / floor
per round and over the medians. Prints one JSON object on stdout (and
--json FILE), a line per measured server on stderr.

Usage: tools/echo-server/echo_compare.py [--connections 10000] [--interval 1]
       [--message-size 64] [--duration 20] [--rounds 3] [--build-dir build]
       [--before-bin OLD/heartwheel-echo]
Needs BUILD/bin/heartwheel-echo, heartwheel-echo-floor, heartwheel-load.
Every process it starts runs in its own process group and is stopped by that
group's id. Exit status: 0 done, 1 a server or the harness failed, 2 usage."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TICKS = os.sysconf("SC_CLK_TCK")
sys.path.insert(0, os.path.join(ROOT, "tools", "pylib"))
import procs  # noqa: E402


def sample(pid):
    """(monotonic s, cpu s exact, user s, wchar bytes) of one process."""
    cpu = 0.0
    for task in os.listdir("/proc/%d/task" % pid):  # every thread (heartwheel's workers)
        with open("/proc/%d/task/%s/schedstat" % (pid, task)) as f:
            cpu += int(f.read().split()[0]) / 1e9
    with open("/proc/%d/stat" % pid) as f:
        user = int(f.read().rsplit(")", 1)[1].split()[11]) / TICKS
    with open("/proc/%d/io" % pid) as f:
        wchar = next(int(line.split()[1]) for line in f if line.startswith("wchar:"))
    return time.monotonic(), cpu, user, wchar


def measure(kind, args, bins):
    if kind.startswith("heartwheel"):  # heartwheel, heartwheel_before (--before-bin)
        cmd = [bins["echo" if kind == "heartwheel" else "before"], "--listen", "127.0.0.1:0",
               "--workers", "1", "--stats-interval", "0"] + args.server_arg
    else:
        cmd = [bins["floor"], "--listen", "127.0.0.1:0"]
    server, port = procs.start_server(cmd)
    out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    try:
        ramp = args.connections / args.connect_rate
        load = subprocess.Popen(
            [bins["load"], "--mode", "echo", "--target", "127.0.0.1:%d" % port,
             "--connections", str(args.connections), "--connect-rate", str(args.connect_rate),
             "--message-interval", "%gs" % args.interval,
             "--message-size", str(args.message_size), "--duration", "%gs" % args.duration,
             "--linger-reset", "--quiet", "--json", out],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        t0 = time.monotonic()
        time.sleep(ramp + 1.0)
        first = sample(server.pid)
        time.sleep(max(1.0, args.duration - ramp - 2.0))
        last = sample(server.pid)
        stdout, stderr = load.communicate(timeout=args.duration + 60)
        if load.returncode not in (0, 3):
            raise RuntimeError("heartwheel-load failed (%d): %s %s" % (load.returncode, stdout,
                                                                       stderr[-2000:]))
        with open(out) as f:
            report = json.load(f)
    finally:
        procs.stop_group(server)
        if os.path.exists(out):
            os.unlink(out)
    seconds = last[0] - first[0]
    messages = (last[3] - first[3]) / args.message_size
    cpu, user = last[1] - first[1], last[2] - first[2]
    per = 1e6 / max(1.0, messages)
    return {
        "server": kind,
        "connections_established": report["connections_established"],
        "window_s": round(seconds, 2),
        "window_start_s": round(first[0] - t0, 2),
        "messages": int(messages),
        "messages_per_s": round(messages / seconds, 1),
        "cpu_us_per_message": round(cpu * per, 3),
        "user_us_per_message": round(user * per, 3),
        "system_us_per_message": round((cpu - user) * per, 3),
        "server_cpu_percent_of_one_core": round(100 * cpu / seconds, 1),
        "rtt_steady_us_p50": report["rtt_steady_us"].get("p50"),
        "rtt_steady_us_p99": report["rtt_steady_us"].get("p99"),
        "live_closed_by_server": report.get("live_closed_by_server"),
    }


def ratio(a, b):
    return round(a / b, 3) if b else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--connections", type=int, default=10000)
    ap.add_argument("--interval", type=float, default=1.0,
                    help="seconds between one connection's messages")
    ap.add_argument("--message-size", type=int, default=64)
    ap.add_argument("--duration", type=float, default=20.0,
                    help="seconds per server run, the ramp included")
    ap.add_argument("--connect-rate", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--echo-bin", help="heartwheel-echo to measure (default BUILD/bin/...)")
    ap.add_argument("--before-bin",
                    help="also run this heartwheel-echo each round (kind heartwheel_before: "
                         "a build before a change, against the same floor in the same run)")
    ap.add_argument("--server-arg", action="append", default=[],
                    help="one more heartwheel-echo argument (repeat for several)")
    ap.add_argument("--json")
    args = ap.parse_args()
    if not 1 <= args.connections <= 19000:
        ap.error("--connections must be 1..19000 (one server process, one harness process)")
    if args.message_size < 16:
        ap.error("--message-size must be at least 16 (the harness's stamps)")
    if args.duration < args.connections / args.connect_rate + 4:
        ap.error("--duration too short: the ramp, a second each side and 2 s of window")
    bin_dir = os.path.join(args.build_dir, "bin")
    bins = {"echo": args.echo_bin or os.path.join(bin_dir, "heartwheel-echo"),
            "floor": os.path.join(bin_dir, "heartwheel-echo-floor"),
            "load": os.path.join(bin_dir, "heartwheel-load")}
    if args.before_bin:
        bins["before"] = args.before_bin
    for b in bins.values():
        if not os.access(b, os.X_OK):
            ap.error("%s is missing: build it first" % b)

    load_before = open("/proc/loadavg").read().split()[:3]
    runs, rounds = [], []
    try:
        for r in range(args.rounds):
            order = ["heartwheel", "floor"] + (["heartwheel_before"] if args.before_bin else [])
            if r % 2 == 1:
                order.reverse()
            got = {}
            for kind in order:
                got[kind] = measure(kind, args, bins)
                runs.append(dict(got[kind], round=r))
                print(json.dumps(runs[-1]), file=sys.stderr)
            rounds.append({"%s_to_floor" % kind: {
                key: ratio(got[kind][key], got["floor"][key])
                for key in ("cpu_us_per_message", "user_us_per_message")}
                for kind in got if kind != "floor"})
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print("echo-compare: error: %s" % e, file=sys.stderr)
        return 1

    def median(kind, key):
        return round(statistics.median(x[key] for x in runs if x["server"] == kind), 3)

    summary = {}
    for key in ("cpu_us_per_message", "user_us_per_message", "system_us_per_message"):
        hw, fl = median("heartwheel", key), median("floor", key)
        summary[key] = {"heartwheel_median": hw, "floor_median": fl,
                        "ratio_heartwheel_to_floor": ratio(hw, fl)}
        if args.before_bin:
            before = median("heartwheel_before", key)
            summary[key].update({"heartwheel_before_median": before,
                                 "ratio_before_to_floor": ratio(before, fl),
                                 "ratio_heartwheel_to_before": ratio(hw, before)})
    result = {"connections": args.connections, "interval_s": args.interval,
              "message_size": args.message_size, "duration_s": args.duration,
              "rounds": args.rounds, "server_args": args.server_arg,
              "loadavg_before": load_before,
              "loadavg_after": open("/proc/loadavg").read().split()[:3],
              "summary": summary,
              "ratios_to_floor_per_round": rounds, "runs": runs}
    procs.print_json(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
