#!/usr/bin/python3
"""heartwheel-chat vs a Node.js `ws` broadcast server (node-chat.js), same
load, same run.

For each server in turn (interleaved: heartwheel, node, heartwheel, node, ...
for --rounds rounds, so a change in the machine's load hits both), start it,
run `heartwheel-load --mode ws` against it (N subscribers of one channel, a
publisher at R/s, answering pings), sample the server from /proc and report:

  memory per connection   (server RSS once every subscriber is in - RSS before
                           the load) / subscribers
  CPU per delivered msg   server utime+stime from the first publication to the
                           end of the run (the deliveries' tail included) /
                           messages delivered
  fan-out latency         publish write -> receipt, p50/p99/max (the harness's
                           delivery_us histogram)

and the ratios heartwheel / node. Prints JSON on stdout (and --json FILE).

Usage: tools/ws-compare/run.py [--connections 10000] [--rate 2] [--duration 30]
       [--settle 8] [--rounds 1] [--build-dir build] [--json FILE]
Needs build/bin/heartwheel-chat, build/bin/heartwheel-load, node and
/usr/share/nodejs/ws (tools/install-deps). Every process it starts runs in
its own process group and is stopped by that group id.
Exit status: 0 done, 1 a server or the harness failed, 2 usage error."""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")


