#!/usr/bin/python3
"""heartwheel-chat vs a Node.js `ws` broadcast server (node-chat.js) vs the
kernel's floor (heartwheel-fanout-floor), same load, same run.

For each server in turn (interleaved: heartwheel, node, heartwheel, node, ...
for --rounds rounds, so a change in the machine's load hits both), start it,
run `heartwheel-load --mode ws` against it (N subscribers of one channel, a
publisher at R/s, answering pings), sample the server from /proc and report:

  memory per connection   (server RSS once every subscriber is in - RSS before
                           the load) / subscribers
  CPU per delivered msg   server utime+stime from the first publication to the
                           end of the run (the deliveries' tail included) /
                           messages delivered; also user and system apart
  fan-out latency         publish write -> receipt, p50/p99/max (the harness's
                           delivery_us histogram)

and the ratios heartwheel / node. Each round first runs heartwheel-fanout-floor
(tools/fanout-floor: the same N, one frame of --frame-bytes written to every
socket with one write() each, and with io_uring batches) and reports each
server's user and system CPU per delivered message against that floor's.
Prints JSON on stdout (and --json FILE).

Usage: tools/ws-compare/run.py [--connections 10000] [--rate 2] [--duration 30]
       [--settle 8] [--rounds 1] [--build-dir build] [--json FILE]
Needs build/bin/heartwheel-chat, build/bin/heartwheel-load,
build/bin/heartwheel-fanout-floor (unless --no-floor), node and
/usr/share/nodejs/ws (tools/install-deps). Every process it starts runs in
its own process group and is stopped by that group id.
Exit status: 0 done, 1 a server or the harness failed, 2 usage error."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")
sys.path.insert(0, os.path.join(ROOT, "tools", "pylib"))
import procs  # noqa: E402


def proc_sample(pid):
    """(rss bytes, utime + stime s, utime s, stime s, anonymous rss bytes) of
    one process. The anonymous part is statm's resident minus shared: the
    heap and stacks without the binary's and libraries' pages, which grow as
    code runs for the first time."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    user_s, system_s = int(fields[11]) / TICKS, int(fields[12]) / TICKS
    with open("/proc/%d/statm" % pid) as f:
        pages = f.read().split()
    rss, anon = int(pages[1]) * PAGE, (int(pages[1]) - int(pages[2])) * PAGE
    return rss, user_s + system_s, user_s, system_s, anon


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
    return procs.start_server(cmd, env)


def stop(p):
    procs.stop_group(p)


