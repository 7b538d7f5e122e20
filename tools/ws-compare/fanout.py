#!/usr/bin/python3
"""The fan-out proof: heartwheel-chat holding --connections (default 100,000)
subscribed WebSocket connections on this machine, all on one channel, and
every publication reaching every live subscriber.

The per-process open-file limit (20,000 here) means several heartwheel-chat
processes (--servers, default 6, ~16,700 connections each) and several
harness processes (heartwheel-load --mode ws --processes, source addresses
127.0.0.1-127.0.0.8). The servers are independent (each its own pub/sub bus:
cross-process fan-out through a broker such as Redis is not used here), so the
harness publishes each publication on every server (--publish-targets all:
one publisher connection per server, the same data, the same send stamp);
with servers that share a broker, --publish-targets first would make one
publish do. With --redis the servers are nodes of one Redis (a redis-server
started here on a free port, stopped by PID): the harness publishes each
publication ONCE, on the first server, and every subscriber of every node
must receive it (cross-node fan-out through pubsub::RedisBroker).

Reports JSON: connections held, publications, delivered / expected / missing /
duplicates, fan-out latency p50/p99/max (publish write -> receipt, the
harness's delivery_us), server user-space memory per subscribed connection
(sum over the servers of RSS once every subscriber is in minus RSS before
the load, divided by the subscribers), server CPU per delivered message,
dead subscribers closed on time, the load average.

Usage: tools/ws-compare/fanout.py [--connections 100000] [--servers 6]
       [--load-processes 6] [--rate 1] [--redis | --redis-cluster] [--json FILE]
       [--build-dir build]
With --redis-cluster the servers are nodes of one Redis Cluster (three
masters, three replicas: tools/pylib/redis_cluster.py, started here and
stopped by PID), published to through the first server as with --redis.
Everything started here runs in its own process group, stopped by its id.
Exit status: 0 every publication reached every live subscriber and the dead
ones were closed on time; 1 otherwise or a failure; 2 usage error."""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import ROOT, marginal, open_files, proc_sample, start, stop  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tools", "pylib"))
from redis_cluster import RedisCluster  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("redis-server did not listen on %d" % port)


