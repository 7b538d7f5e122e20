#!/usr/bin/env python3
"""The Redis Cluster measurements of docs/BENCHMARKS.md ("Redis Cluster";
details in docs/bench-history/redis-cluster.md). Each starts what it needs on
free loopback ports (a 6-node cluster: tools/pylib/redis_cluster.py, three
masters and three replicas, cluster-node-timeout 2 s; one redis-server; chat
nodes) and stops it by PID. Prints one JSON object per run.

  run.py failover   [--build DIR] [--wait-replicas N] [--channels 30] [--publishers 4]
                    [--lag-replica SECONDS]
      Two heartwheel-chat nodes on the cluster, publishers on node A (closed
      loop) over --channels channels, one subscriber of all of them on node B.
      After 3 s the master owning the first channel is SIGKILLed; once the
      cluster has promoted its replica the killed node is started again (it
      rejoins as a replica, as a supervisor would bring it back). Reports the
      time until publishes to its slots are acknowledged again and until the
      subscriber receives on its channels again, and the publications
      acknowledged and then lost: not in the channel's history (Redis) at the
      end, and not delivered. A publish answered with an error (`unavailable`:
      WAIT counted too few replicas, the master died, the link timed out) is
      "not acknowledged" (`publishes_failed`), never "lost".
      --lag-replica SECONDS: a replica that lags, to show what asynchronous
      replication loses. Just before the kill the victim's replica is
      SIGSTOPped for SECONDS while the publishers go on: the master keeps
      acknowledging, and what it replicates piles up in the stopped replica's
      socket buffer, then in the master's output buffer for it. Then the
      master is SIGKILLed (that output buffer dies with it) and the replica
      SIGCONTinued: it reads what reached its socket and is promoted (its
      data is younger than node timeout x replica validity factor). The two
      sockets hold about 10 MB on loopback (the replica's receive buffer as
      autotuned, the master's send buffer up to tcp_wmem's 4 MB), more than
      the publishers send in seconds at the closed-loop rate; so the tool
      first fills them with ballast (1 MB SETs of a key of its own in the
      victim's slots, straight to the master, until the master's output
      buffer for the replica holds 1 MB: `ballast_bytes`), and the
      publications of the stall queue behind it in the output buffer.
      Without WAIT those acknowledged then are lost; with --wait-replicas 1
      each of them is answered `unavailable` (its WAIT times out) instead.
      What the failover lost: `acked_lost_in_failover` (and, of those sent
      during the stall, `lag_acked_lost_in_failover`), the publications
      acknowledged before the kill on the killed master's channels that are
      not in its replica's streams once it has lost its master (read then,
      READONLY: what it has when promoted). After the promotion node B,
      whose subscriber saw offsets the new master no longer has, resets
      each such channel (a new epoch that keeps the stream: redis_broker.h,
      "A stream that went back"): `acked_not_in_history` counts only what
      the failover lost, and `acked_lost` (neither in the history nor
      delivered) stays low as node B received those live from the old
      master. `acked_not_delivered` / `not_delivered_acked_after_kill`:
      publications the new master took before node B's reset, in history
      but not delivered live (their offsets were ones node B had had).
  run.py pushes     [--build DIR] [--wait-replicas N] [--pushes 20000] [--over 20s]
      heartwheel-push-bench (two delayed-queue nodes) on the cluster; a master
      is SIGKILLed at 40% of --over (and started again once its replica took
      over): pushes due during the failover, delivered once, lateness.
  run.py throughput [--build DIR] [--rates 2000,4000,...] [--seconds 15]
      heartwheel-load (ws mode, 200 subscribers over two chat nodes, 100
      channels, publishes at a fixed rate to node A) through one redis-server
      and through the 3-master cluster, alternately per rate: acknowledged
      publishes/s, fan-out latency, and each redis-server's CPU.
"""
import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "pylib"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import procs  # noqa: E402
from redis_cluster import RedisCluster, command  # noqa: E402