def measure(kind, args, bins):
    # *_deflate kinds: the harness offers permessage-deflate (stateless), the
    # server answers it (heartwheel-chat by default, node with its flag).
    deflate = kind.endswith("_deflate")
    if kind.startswith("heartwheel"):
        cmd = [bins["chat"], "--listen", "127.0.0.1:0", "--workers", "1", "--no-join-leave",
               "--ping-interval", "%ds" % args.ping_interval, "--pong-timeout", "8s",
               "--history-size", "100"] + args.chat_arg
        if kind == "heartwheel_write":
            cmd.append("--no-uring-fanout")
        env = None
    else:
        cmd = ["node", os.path.join(HERE, "node-chat.js"), "--port", "0",
               "--ping-interval-ms", str(args.ping_interval * 1000)]
        if deflate:
            cmd.append("--per-message-deflate")
        env = dict(os.environ, NODE_PATH="/usr/share/nodejs")
    server, port = start(cmd, env)
    try:
        time.sleep(0.5)
        rss0 = proc_sample(server.pid)[0]
        out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
        publish_start = args.connections / args.connect_rate + 2.0
        load = subprocess.Popen(
            [bins["load"], "--mode", "ws", "--target", "127.0.0.1:%d" % port]
            + (["--ws-protocol", "centrifugo"] if kind == "heartwheel_centrifugo" else [])
            + [
             "--connections", str(args.connections), "--connect-rate", str(args.connect_rate),
             "--channels", "1", "--publish-rate", str(args.rate),
             "--publish-start", "%gs" % publish_start,
             "--publish-stop-before", "%ds" % args.settle,
             "--duration", "%ds" % args.duration, "--quiet", "--json", out]
            + (["--publish-size", str(args.publish_size)] if args.publish_size else [])
            + (["--ws-compression"] if deflate else []),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        t0 = time.monotonic()
        samples = []
        while load.poll() is None:
            rss, cpu_s, user_s, system_s, _ = proc_sample(server.pid)
            samples.append((time.monotonic() - t0, rss, cpu_s, open_files(server.pid),
                            user_s, system_s))
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
    user, system = last[4] - first[4], last[5] - first[5]
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
        # After the publications (compressed or not): what traffic left behind.
        "memory_after_publishing_per_connection_bytes":
            round((last[1] - rss0) / max(1, args.connections)),
        # Everything the harness read (pushes, pings, replies) per delivery.
        "wire_bytes_per_delivered_message": round(report["bytes_received"] / max(1, delivered), 1),
        "compressed_messages": w.get("compressed_messages", 0),
        "publications": w["publish_acks"],
        "delivered": delivered,
        "missing": w["missing"],
        "duplicates": w["duplicates"],
        "cpu_from_first_publication_s": round(cpu, 3),
        "cpu_per_delivered_message_us": round(cpu * 1e6 / max(1, delivered), 3),
        "user_per_delivered_message_us": round(user * 1e6 / max(1, delivered), 3),
        "system_per_delivered_message_us": round(system * 1e6 / max(1, delivered), 3),
        "latency_us": {"p50": d["p50"], "p99": d["p99"], "max": d["max"], "count": d["count"]},
        "live_closed_by_server": report["live_closed_by_server"],
    }


def measure_floor(args, bins):
    """heartwheel-fanout-floor at the same N: one run entry per mode
    (server "floor_write", "floor_uring", ...)."""
    cmd = [bins["floor"], "--subscribers", str(args.connections),
           "--messages", str(args.floor_messages), "--frame-bytes", str(args.frame_bytes),
           "--rounds", "1", "--interval", "%dms" % args.floor_interval_ms]
    if args.floor_modes:
        cmd += ["--modes", args.floor_modes]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=600)
    if p.returncode != 0:
        raise RuntimeError("heartwheel-fanout-floor failed (%d): %s" % (p.returncode,
                                                                        p.stderr[-2000:]))
    runs = []
    for line in p.stdout.splitlines():
        j = json.loads(line)
        if j.get("summary"):
            continue
        runs.append({
            "server": "floor_" + j["mode"],
            "subscribers": j["subscribers"],
            "delivered": j["delivered"],
            "frame_bytes": j["frame_bytes"],
            "cpu_per_delivered_message_us": j["cpu_us_per_message"],
            "user_per_delivered_message_us": j["user_us_per_message"],
            "system_per_delivered_message_us": j["system_us_per_message"],
            "syscalls_per_message": j["syscalls_per_message"],
            "short_sends": j["short_sends"],
            "batch": j.get("batch"),
        })
    return runs


def fanout_table(runs, target_user_us):
    """User, system and total CPU per delivered message of every kind of run
    (means over the rounds), each with its ratios to the write() floor, and
    the target on heartwheel's user part."""
    kinds = []
    for r in runs:
        if r["server"] not in kinds:
            kinds.append(r["server"])
    kinds.sort(key=lambda k: (k != "floor_write", not k.startswith("floor_")))  # the floor first

    def mean(kind, key):
        vals = [r[key] for r in runs if r["server"] == kind]
        return sum(vals) / len(vals)

    keys = (("user", "user_per_delivered_message_us"),
            ("system", "system_per_delivered_message_us"),
            ("total", "cpu_per_delivered_message_us"))
    floor = {k: mean("floor_write", key) for k, key in keys} if "floor_write" in kinds else None
    table = {}
    for kind in kinds:
        row = {"%s_us" % k: round(mean(kind, key), 3) for k, key in keys}
        if floor:
            for k, _ in keys:
                row["%s_ratio_to_floor" % k] = (round(row["%s_us" % k] / floor[k], 3)
                                                if floor[k] else None)
        table[kind] = row
    hw_user = table["heartwheel"]["user_us"] if "heartwheel" in table else None
    target = {"heartwheel_user_us_per_message": hw_user, "at_most_us": target_user_us,
              "met": hw_user is not None and hw_user <= target_user_us}
    return table, target


