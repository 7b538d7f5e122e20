"""The fault runner's scenarios: which hosts run what, the workload, the
nemesis (partitions on tools/hosts' bridge) and which checker reads the
history. tools/faults runs them; README.md says what each one promises.

A scenario is a class with `name`, `hosts` (how many), `summary`,
`promise`, and run(ctx) -> dict: the checker's result plus the run's own
figures (nemesis, recover_ms, ...). ctx (Run, below) holds the hosts, the
services, the run directory and the timing (quick or full)."""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checker  # noqa: E402
from services import ServiceError  # noqa: E402

PYTHON = "/usr/bin/python3"  # Debian's, with python3-websockets


class Run:
    """One run: hosts, services, its directory, its timing, its history."""

    def __init__(self, hosts, services, run_dir, index, quick):
        self.hosts, self.s, self.dir, self.index, self.quick = hosts, services, run_dir, index, quick
        self.nemesis_log = open(os.path.join(run_dir, "nemesis.jsonl"), "a", buffering=1)

    def event(self, **e):
        e["t"] = round(time.monotonic() * 1000, 3)
        e.setdefault("proc", "nemesis")
        self.nemesis_log.write(json.dumps(e) + "\n")
        return e["t"]

    def partition(self, a, b, one_way=False):
        self.hosts.partition(a, b, one_way)
        return self.event(type="nemesis", f="partition", a=a, b=b, one_way=one_way)

    def heal(self):
        self.hosts.heal()
        return self.event(type="nemesis", f="heal")

    def history(self):
        """Every event of every history file of the run, in time order."""
        events = []
        for name in sorted(os.listdir(self.dir)):
            if name.endswith(".jsonl"):
                with open(os.path.join(self.dir, name)) as f:
                    for line in f:
                        try:
                            events.append(json.loads(line))
                        except ValueError:
                            pass  # a line cut by a kill
        events.sort(key=lambda e: e["t"])
        return events

    def start_client(self, name, host, script, cfg):
        cfg_path = os.path.join(self.dir, name + ".config.json")
        with open(cfg_path, "w") as f:
            json.dump(cfg, f, indent=1)
        self.s.start(name, host, [PYTHON, os.path.join(HERE, script), cfg_path])

    def wait_event(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for e in self.history():
                if pred(e):
                    return e
            time.sleep(0.1)
        raise ServiceError("no %s within %ss" % (what, timeout))

    def stop_client(self, name, timeout=40):
        status = self.s.stop(name, timeout)
        if status != 0:
            raise ServiceError("%s exited %s: %s" % (name, status, self.s.output(name)[-1500:]))


def settle(run, subscribers, limit, kind="publish"):
    """Waits until every subscriber holds every acknowledged value (or
    `limit` seconds): the time a healed system needs to catch up."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        events = run.history()
        acked = {(e["channel"], e["value"]) for e in events
                 if e.get("type") == kind and e.get("phase") == "ok"}
        have = {}
        for e in events:
            if e.get("type") == "deliver":
                have.setdefault(e["proc"], set()).add((e["channel"], e["value"]))
        if all(acked <= have.get(s, set()) for s in subscribers):
            return True
        time.sleep(0.2)
    return False


def recover_ms(events, heal_t, kind="publish", publishers=()):
    """From the heal until the cut side works again: every value acknowledged
    before the heal has reached every subscriber, and each of `publishers`
    (on the cut side) had a publish acknowledged after the heal."""
    acked_before = {(e["channel"], e["value"]) for e in events
                    if e.get("type") == kind and e.get("phase") == "ok" and e["t"] <= heal_t}
    last = heal_t
    first = {}
    for e in events:
        if e.get("type") == "deliver" and (e["channel"], e["value"]) in acked_before:
            key = (e["proc"], e["channel"], e["value"])
            first.setdefault(key, e["t"])
    if first:
        last = max(last, max(first.values()))
    for p in publishers:
        after = [e["t"] for e in events if e.get("type") == kind and e.get("phase") == "ok"
                 and e["proc"] == p and e["t"] > heal_t]
        if after:
            last = max(last, min(after))
        else:
            return None  # never recovered
    return round(last - heal_t)


def due_recover_ms(events, heal_t):
    """Delayed pushes: from the heal until every subscriber has every push
    that came due before it (pushes due later are not late on its account).
    Due times are wall-clock ms; the history's `t` is monotonic: deliveries
    carry both, which gives the offset."""
    offsets = sorted(e["wall_ms"] - e["t"] for e in events
                     if e.get("type") == "deliver" and "wall_ms" in e)
    if not offsets:
        return None
    heal_wall = heal_t + offsets[len(offsets) // 2]
    due = {e["value"] for e in events if e.get("type") == "schedule"
           and e.get("phase") == "ok" and e["due_ms"] <= heal_wall}
    first = {}
    for e in events:
        if e.get("type") == "deliver" and e["value"] in due:
            first.setdefault((e["proc"], e["value"]), e["t"])
    return round(max([heal_t, *first.values()]) - heal_t)


def stall_ms(events, kind="publish"):
    """The longest time a publisher went without an acknowledged operation
    (between two of its oks): how long the fault kept a client from working."""
    last, worst = {}, 0
    for e in events:
        if e.get("type") == kind and e.get("phase") == "ok":
            if e["proc"] in last:
                worst = max(worst, e["t"] - last[e["proc"]])
            last[e["proc"]] = e["t"]
    return round(worst)


def delivery_stall_ms(events):
    """The longest time a subscriber went without a delivery on one of its
    channels (between two deliveries): how long the fault kept publications
    from reaching subscribers, while publishers may have been served."""
    last, worst = {}, 0
    for e in events:
        if e.get("type") == "deliver":
            key = (e["proc"], e["channel"])
            if key in last:
                worst = max(worst, e["t"] - last[key])
            last[key] = e["t"]
    return round(worst)


def resumed_ms(events, since_t):
    """From `since_t` (a replica's promotion) until every subscriber had a
    delivery on every channel it ever got one on: how long the failover kept
    publications from reaching subscribers (on the cut master's channels);
    None if some pair never got one again."""
    pairs, first = set(), {}
    for e in events:
        if e.get("type") == "deliver":
            pairs.add((e["proc"], e["channel"]))
            if e["t"] > since_t:
                first.setdefault((e["proc"], e["channel"]), e["t"])
    if not first or set(first) != pairs:
        return None
    return round(max(first.values()) - since_t)


def chat_clients_config(run, nodes, channels, publish_for_s, interval_ms, final_by,
                        per_node=1):
    """Per node: `per_node` publishers (pA, or pA0, pA1, ... each on its own
    slice of the channels: one waiting for Redis holds up only its slice)
    and one subscriber (sA) of every channel."""
    def publishers(n):
        if per_node == 1:
            return [{"proc": "p" + n, "node": n, "channels": channels,
                     "interval_ms": interval_ms}]
        return [{"proc": "p%s%d" % (n, i), "node": n, "channels": channels[i::per_node],
                 "interval_ms": interval_ms} for i in range(per_node)]
    return {
        "out": os.path.join(run.dir, "client.jsonl"), "nodes": nodes,
        "publishers": [p for n in nodes for p in publishers(n)],
        "subscribers": [{"proc": "s" + n, "node": n, "channels": channels} for n in nodes],
        "publish_for_s": publish_for_s, "request_timeout_s": 10, "final_history_by": final_by}


NEMESES = ("both-ways", "redis-to-node-dropped", "node-to-redis-dropped")


def cut(run, node, redis_side, mode):
    """Partitions `node` from `redis_side` in one of NEMESES (chosen per run)."""
    if mode == "both-ways":
        return run.partition([node], redis_side)
    if mode == "redis-to-node-dropped":
        return run.partition(redis_side, [node], one_way=True)
    return run.partition([node], redis_side, one_way=True)


class ChatRedisPartition:
    name = "chat-redis-partition"
    hosts = 3
    summary = ("h1 redis-server, h2 chat node A, h3 chat node B and the clients; A cut from "
               "Redis for 8 s (both ways, or one way, by run; every fourth run 20 s, past the "
               "link's 15 s heartbeat timeout), past --redis-timeout 2s, then healed")
    promise = ("no acknowledged publication is lost; every subscriber (on A and on B) gets "
               "every acknowledged publication once, in order, or is told it missed some "
               "(recovered: false / a new epoch)")
    fields = ("acknowledged", "lost", "lost_seen_live", "duplicates", "unannounced_gaps",
              "announced_gaps", "conflicting", "reordered", "indeterminate", "stall_ms",
              "delivery_stall_ms", "recover_ms")

    def run(self, run):
        q = run.quick
        warm, cut_s, after = (1.5, 3, 2) if q else (3, 8, 5)
        mode = NEMESES[run.index % len(NEMESES)]
        if not q and run.index % 4 == 3:
            # Past the Redis link's heartbeat timeout (15 s): the link closes
            # its connection (pong_timeout) and reconnects, re-subscribes and
            # reads what it missed from the streams, instead of TCP resuming.
            mode, cut_s = "both-ways", 20
        redis = run.s.start_redis("redis", "h1")
        flags = ["--redis", redis, "--redis-timeout", "2s", "--history-size", "5000",
                 "--no-join-leave", "--redis-prefix", "faults:", "--tick", "10ms"]
        nodes = {"A": run.s.start_chat("chat-a", "h2", *flags),
                 "B": run.s.start_chat("chat-b", "h3", *flags)}
        channels = ["c%d" % i for i in range(4)]
        cfg = chat_clients_config(run, nodes, channels, 600, 40, "sB")
        cfg["stop_file"] = os.path.join(run.dir, "stop-publishing")
        run.start_client("client", "h3", "chat_client.py", cfg)
        run.wait_event(lambda e: e.get("type") == "ready", 20, "client ready")
        time.sleep(warm)
        start = cut(run, "h2", ["h1"], mode)
        time.sleep(cut_s)
        heal = run.heal()
        time.sleep(after)
        wait_publish_ok(run, "pA", heal, 20)  # the cut node serves again (or 20 s passed)
        stop_publishing(run)
        settled = settle(run, ["sA", "sB"], 10 if q else 20)
        run.stop_client("client")
        events = run.history()
        r = checker.check_pubsub(events, promise_no_loss=True)
        r.update(nemesis="%s %d s" % (mode, cut_s), partition_ms=round(heal - start),
                 settled=settled, stall_ms=stall_ms(events),
                 delivery_stall_ms=delivery_stall_ms(events),
                 recover_ms=recover_ms(events, heal, publishers=["pA"]))
        return r


class ClusterFailoverPartition:
    name = "cluster-failover-partition"
    hosts = 8
    wait_replicas = 1
    summary = ("h1-h6 a Redis Cluster (3 masters, 3 replicas, cluster-node-timeout 2 s), h7 "
               "chat node A, h8 chat node B and the clients, --redis-wait-replicas 1; a master "
               "cut from its replica and the other masters, 1 s later from the chat nodes too; "
               "healed 6 s after its replica took over")
    promise = ("with WAIT: no acknowledged publication is lost; subscribers get every "
               "acknowledged publication once, in order, or are told (a new epoch)")
    fields = ChatRedisPartition.fields + ("failover_ms", "resumed_ms", "heal_after_failover_ms")
    promise_no_loss = True

    def run(self, run):
        q = run.quick
        warm, after = (2, 3) if q else (3, 5)
        redis_hosts = ["h%d" % i for i in range(1, 7)]
        cluster = run.s.start_cluster(redis_hosts)
        flags = ["--redis-cluster", cluster.seeds(), "--redis-timeout", "3s",
                 "--history-size", "5000", "--no-join-leave", "--redis-prefix", "faults:",
                 "--tick", "10ms"]
        if self.wait_replicas:
            flags += ["--redis-wait-replicas", str(self.wait_replicas)]
        nodes = {"A": run.s.start_chat("chat-a", "h7", *flags),
                 "B": run.s.start_chat("chat-b", "h8", *flags)}
        channels = ["c%d" % i for i in range(12)]
        cfg = chat_clients_config(run, nodes, channels, 600, 30, "sB", per_node=3)
        cfg["stop_file"] = os.path.join(run.dir, "stop-publishing")
        run.start_client("client", "h8", "chat_client.py", cfg)
        run.wait_event(lambda e: e.get("type") == "ready", 30, "client ready")
        time.sleep(warm)
        victim = cluster.masters()[run.index % 3]
        replica = cluster.replica_of(victim)
        others = [h for h in redis_hosts if h != victim]
        start = run.partition([victim], others)
        time.sleep(1.0)
        run.partition([victim], ["h7", "h8"])
        failover = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if cluster.nodes(replica)[replica][0] == "master" and cluster.ok(others):
                    failover = run.event(type="nemesis", f="info", value="replica promoted")
                    break
            except (OSError, RuntimeError):
                pass
            time.sleep(0.1)
        # Held 6 s past the promotion (2 s before issue 40's fix): a publish
        # sent to the cut master just before it is stuck there for
        # --redis-timeout (3 s), and only the next one, to the new master,
        # can show that the nodes followed the failover before the heal
        # (resumed_ms below heal_after_failover_ms).
        time.sleep(6)
        heal = run.heal()
        try:
            cluster.wait_ok(30)
        except ServiceError:
            pass  # the checker still reads what happened
        time.sleep(after)
        stop_publishing(run)
        settled = settle(run, ["sA", "sB"], 10 if q else 20)
        run.stop_client("client")
        events = run.history()
        r = checker.check_pubsub(events, promise_no_loss=self.promise_no_loss)
        r.update(nemesis="master %s cut (replica %s)" % (victim, replica),
                 partition_ms=round(heal - start), settled=settled,
                 failover_ms=round(failover - start) if failover else None,
                 # Deliveries on the cut master's channels come back once the
                 # nodes follow the failover; before the heal unless it took
                 # longer than heal_after_failover_ms.
                 resumed_ms=resumed_ms(events, failover) if failover else None,
                 heal_after_failover_ms=round(heal - failover) if failover else None,
                 stall_ms=stall_ms(events), delivery_stall_ms=delivery_stall_ms(events),
                 recover_ms=recover_ms(events, heal, publishers=[
                     p["proc"] for p in cfg["publishers"]]))
        return r


def wait_publish_ok(run, proc, since, limit):
    """Until `proc` has a publish acknowledged after `since` (or `limit` s)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if any(e.get("type") == "publish" and e.get("phase") == "ok" and e["proc"] == proc
               and e["t"] > since for e in run.history()):
            return
        time.sleep(0.2)


def stop_publishing(run):
    """Publishers stop at publish_for_s; the cluster scenario's timing is not
    known ahead (the failover takes what it takes): a file tells them."""
    open(os.path.join(run.dir, "stop-publishing"), "w").close()
    time.sleep(0.5)


class ClusterFailoverPartitionNoWait(ClusterFailoverPartition):
    name = "cluster-failover-partition-no-wait"
    wait_replicas = 0
    promise_no_loss = False
    summary = ClusterFailoverPartition.summary.replace(", --redis-wait-replicas 1", ", no WAIT")
    promise = ("without WAIT nothing promises that an acknowledged publication survives (the "
               "cut master acknowledged it, its replica never had it); promised: every "
               "subscriber gets what survived once, in order, and is told of what it missed "
               "(a new epoch)")


class LockPartition:
    name = "lock-partition"
    hosts = 3
    summary = ("h1 redis-server, h2 holder A, h3 holder B and the fenced store; lease 2 s, each "
               "holder keeps the lock 3 s then lets go; while A holds it, A is cut from Redis "
               "and the store for 3 leases (its writes in flight wait in TCP), then healed")
    promise = ("fencing: tokens strictly increase from holder to holder and the store never "
               "accepts a write with a token older than one it accepted (fencing_violations 0)")
    fields = ("acknowledged", "fencing_violations", "stale_writes_sent",
              "stale_writes_rejected", "acquisitions", "handover_ms", "recover_ms")

    def run(self, run):
        q = run.quick
        after = 4 if q else 6
        redis = run.s.start_redis("redis", "h1")
        store = "%s:7000" % run.hosts.address("h3")
        run.s.start("store", "h3", [PYTHON, os.path.join(HERE, "fenced_store.py"), store,
                                    os.path.join(run.dir, "store.jsonl")], wait_line="listening")
        lock_bin = run.s.bin("heartwheel-fault-lock")

        def holder(who, host):
            run.s.start("holder-" + who, host, [
                lock_bin, "--redis", redis, "--store", store, "--id", who, "--out",
                os.path.join(run.dir, "holder-%s.jsonl" % who), "--lease", "2s", "--hold", "3s",
                "--pause", "300ms", "--write-every", "50ms"])

        holder("A", "h2")
        run.wait_event(lambda e: e.get("type") == "acquire" and e.get("phase") == "ok"
                       and e["proc"] == "A", 20, "A's first lock")
        holder("B", "h3")
        time.sleep(1 if q else 3)
        # Cut A while it holds the lock (it re-takes it within hold + pause).
        since = time.monotonic() * 1000
        got = run.wait_event(lambda e: e.get("type") == "acquire" and e.get("phase") == "ok"
                             and e["proc"] == "A" and e["t"] > since, 20, "A taking the lock")
        time.sleep(0.2)
        start = run.partition(["h2"], ["h1", "h3"])
        time.sleep(6)
        heal = run.heal()
        time.sleep(after)
        for who in ("A", "B"):
            run.s.stop("holder-" + who)
        run.s.stop("store")
        events = run.history()
        r = checker.check_lock(events)
        handover = [e["t"] for e in events if e.get("type") == "acquire"
                    and e.get("phase") == "ok" and e["proc"] == "B" and e["t"] > start]
        back = [e["t"] for e in events if e.get("type") == "acquire"
                and e.get("phase") == "ok" and e["proc"] == "A" and e["t"] > heal]
        r.update(nemesis="A cut from Redis and the store %.1f s after taking token %d"
                 % ((start - got["t"]) / 1000, got["token"]),
                 partition_ms=round(heal - start),
                 handover_ms=round(handover[0] - start) if handover else None,
                 recover_ms=round(back[0] - heal) if back else None)
        return r


class DelayedPartition:
    name = "delayed-partition"
    hosts = 3
    summary = ("h1 redis-server, h2 push node A, h3 push node B and the clients (--lease 3s); "
               "pushes accepted by both nodes come due during 5 s in which A is cut from Redis "
               "(both ways, or one way, by run), then healed")
    promise = ("every accepted push (202) is delivered, once; subscribers on both nodes get "
               "each once, in order, or are told")
    fields = ("acknowledged", "lost", "duplicates", "unannounced_gaps", "announced_gaps",
              "conflicting", "indeterminate", "reordered", "late_ms_max", "recover_ms")

    def run(self, run):
        q = run.quick
        mode = NEMESES[run.index % len(NEMESES)]
        redis = run.s.start_redis("redis", "h1")
        flags = ["--redis", redis, "--lease", "3s", "--redis-timeout", "2s",
                 "--reap-interval", "500ms", "--load-interval", "500ms",
                 "--takeover-grace", "1s", "--history-size", "5000", "--tick", "10ms"]
        a = run.s.start_push("push-a", "h2", *flags)
        b = run.s.start_push("push-b", "h3", *flags)
        cfg = {"out": os.path.join(run.dir, "client.jsonl"),
               "nodes": {"A": "ws://%s/ws" % a, "B": "ws://%s/ws" % b},
               "api": {"A": a, "B": b}, "channel": "d",
               "pushes": 60 if q else 150, "due_from_s": 3, "due_to_s": 9 if q else 14,
               "subscribers": [{"proc": "sA", "node": "A", "channels": ["d"]},
                               {"proc": "sB", "node": "B", "channels": ["d"]}],
               "final_history_by": "sB", "request_timeout_s": 10}
        run.start_client("client", "h3", "push_client.py", cfg)
        ready = run.wait_event(lambda e: e.get("type") == "ready", 30, "client ready")
        time.sleep(max(0, ready["t"] / 1000 + 4 - time.monotonic()))
        start = cut(run, "h2", ["h1"], mode)
        time.sleep(5)
        heal = run.heal()
        due_end = ready["t"] / 1000 + cfg["due_to_s"]
        time.sleep(max(0, due_end - time.monotonic()) + 1)
        settled = settle(run, ["sA", "sB"], 15 if q else 25, kind="schedule")
        time.sleep(2)  # a late duplicate (a claim's lease ran out meanwhile) has its chance
        run.stop_client("client")
        events = run.history()
        r = checker.check_delayed(events, promise_no_loss=True)
        r.update(nemesis=mode, partition_ms=round(heal - start), settled=settled,
                 late_ms_max=r["late_ms"]["max"],
                 recover_ms=due_recover_ms(events, heal))
        return r


SCENARIOS = {s.name: s for s in (ChatRedisPartition, ClusterFailoverPartition,
                                 ClusterFailoverPartitionNoWait, LockPartition, DelayedPartition)}