def proc_sample(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu_s = (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime
    with open("/proc/%d/statm" % pid) as f:
        rss = int(f.read().split()[1]) * PAGE
    return rss, cpu_s


def open_files(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def marginal(samples, rss_i, files_i):
    """RSS growth per connection between the sample where the open files
    first passed half of the last sample's and the last one: what one more
    connection costs, without the process's fixed costs (its hub, buffers,
    arenas) that the first connections pay."""
    last = samples[-1]
    half = next(s for s in samples if s[files_i] >= last[files_i] / 2)
    n = last[files_i] - half[files_i]
    return round((last[rss_i] - half[rss_i]) / n) if n > 0 else None


def start(cmd, env=None):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True, env=env)
    line = p.stdout.readline()
    if not line.startswith("listening on "):
        stop(p)
        raise RuntimeError("%s did not start: %r %s" % (cmd[0], line, p.stderr.read()[-2000:]))
    return p, int(line.strip().rsplit(":", 1)[1])


def stop(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)  # its own group: only what we started
    except ProcessLookupError:
        pass
    p.wait()


def measure(kind, args, bins):
    if kind == "heartwheel":
        cmd = [bins["chat"], "--listen", "127.0.0.1:0", "--workers", "1", "--no-join-leave",
               "--ping-interval", "%ds" % args.ping_interval, "--pong-timeout", "8s",
               "--history-size", "100"]
        env = None
    else:
        cmd = ["node", os.path.join(HERE, "node-chat.js"), "--port", "0",
               "--ping-interval-ms", str(args.ping_interval * 1000)]
        env = dict(os.environ, NODE_PATH="/usr/share/nodejs")
    server, port = start(cmd, env)
    try:
        time.sleep(0.5)
        rss0, _ = proc_sample(server.pid)
        out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
        publish_start = args.connections / args.connect_rate + 2.0
        load = subprocess.Popen(
            [bins["load"], "--mode", "ws", "--target", "127.0.0.1:%d" % port,
             "--connections", str(args.connections), "--connect-rate", str(args.connect_rate),
             "--channels", "1", "--publish-rate", str(args.rate),
             "--publish-start", "%gs" % publish_start,
             "--publish-stop-before", "%ds" % args.settle,
             "--duration", "%ds" % args.duration, "--quiet", "--json", out],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        t0 = time.monotonic()
        samples = []
        while load.poll() is None:
            samples.append((time.monotonic() - t0,) + proc_sample(server.pid) +
                           (open_files(server.pid),))
            time.sleep(0.2)
        stdout, stderr = load.communicate()
        if load.returncode not in (0, 3):
            raise RuntimeError("heartwheel-load failed (%d): %s %s" % (load.returncode, stdout,
                                                                       stderr[-2000:]))
        with open(out) as f:
            report = json.load(f)
        os.unlink(out)
    finally:
        stop(server)
    stop_at = args.duration - 0.5  # deliveries go on after the last publication

    def at(t):  # the last sample taken at or before t
        best = samples[0]
        for s in samples:
            if s[0] <= t:
                best = s
        return best

    held = at(publish_start - 0.2)
    ramp = [s for s in samples if s[0] <= publish_start - 0.2]
    first, last = at(publish_start), at(stop_at)
    w = report["ws"]
    subscribers = w["live_subscribers_at_end"] or args.connections
    delivered = w["delivered"]
    cpu = last[2] - first[2]
    d = w["delivery_us"]
    return {
        "server": kind,
        "subscribers": subscribers,
        "connections_established": report["connections_established"],
        "rss_before_bytes": rss0,
        "rss_held_bytes": held[1],
        "rss_peak_bytes": max(s[1] for s in samples),
        "memory_per_connection_bytes": round((held[1] - rss0) / max(1, args.connections)),
        "memory_per_connection_marginal_bytes": marginal(ramp, 1, 3),
        "publications": w["publish_acks"],
        "delivered": delivered,
        "missing": w["missing"],
        "duplicates": w["duplicates"],
        "cpu_from_first_publication_s": round(cpu, 3),
        "cpu_per_delivered_message_us": round(cpu * 1e6 / max(1, delivered), 3),
        "latency_us": {"p50": d["p50"], "p99": d["p99"], "max": d["max"], "count": d["count"]},
        "live_closed_by_server": report["live_closed_by_server"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--connections", type=int, default=10000)
    ap.add_argument("--rate", type=float, default=2, help="publications per second")
    ap.add_argument("--settle", type=int, default=8,
                    help="seconds between the last publication and the count")
    ap.add_argument("--duration", type=int, default=30, help="seconds per server run")
    ap.add_argument("--connect-rate", type=int, default=2000)
    ap.add_argument("--ping-interval", type=int, default=25, help="seconds, both servers")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.connections > 15000 or args.connections < 1:
        ap.error("--connections must be 1..15000 (one server process, one harness process)")
    if args.duration < args.connections / args.connect_rate + args.settle + 4:
        ap.error("--duration too short for the ramp, the publish window and the tail")
    bins = {"chat": os.path.join(args.build_dir, "bin", "heartwheel-chat"),
            "load": os.path.join(args.build_dir, "bin", "heartwheel-load")}
    for b in bins.values():
        if not os.access(b, os.X_OK):
            ap.error("%s is missing: build it first" % b)
    if not os.path.isdir("/usr/share/nodejs/ws"):
        ap.error("/usr/share/nodejs/ws is missing: tools/install-deps installs node-ws")

    runs = []
    try:
        for _ in range(args.rounds):
            for kind in ("heartwheel", "node"):
                runs.append(measure(kind, args, bins))
                print(json.dumps(runs[-1]), file=sys.stderr)
    except RuntimeError as e:
        print("ws-compare: error: %s" % e, file=sys.stderr)
        return 1

    def mean(kind, key, sub=None):
        vals = [r[key][sub] if sub else r[key] for r in runs if r["server"] == kind]
        return sum(vals) / len(vals)

    summary = {}
    for key, sub in (("memory_per_connection_bytes", None), ("cpu_per_delivered_message_us", None),
                     ("latency_us", "p50"), ("latency_us", "p99"), ("latency_us", "max")):
        name = key if sub is None else "latency_%s_us" % sub
        hw, nd = mean("heartwheel", key, sub), mean("node", key, sub)
        summary[name] = {"heartwheel": round(hw, 3), "node": round(nd, 3),
                         "ratio_heartwheel_to_node": round(hw / nd, 3) if nd else None}
    result = {"connections": args.connections, "publish_rate": args.rate,
              "duration_s": args.duration, "rounds": args.rounds,
              "loadavg": open("/proc/loadavg").read().split()[:3],
              "summary": summary, "runs": runs}
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