def compression_table(servers, mean):
    """Per server, plain against permessage-deflate (means over the rounds):
    bytes read per delivered message, CPU per delivered message, memory per
    idle subscribed connection and after the publications; the ratios
    deflate / plain. Printed as Markdown on stderr too."""
    keys = ("wire_bytes_per_delivered_message", "cpu_per_delivered_message_us",
            "memory_per_connection_bytes", "memory_after_publishing_per_connection_bytes")
    out, lines = {}, ["| server | bytes / msg | CPU us / msg | idle B / conn | after B / conn |",
                      "|---|---|---|---|---|"]
    for server in ("heartwheel", "node"):
        for kind in (server, server + "_deflate"):
            out[kind] = {k: round(mean(kind, k), 3) for k in keys}
            lines.append("| %s | %.1f | %.2f | %d | %d |" % ((kind,) + tuple(out[kind][k]
                                                                             for k in keys)))
        out[server + "_deflate_to_plain"] = {
            k: round(out[server + "_deflate"][k] / out[server][k], 3) if out[server][k] else None
            for k in keys}
    print("\n".join(lines), file=sys.stderr)
    return out


def print_table(table, target):
    """The fan-out table as Markdown on stderr (docs/bench-history/fanout-floor.md)."""
    out = ["| CPU per delivered message | user | system | total | user / floor | "
           "system / floor | total / floor |", "|---|---|---|---|---|---|---|"]
    for kind, row in table.items():
        ratios = [row.get("%s_ratio_to_floor" % k) for k in ("user", "system", "total")]
        out.append("| %s | %.2f us | %.2f us | %.2f us | %s |" % (
            kind, row["user_us"], row["system_us"], row["total_us"],
            " | ".join("-" if r is None else "%.2f" % r for r in ratios)))
    out.append("target: heartwheel user <= %.2f us: %s (%s us)" % (
        target["at_most_us"], "met" if target["met"] else "NOT met",
        target["heartwheel_user_us_per_message"]))
    print("\n".join(out), file=sys.stderr)


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
    ap.add_argument("--no-floor", action="store_true", help="skip heartwheel-fanout-floor")
    ap.add_argument("--floor-messages", type=int, default=10,
                    help="publications the floor sends per mode per round")
    ap.add_argument("--floor-interval-ms", type=int, default=100,
                    help="pause between the floor's publications")
    ap.add_argument("--floor-modes", default="",
                    help="the floor's --modes (default: all it was built with)")
    ap.add_argument("--frame-bytes", type=int, default=100,
                    help="the floor's frame (heartwheel-chat's publication frame under "
                         "heartwheel-load is about 100 bytes)")
    ap.add_argument("--chat-arg", action="append", default=[],
                    help="one more heartwheel-chat argument (repeat for several)")
    ap.add_argument("--with-write-fanout", action="store_true",
                    help="also run heartwheel-chat --no-uring-fanout each round (heartwheel_write: "
                         "one write() per subscriber instead of the default io_uring batches)")
    ap.add_argument("--with-centrifugo", action="store_true",
                    help="also run heartwheel-chat with heartwheel-load speaking Centrifugo's "
                         "protocol each round, right after ours (heartwheel_centrifugo)")
    ap.add_argument("--no-node", action="store_true", help="skip the Node.js server")
    ap.add_argument("--target-user-us", type=float, default=1.0,
                    help="the target on heartwheel's user CPU per delivered message")
    ap.add_argument("--publish-size", type=int, default=0,
                    help="heartwheel-load --publish-size: each publication's data padded to "
                         "about this many bytes of JSON (0: {t, k} only)")
    ap.add_argument("--compression", action="store_true",
                    help="also run each server with permessage-deflate (kinds heartwheel_deflate, "
                         "node_deflate: the harness offers it, stateless)")
    args = ap.parse_args()
    if args.connections > 15000 or args.connections < 1:
        ap.error("--connections must be 1..15000 (one server process, one harness process)")
    if args.duration < args.connections / args.connect_rate + args.settle + 4:
        ap.error("--duration too short for the ramp, the publish window and the tail")
    bins = {"chat": os.path.join(args.build_dir, "bin", "heartwheel-chat"),
            "load": os.path.join(args.build_dir, "bin", "heartwheel-load")}
    if not args.no_floor:
        bins["floor"] = os.path.join(args.build_dir, "bin", "heartwheel-fanout-floor")
    for b in bins.values():
        if not os.access(b, os.X_OK):
            ap.error("%s is missing: build it first" % b)
    if not args.no_node and not os.path.isdir("/usr/share/nodejs/ws"):
        ap.error("/usr/share/nodejs/ws is missing: tools/install-deps installs node-ws")

    runs = []
    try:
        for _ in range(args.rounds):
            if not args.no_floor:
                for r in measure_floor(args, bins):
                    runs.append(r)
                    print(json.dumps(r), file=sys.stderr)
            kinds = ["heartwheel"] + (["heartwheel_write"] if args.with_write_fanout else [])
            kinds += ["heartwheel_deflate"] if args.compression else []
            kinds += ["heartwheel_centrifugo"] if args.with_centrifugo else []
            if not args.no_node:
                kinds += ["node"] + (["node_deflate"] if args.compression else [])
            for kind in kinds:
                runs.append(measure(kind, args, bins))
                print(json.dumps(runs[-1]), file=sys.stderr)
    except RuntimeError as e:
        print("ws-compare: error: %s" % e, file=sys.stderr)
        return 1

    servers = [r for r in runs if not r["server"].startswith("floor_")]

    def mean(kind, key, sub=None):
        vals = [r[key][sub] if sub else r[key] for r in servers if r["server"] == kind]
        return sum(vals) / len(vals) if vals else None

    def ratio(a, b):
        return round(a / b, 3) if a is not None and b else None

    summary = {}
    for key, sub in (("memory_per_connection_bytes", None), ("cpu_per_delivered_message_us", None),
                     ("latency_us", "p50"), ("latency_us", "p99"), ("latency_us", "max")):
        name = key if sub is None else "latency_%s_us" % sub
        hw, nd = mean("heartwheel", key, sub), mean("node", key, sub)
        summary[name] = {"heartwheel": round(hw, 3), "node": None if nd is None else round(nd, 3),
                         "ratio_heartwheel_to_node": ratio(hw, nd)}
        cf = mean("heartwheel_centrifugo", key, sub)
        if cf is not None:  # the same server, Centrifugo's protocol, against ours
            summary[name]["heartwheel_centrifugo"] = round(cf, 3)
            summary[name]["ratio_centrifugo_to_ours"] = ratio(cf, hw)
    if args.compression:
        summary["compression"] = compression_table(servers, mean)
    table, target = fanout_table(runs, args.target_user_us)
    result = {"connections": args.connections, "publish_rate": args.rate,
              "publish_size": args.publish_size,
              "duration_s": args.duration, "rounds": args.rounds,
              "chat_args": args.chat_arg,
              "loadavg": open("/proc/loadavg").read().split()[:3],
              "summary": summary, "fanout_table": table,
              "target_user_us": target, "runs": runs}
    print_table(table, target)
    procs.print_json(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