def children_cpu(parent):
    """utime + stime of `parent`'s child processes (the harness's workers)."""
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == parent:
                total += proc_sample(int(entry))[1]
        except (OSError, ValueError, IndexError):
            pass  # gone meanwhile
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--connections", type=int, default=100000)
    ap.add_argument("--servers", type=int, default=6)
    ap.add_argument("--load-processes", type=int, default=6)
    ap.add_argument("--connect-rate", type=int, default=4000)
    ap.add_argument("--rate", type=float, default=1, help="publications per second")
    ap.add_argument("--publish-seconds", type=int, default=20)
    ap.add_argument("--settle", type=int, default=10,
                    help="seconds between the last publication and the count")
    ap.add_argument("--ping-interval", type=int, default=15, help="seconds")
    ap.add_argument("--pong-timeout", type=int, default=5, help="seconds")
    ap.add_argument("--dead-fraction", type=float, default=0.01)
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--json")
    ap.add_argument("--redis", action="store_true",
                    help="the servers share one redis-server (started here): one publish, on "
                         "the first server, must reach every node's subscribers")
    ap.add_argument("--redis-cluster", action="store_true",
                    help="the servers are nodes of one Redis Cluster (3 masters, 3 replicas, "
                         "started here): one publish, on the first server, must reach every "
                         "node's subscribers")
    args = ap.parse_args()
    if args.redis and args.redis_cluster:
        ap.error("--redis and --redis-cluster: choose one")
    shared = args.redis or args.redis_cluster
    per_server = -(-args.connections // args.servers)
    per_load = -(-(args.connections + args.servers) // args.load_processes)
    if per_server > 19000 or per_load > 19000:
        ap.error("more than 19,000 connections per process: raise --servers / --load-processes")
    chat = os.path.join(args.build_dir, "bin", "heartwheel-chat")
    load_bin = os.path.join(args.build_dir, "bin", "heartwheel-load")
    for b in (chat, load_bin):
        if not os.access(b, os.X_OK):
            ap.error("%s is missing: build it first" % b)

    ramp = args.connections / args.connect_rate
    publish_start = ramp + 3
    # Dead subscribers go silent after subscribing: closed ping + pong after
    # their connect; the last connect is at `ramp`.
    duration = int(max(publish_start + args.publish_seconds + args.settle,
                       ramp + args.ping_interval + args.pong_timeout + 5))
    servers = []
    redis = None
    cluster = None
    stats_dir = tempfile.mkdtemp(prefix="fanout-stats-")
    try:
        node_flags = []
        if args.redis:
            redis_port = free_port()
            redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--save", "",
                                      "--appendonly", "no", "--bind", "127.0.0.1"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
            wait_for_port(redis_port)
            node_flags = ["--redis", "127.0.0.1:%d" % redis_port]
        if args.redis_cluster:
            cluster = RedisCluster(node_timeout_ms=2000)
            node_flags = ["--redis-cluster", cluster.seeds()]
        for i in range(args.servers):
            servers.append(start([chat, "--listen", "127.0.0.1:0", "--workers", "1",
                                  "--stats-json", os.path.join(stats_dir, "%d.json" % i),
                                  "--ping-interval", "%ds" % args.ping_interval,
                                  "--pong-timeout", "%ds" % args.pong_timeout, "--tick", "10ms",
                                  "--no-join-leave"] + node_flags))
        time.sleep(0.5)
        before = [proc_sample(p.pid) for p, _ in servers]
        rss0, anon0 = sum(b[0] for b in before), sum(b[4] for b in before)
        out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
        cmd = [load_bin, "--mode", "ws",
               "--target", ",".join("127.0.0.1:%d" % port for _, port in servers),
               "--connections", str(args.connections), "--processes", str(args.load_processes),
               "--source-ips", "127.0.0.1-127.0.0.8", "--connect-rate", str(args.connect_rate),
               "--channels", "1", "--publish-rate", str(args.rate), "--publish-targets", "first" if shared else "all",
               "--publish-start", "%gs" % publish_start,
               "--publish-stop-before", "%ds" % args.settle,
               "--dead-fraction", str(args.dead_fraction),
               "--expect-idle-close", "%ds" % (args.ping_interval + args.pong_timeout),
               "--idle-close-slack", "1s", "--expect-delivery", "--linger-reset",
               "--duration", "%ds" % duration, "--grace", "20s", "--quiet", "--json", out]
        print("running: " + " ".join(cmd), file=sys.stderr)
        load = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        t0 = time.monotonic()
        samples = []
        while load.poll() is None:
            rss = cpu = files = anon = 0
            for p, _ in servers:
                r, c, _, _, a = proc_sample(p.pid)
                rss, cpu, anon = rss + r, cpu + c, anon + a
                files += open_files(p.pid)
            samples.append((time.monotonic() - t0, rss, cpu,
                            open("/proc/loadavg").read().split()[0], files,
                            children_cpu(load.pid), anon))
            time.sleep(0.5)
        stdout, stderr = load.communicate()
        with open(out) as f:
            report = json.load(f)
        os.unlink(out)
        time.sleep(1.5)  # one more --stats-interval: the servers' last counters
        server_stats = []
        for i in range(args.servers):
            with open(os.path.join(stats_dir, "%d.json" % i)) as f:
                server_stats.append(json.load(f))
    finally:
        for p, _ in servers:
            stop(p)
        if redis is not None:
            redis.terminate()
            redis.wait(timeout=10)
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(stats_dir, ignore_errors=True)

    def at(t):
        best = samples[0]
        for s in samples:
            if s[0] <= t:
                best = s
        return best

    held, first, last = at(publish_start - 0.5), at(publish_start), at(duration - args.settle)
    # The servers' own count: every publication handed to every local
    # subscriber (deliveries), and nothing skipped, closed as slow or dropped.
    hubs = [s["pubsub"]["hubs"] for s in server_stats]
    server_side = {k: sum(h[k] for h in hubs)
                   for k in ("publications", "fanned_out", "deliveries", "skips", "slow_closes",
                             "dropped")}
    server_side["pong_timeouts"] = sum(s["ws"]["pong_timeouts"] for s in server_stats)
    w = report["ws"]
    subscribers = w["live_subscribers_at_end"]
    d = w["delivery_us"]
    result = {
        "connections": args.connections,
        "servers": args.servers,
        "load_processes": args.load_processes,
        "connections_established": report["connections_established"],
        "connect_errors": report["connect_errors"],
        "subscribed": w["subscribed"],
        "live_subscribers_at_end": subscribers,
        "redis": args.redis,
        "redis_cluster": args.redis_cluster,
        "publications_per_server": w["publish_acks"] // (1 if shared else max(1, args.servers)),
        "publish_acks": w["publish_acks"],
        "expected": w["expected"],
        "delivered": w["delivered"],
        "missing": w["missing"],
        "duplicates": w["duplicates"],
        "every_publication_reached_every_live_subscriber":
            w["every_publication_reached_every_live_subscriber"],
        "fanout_latency_us": {k: d[k] for k in ("p50", "p90", "p99", "max", "count")},
        "server_side": server_side,
        "server_rss_before_bytes": rss0,
        "server_rss_held_bytes": held[1],
        "server_memory_per_subscribed_connection_bytes":
            round((held[1] - rss0) / max(1, report["connections_established"])),
        "server_memory_per_subscribed_connection_marginal_bytes":
            marginal([s for s in samples if s[0] <= publish_start - 0.5], 1, 4),
        # The same without file-backed pages (proc_sample's anon): the heap alone.
        "server_anon_memory_per_subscribed_connection_bytes":
            round((held[6] - anon0) / max(1, report["connections_established"])),
        "server_cpu_publish_window_s": round(last[2] - first[2], 2),
        "server_cpu_per_delivered_message_us":
            round((last[2] - first[2]) * 1e6 / max(1, w["delivered"]), 3),
        "harness_cpu_publish_window_s": round(last[5] - first[5], 2),
        "harness_cpu_per_delivered_message_us":
            round((last[5] - first[5]) * 1e6 / max(1, w["delivered"]), 3),
        "dead": report["dead"],
        "live_closed_by_server": report["live_closed_by_server"],
        "ramp_ms": report["ramp_ms"],
        "duration_s": duration,
        "loadavg_during": [s[3] for s in samples[:: max(1, len(samples) // 10)]],
        "harness_exit_status": load.returncode,
        "harness_summary": stdout.strip().splitlines(),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0 if load.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