from chat_support import Server  # noqa: E402
from chat_server_test import Chat  # noqa: E402


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def restart_after_promotion(cluster, victim, victim_slot_range, limit=30):
    """Waits until another node owns the victim's slots, then starts the
    victim again (it rejoins as a replica). Returns the promotion time."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            for first, last, master, _ in cluster.slots():
                if first == victim_slot_range[0] and master != victim:
                    promoted = time.monotonic()
                    cluster.restart(victim)
                    return promoted
        except AssertionError:
            pass
        time.sleep(0.05)
    raise AssertionError("no replica promoted within %ss" % limit)


# ---------------------------------------------------------------- failover

def replication_state(cluster, master):
    """(master_repl_offset - the replica's acknowledged offset, the master's
    output buffer for its replica in bytes) from INFO replication and CLIENT
    LIST; None for what it did not say."""
    behind = omem = None
    try:
        info = cluster.command(master, "INFO", "replication", timeout=2)
        fields = dict(l.split(":", 1) for l in info.splitlines() if ":" in l)
        replica = dict(kv.split("=", 1) for kv in fields.get("slave0", "").split(",") if "=" in kv)
        if "master_repl_offset" in fields and "offset" in replica:
            behind = int(fields["master_repl_offset"]) - int(replica["offset"])
        for client in cluster.command(master, "CLIENT", "LIST", timeout=2).splitlines():
            kv = dict(x.split("=", 1) for x in client.split() if "=" in x)
            if "S" in kv.get("flags", ""):
                omem = int(kv["omem"])
    except (OSError, RuntimeError):
        pass
    return behind, omem


def number_of(data):
    """The publication number the tool put in `data`, or None."""
    return data if isinstance(data, int) and not isinstance(data, bool) else None


def replica_snapshot(cluster, replica, streams, limit=10):
    """Once the replica has lost its master (it has read what reached its
    socket: its data is what it will have when promoted), the publication
    numbers in the channels' streams on it (READONLY: a replica answers
    reads of its slots)."""
    deadline = time.monotonic() + limit
    while "master_link_status:down" not in cluster.command(replica, "INFO", "replication"):
        if time.monotonic() > deadline:
            raise AssertionError("replica %d still linked to its master" % replica)
        time.sleep(0.02)
    out = set()
    replies = cluster.pipeline(replica, ["READONLY"], *(["XRANGE", k, "-", "+"]
                                                        for k in streams.values()))
    for reply in replies[1:]:
        if isinstance(reply, Exception):
            raise AssertionError("XRANGE on replica %d: %s" % (replica, reply))
        for _, fields in reply or []:
            entry = dict(zip(fields[::2], fields[1::2]))
            try:
                out.add(number_of(json.loads(entry.get("d", "null"))))
            except ValueError:
                pass
    return out


def fill_replica_link(cluster, master, limit_mb=128):
    """Writes 1 MB values to a key of the tool's own in `master`'s slots until
    the master's output buffer for its (stopped) replica holds 1 MB: the
    sockets between them are full. Returns the bytes written."""
    ranges = [(f, l) for f, l, m, _ in cluster.slots() if m == master]
    key = next(k for k in ("ballast-%d" % i for i in range(100000))
               if any(f <= cluster.command(master, "CLUSTER", "KEYSLOT", k) <= l
                      for f, l in ranges))
    value = "b" * (1 << 20)
    for i in range(limit_mb):
        cluster.command(master, "SET", key, value, timeout=10)
        if (replication_state(cluster, master)[1] or 0) >= 1 << 20:
            return (i + 1) * len(value)
    raise AssertionError("%d MB written and the master's output buffer for its replica is "
                         "still under 1 MB: is the replica stopped?" % limit_mb)


async def failover_run(cluster, a, b, channels, args):
    publishers, wait_replicas = args.publishers, args.wait_replicas
    sub = await Chat.open(b, "s")
    for ch in channels:
        assert (await sub.request("subscribe", channel=ch))["ok"]
    pubs = [await Chat.open(a, "p%d" % i) for i in range(publishers)]
    for ch in channels:
        assert (await pubs[0].request("publish", channel=ch, data="first"))["ok"]
    victim = cluster.owner_of_key_matching("t:*}%s:s" % channels[0])
    on_victim = {ch for ch in channels if cluster.owner_of_key_matching("t:*}%s:s" % ch) == victim}
    # The victim's channels' streams, read from its replica once it has lost
    # its master: what the failover keeps.
    streams = {ch: cluster.command(victim, "KEYS", "t:*}%s:s" % ch)[0] for ch in on_victim}
    victim_range = next((f, l) for f, l, m, _ in cluster.slots() if m == victim)
    replica = cluster.replica_of(victim)
    if replica is None:
        raise AssertionError("the victim %d has no replica in sync" % victim)
    received = {}  # n -> time
    acked = {}  # n -> (channel, sent, acked)
    failed = []  # (channel, sent, code)
    state = {"n": 0, "stop": False, "killed": None}

    async def reader():
        while True:
            msg = await sub.publication(timeout=120)
            if number_of(msg["data"]) is not None:
                received.setdefault(msg["data"], time.monotonic())

    async def publisher(conn, mine):
        i = 0
        while not state["stop"]:
            ch = mine[i % len(mine)]
            i += 1
            state["n"] += 1
            n = state["n"]
            sent = time.monotonic()
            rep = await conn.request("publish", channel=ch, data=n)
            if rep.get("ok"):
                acked[n] = (ch, sent, time.monotonic())
            else:
                failed.append((ch, sent, rep["error"]["code"]))
                await asyncio.sleep(0.01)

    rd = asyncio.create_task(reader())
    tasks = [asyncio.create_task(publisher(p, channels[k::publishers]))
             for k, p in enumerate(pubs)]
    await asyncio.sleep(3)
    paused = ballast = behind = omem = None
    if args.lag_replica > 0:
        cluster.pause(replica)
        paused = time.monotonic()
        ballast = fill_replica_link(cluster, victim)  # blocks the publishers a moment
        await asyncio.sleep(max(0.0, args.lag_replica - (time.monotonic() - paused)))
        behind, omem = replication_state(cluster, victim)
    cluster.kill(victim)
    killed = time.monotonic()
    if paused is not None:
        cluster.resume(replica)
    kept = await asyncio.get_running_loop().run_in_executor(
        None, replica_snapshot, cluster, replica, streams)
    promoted = await asyncio.get_running_loop().run_in_executor(
        None, restart_after_promotion, cluster, victim, victim_range)

    def back():
        pub_back = min((t for ch, s, t in acked.values() if ch in on_victim and s > killed),
                       default=None)
        sub_back = min((received[n] for n, (ch, s, _) in acked.items()
                        if ch in on_victim and s > killed and n in received), default=None)
        return pub_back, sub_back

    deadline = time.monotonic() + 60
    while None in back() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    await asyncio.sleep(2)
    state["stop"] = True
    await asyncio.gather(*tasks)
    await asyncio.sleep(3)  # the last deliveries
    rd.cancel()
    pub_back, sub_back = back()
    # Lost: acknowledged, yet neither in the channel's history now nor delivered.
    in_history = set()
    for ch in channels:
        rep = await pubs[0].request("history", channel=ch, limit=100000)
        assert not rep.get("truncated"), "the history of %s was cut" % ch
        in_history.update(number_of(p["data"]) for p in rep.get("publications", []))
    lost = sorted(n for n in acked if n not in in_history and n not in received)
    not_in_history = sorted(n for n in acked if n not in in_history)
    undelivered = sorted(n for n in acked if n not in received)
    acked_before_kill = [n for n, (_, _, t) in acked.items() if t < killed]
    # Acknowledged before the kill on the victim's channels and not in its
    # replica's streams once that lost its master: lost by the failover.
    on_victim_before_kill = [n for n in acked_before_kill if acked[n][0] in on_victim]
    lost_in_failover = sorted(n for n in on_victim_before_kill if n not in kept)
    lag = {}
    if paused is not None:
        # Publishes to the victim's channels sent while its replica was stopped.
        during = lambda ch, s: ch in on_victim and paused <= s < killed  # noqa: E731
        lag = {
            "lag_replica_s": args.lag_replica, "ballast_bytes": ballast,
            "replica_behind_bytes_at_kill": behind, "replica_output_buffer_bytes_at_kill": omem,
            "lag_publishes_acked": sum(1 for ch, s, _ in acked.values() if during(ch, s)),
            "lag_publishes_failed": sum(1 for ch, s, _ in failed if during(ch, s)),
            "lag_acked_lost_in_failover": sum(1 for n in lost_in_failover
                                              if during(*acked[n][:2])),
        }
    for c in pubs + [sub]:
        await c.close()
    return {
        "wait_replicas": wait_replicas,
        "channels": len(channels), "channels_on_killed_master": len(on_victim),
        "publishers": len(pubs),
        "publishes_acked": len(acked), "publishes_failed": len(failed),
        "failed_codes": sorted({f[2] for f in failed}),
        "acked_before_kill": len(acked_before_kill),
        "acked_before_kill_on_killed_master": len(on_victim_before_kill),
        "acked_lost_in_failover": len(lost_in_failover),
        "lost_in_failover_sample": lost_in_failover[:10],
        "promoted_after_s": round(promoted - killed, 3),
        "publishes_back_after_s": pub_back and round(pub_back - killed, 3),
        "subscriber_receives_again_after_s": sub_back and round(sub_back - killed, 3),
        "acked_lost": len(lost), "acked_not_in_history": len(not_in_history),
        "acked_not_delivered": len(undelivered),
        "lost_sample": lost[:10], "not_in_history_sample": not_in_history[:10],
        # Acknowledged after the kill, and not delivered: published on the new
        # master in the old epoch before node B reset the channel (it took
        # their offsets for duplicates); in history, not delivered live.
        "not_delivered_sample": undelivered[:10],
        "not_delivered_acked_after_kill": sum(1 for n in undelivered if acked[n][2] >= killed),
        **lag,
        "publish_rate_per_s": round(len(acked) / max(1e-9, max(t for _, _, t in acked.values())
                                                     - min(s for _, s, _ in acked.values())), 1),
    }


def failover(args):
    chat = os.path.join(args.build, "bin", "heartwheel-chat")
    flags = ["--pubsub-prefix", "t:", "--redis-timeout", "3s", "--history-size", "100000",
             "--history-ttl", "10m", "--ping-interval", "0",
             "--rate-limit", "publish=1000000/s"]  # closed-loop publishers: no rate limit
    if args.wait_replicas:
        flags += ["--redis-wait-replicas", str(args.wait_replicas)]
    channels = ["f-%d" % i for i in range(args.channels)]
    load = loadavg()
    with RedisCluster(node_timeout_ms=2000) as c:
        with Server(chat, "--redis-cluster", c.seeds(), *flags) as a, \
                Server(chat, "--redis-cluster", c.seeds(), *flags) as b:
            out = asyncio.run(failover_run(c, a, b, channels, args))
            st = b.read_stats(lambda st: True)["pubsub"]["redis"]
            out["node_b"] = {k: st[k] for k in ("lost", "rewinds", "epoch_changes", "syncs")}
            out["node_b"].update({k: st["link"][k] for k in
                                  ("failovers", "channels_moved", "slot_map_refreshes",
                                   "redirects_moved", "cluster_retries")})
            st = a.read_stats(lambda st: True)["pubsub"]["redis"]
            out["node_a"] = {k: st[k] for k in ("publishes", "publish_errors", "not_replicated")}
    out["loadavg_before"] = load
    out["loadavg_after"] = loadavg()
    return out


# ---------------------------------------------------------------- pushes

def pushes(args):
    bench = os.path.join(args.build, "bin", "heartwheel-push-bench")
    load = loadavg()
    with RedisCluster(node_timeout_ms=2000) as c:
        over = float(args.over.rstrip("s"))
        cmd = [bench, "--redis-cluster", c.seeds(), "--pushes", str(args.pushes), "--over",
               args.over, "--lead", "3s", "--crash-at", "0", "--lease", "5s"]
        if args.wait_replicas:
            cmd += ["--redis-wait-replicas", str(args.wait_replicas)]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        started = time.monotonic()
        time.sleep(3 + 0.4 * over)
        victim = c.masters()[0]
        victim_range = next((f, l) for f, l, m, _ in c.slots() if m == victim)
        c.kill(victim)
        killed = time.monotonic()
        promoted = restart_after_promotion(c, victim, victim_range)
        stdout, _ = p.communicate(timeout=over + 120)
        result = json.loads([l for l in stdout.splitlines() if l.startswith("{")][-1])
    result["wait_replicas"] = args.wait_replicas
    result["killed_at_s"] = round(killed - started, 2)
    result["promoted_after_s"] = round(promoted - killed, 3)
    result["exit_status"] = p.returncode
    result["loadavg_before_cluster"] = load
    return result


# ---------------------------------------------------------------- throughput

class SingleRedis:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="hw-redis-")
        self.port = procs.free_port()
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir, "--loglevel", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                if command(self.port, "PING", timeout=1) == "PONG":
                    break
            except (OSError, RuntimeError):
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)
        self.procs = {self.port: self.proc}

    def stop(self):
        self.proc.kill()
        self.proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


def throughput_one(args, kind, rate):
    chat = os.path.join(args.build, "bin", "heartwheel-chat")
    loadbin = os.path.join(args.build, "bin", "heartwheel-load")
    target = SingleRedis() if kind == "single" else RedisCluster(node_timeout_ms=2000)
    try:
        where = (["--redis", "127.0.0.1:%d" % target.port] if kind == "single"
                 else ["--redis-cluster", target.seeds()])
        flags = where + ["--pubsub-prefix", "t:", "--ping-interval", "0", "--no-join-leave",
                         "--rate-limit", "publish=1000000/s"]  # the publisher's rate is the load
        with Server(chat, *flags) as a, Server(chat, *flags) as b:
            fd, out = tempfile.mkstemp(suffix=".json")
            os.close(fd)
            redis_pids = {port: p.pid for port, p in target.procs.items()}
            masters = set(target.masters()) if kind == "cluster" else {target.port}
            cpu0 = {port: procs.cpu_seconds(pid) for port, pid in redis_pids.items()}
            chat0 = procs.cpu_seconds(a.proc.pid) + procs.cpu_seconds(b.proc.pid)
            t0 = time.monotonic()
            r = subprocess.run([loadbin, "--mode", "ws", "--target",
                                "127.0.0.1:%d,127.0.0.1:%d" % (a.port, b.port),
                                "--connections", "200", "--channels", "100",
                                "--publish-rate", str(rate), "--publish-targets", "first",
                                "--duration", "%ds" % args.seconds, "--publish-start", "2s",
                                "--json", out, "--quiet"], capture_output=True, text=True,
                               timeout=args.seconds + 120)
            wall = time.monotonic() - t0
            cpu = {port: procs.cpu_seconds(pid) - cpu0[port] for port, pid in redis_pids.items()}
            chat_cpu = procs.cpu_seconds(a.proc.pid) + procs.cpu_seconds(b.proc.pid) - chat0
            if os.path.getsize(out) == 0:
                raise AssertionError("heartwheel-load failed: %s" % r.stderr[-2000:])
            with open(out) as f:
                j = json.load(f)
            os.unlink(out)
    finally:
        target.stop()
    ws = j["ws"]
    publish_window = args.seconds - 2 - 2  # --publish-start, --publish-stop-before
    pct = lambda port: round(100 * cpu[port] / wall, 1)  # noqa: E731
    return {
        "redis": kind, "rate_offered": rate, "exit_status": r.returncode,
        "publish_acks": ws.get("publish_acks"),
        "acked_per_s": round(ws.get("publish_acks", 0) / publish_window, 1),
        "publish_skipped": ws.get("publish_skipped"),
        "delivered": ws.get("delivered"), "missing": ws.get("missing"),
        "delivery_us": ws.get("delivery_us"), "rtt_us": ws.get("rtt_us") or j.get("rtt_us"),
        "master_cpu_pct": sorted((pct(p) for p in masters), reverse=True),
        "replica_cpu_pct": sorted((pct(p) for p in cpu if p not in masters), reverse=True),
        "chat_nodes_cpu_pct": round(100 * chat_cpu / wall, 1),
        "loadavg": loadavg(),
    }


def throughput(args):
    out = []
    for rate in [int(x) for x in args.rates.split(",")]:
        for kind in ("single", "cluster"):
            res = throughput_one(args, kind, rate)
            print(json.dumps(res), flush=True)
            out.append(res)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["failover", "pushes", "throughput"])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--wait-replicas", type=int, default=0)
    ap.add_argument("--channels", type=int, default=30)
    ap.add_argument("--publishers", type=int, default=4)
    ap.add_argument("--lag-replica", type=float, default=0.0, metavar="SECONDS")
    ap.add_argument("--pushes", type=int, default=20000)
    ap.add_argument("--over", default="20s")
    ap.add_argument("--rates", default="2000,5000,10000")
    ap.add_argument("--seconds", type=int, default=15)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    result = {"failover": failover, "pushes": pushes, "throughput": throughput}[args.what](args)
    if args.what != "throughput":
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
