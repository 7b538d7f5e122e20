#!/usr/bin/python3
"""Reconnect storm with tokens: N clients speaking heartwheel-chat's protocol
version 2 (a connect with a per-client JWT, then a subscribe) on one or more
heartwheel-chat processes of ONE worker each; restart them all; measure the
connect cost and how the clients come back.

  1. makes the token key and N tokens with python3-jwt (never the server):
     HS256 (a random 32-byte secret) or ES256 (a new P-256 key); each token
     {"sub": "user<i>", "iat", "exp": +1 h, "info": {"name": "user <i>"}};
     --tokens-file keeps them (and reuses a file made for the same N and
     algorithm, with its key beside it);
  2. starts --servers S heartwheel-chat processes, each --workers 1 on its
     own free port with the key (--token-hmac-secret-file or
     --token-ecdsa-public-key); with S > 1 they share one redis-server
     (--redis, started here; --no-redis: each on its own bus). A process
     holds at most `ulimit -n` - 500 clients (here 19,500: the hard limit
     is 20,000), so the default S is the fewest that hold N;
  3. starts the clients (--client-processes asyncio processes, raw sockets;
     tools/reconnect-storm/chat_clients.py): client i talks to server i % S
     from 127.0.0.(1 + (i // S) % K) (--source-ips K; by default enough that
     no (source, server) pair uses more than a quarter of the ephemeral
     ports); each opens /ws, sends its connect and a subscribe to channel
     storm-<i> (its own: no presence fan-out; --channels K shares K) in one
     write, and counts as connected when the subscribe reply comes (the
     token was verified); a lost connection comes back after a backoff with
     full jitter (--reconnect-initial doubling to --reconnect-max, uniform
     in [0, delay]);
  4. once every client is connected: SIGKILL every server, --down seconds
     later start them all again on the same ports;
  5. reports: the ramp (connects/s at --connect-rate), the storm: seconds
     from the new servers' start until every client was back, connects per
     second over that time and at the peak second, the servers' CPU per
     connect (their /proc CPU time over the storm divided by the connects:
     the cost, which a loaded machine does not inflate as it does the wall
     clock), in total and per server (`per_server`), redis-server's CPU per
     connect, failed attempts, the client processes' memory per client, and
     the load average.

The clients are Python: at a few thousand connects per second they use a
core of their own, so on a 2-core machine the wall-clock rate is the pair's,
and the servers' CPU per connect is the figure to compare. Exit status: 0
every client came back; 1 not all did, or a run failed; 2 usage error.
Everything started here is stopped by PID.

100,000 clients (issue 22; six servers, seven client processes, three source
addresses, all picked by default; a quiet machine):

  ulimit -n 20000; /usr/bin/python3 tools/reconnect-storm/chat_tokens.py \
      --clients 100000 --connect-rate 5000 --after-restart 180 \
      --token-alg HS256 --json 100k-hs256.json     (and ES256)
"""

import argparse
import atexit
import json
import multiprocessing
import os
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "pylib"))
from procs import PortHold, cpu_seconds, free_port, rss_kib  # noqa: E402
from redis_server import RedisServer  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chat_clients import client_process  # noqa: E402

EXIT_FAILURE, EXIT_USAGE = 1, 2
# Every server process and every client process inherits this limit.
FD_LIMIT = resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def log(msg):
    print(f"reconnect-storm (chat): {msg}", file=sys.stderr, flush=True)


def die(msg, status=EXIT_FAILURE):
    print(f"reconnect-storm (chat): error: {msg}", file=sys.stderr)
    sys.exit(status)


# ---- tokens (python3-jwt, python3-cryptography) -----------------------------

def make_tokens(alg, n, path):
    """Writes the key and n tokens; returns (server flag, key path)."""
    import jwt  # Debian's python3-jwt
    base = os.path.splitext(path)[0]
    now = int(time.time())
    if alg == "HS256":
        secret = secrets.token_hex(32)
        key_path = base + ".secret"
        with open(key_path, "w") as f:
            f.write(secret + "\n")
        signing, flag = secret, "--token-hmac-secret-file"
    else:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        key = ec.generate_private_key(ec.SECP256R1())
        key_path = base + ".pub.pem"
        with open(key_path, "wb") as f:
            f.write(key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        signing, flag = key, "--token-ecdsa-public-key"
    with open(path, "w") as f:
        f.write(json.dumps({"alg": alg, "clients": n, "flag": flag, "key": key_path,
                            "exp": now + 3600}) + "\n")
        for i in range(n):
            claims = {"sub": f"user{i}", "iat": now, "exp": now + 3600,
                      "info": {"name": f"user {i}"}}
            f.write(jwt.encode(claims, signing, algorithm=alg) + "\n")
    return flag, key_path


def load_tokens(path, alg, n):
    """(flag, key path, tokens) of a file made for this alg and n that is
    still valid for half an hour; None otherwise."""
    try:
        with open(path) as f:
            head = json.loads(f.readline())
            tokens = [line.strip() for line in f]
    except (OSError, ValueError):
        return None
    if (head.get("alg") != alg or head.get("clients") != n or len(tokens) != n
            or head.get("exp", 0) < time.time() + 1800 or not os.path.exists(head["key"])):
        return None
    return head["flag"], head["key"], tokens


# ---- the server -----------------------------------------------------------------


class Server:
    """One heartwheel-chat process (--workers 1) on its own port; started
    here, stopped by PID. wait_listening() once after the start."""

    def __init__(self, binary, index, port, flag, key, tmp, tag, redis):
        self.index, self.port = index, port
        self.stats = os.path.join(tmp, f"chat-{index}-{tag}.json")
        self.cmd = [binary, "--listen", f"127.0.0.1:{port}", "--workers", "1",
                    flag, key, "--stats-json", self.stats, "--stats-interval", "500ms"]
        if redis:
            self.cmd += ["--redis", redis]
        self.log = os.path.join(tmp, f"chat-{index}-{tag}.log")  # its stderr
        with open(self.log, "w") as err:
            self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=err,
                                         text=True, start_new_session=True)
        self.listening_at = None

    def wait_listening(self):
        line = self.proc.stdout.readline()
        if not line.startswith("listening on"):
            with open(self.log) as f:
                err = f.read()[-2000:]
            raise RuntimeError(f"heartwheel-chat {self.index} did not start: {line!r} {err!r}")
        self.listening_at = time.monotonic()

    def cpu(self):
        return cpu_seconds(self.proc.pid)

    def stop(self, sig=signal.SIGKILL):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def counters(self):
        try:
            with open(self.stats) as f:
                j = json.load(f)
        except (OSError, ValueError):
            return None
        return {"connections_accepted": j["net"].get("connections_accepted"),
                "chat_errors": j.get("chat", {}).get("errors")}


def start_servers(binary, ports, flag, key, tmp, tag, redis):
    """Every server started at once, then each waited for; on a failure all
    are stopped and RuntimeError raised."""
    servers = [Server(binary, k, port, flag, key, tmp, tag, redis) for k, port in enumerate(ports)]
    try:
        for s in servers:
            s.wait_listening()
    except RuntimeError:
        for s in servers:
            s.stop()
        raise
    return servers


def sum_counters(servers):
    """The servers' counters added up (chat_errors: an object of counts per
    error, merged); None when a stats file is missing."""
    each = [s.counters() for s in servers]
    if any(c is None for c in each):
        return None
    errors = {}
    for c in each:
        for name, n in (c["chat_errors"] or {}).items():
            errors[name] = errors.get(name, 0) + n
    return {"connections_accepted": sum(c["connections_accepted"] or 0 for c in each),
            "chat_errors": errors}


class Tally(threading.Thread):
    """The clients' events: how many are up, and every event as (time since
    t0, server index)."""

    def __init__(self, queue, t0):
        super().__init__(daemon=True)
        self.queue, self.t0 = queue, t0
        self.up = 0
        self.events = {"back": [], "lost": [], "failed": []}
        self.why = {}  # failed attempts by cause
        self.lock = threading.Lock()

    def run(self):
        while True:
            batch = self.queue.get()
            if batch is None:
                return
            with self.lock:
                for kind, t, why, server in batch:
                    self.events[kind].append((t - self.t0, server))
                    if kind == "failed":
                        self.why[why] = self.why.get(why, 0) + 1
                    self.up += {"back": 1, "lost": -1, "failed": 0}[kind]

    def times(self, kind, since=0.0, server=None):
        """Sorted times of `kind` at or after `since`, of one server or all."""
        with self.lock:
            return sorted(t for t, s in self.events[kind]
                          if t >= since and (server is None or s == server))


def per_second(times, start, end):
    out = [0] * max(0, int(end - start) + 1)
    for t in times:
        if start <= t <= end:
            out[int(t - start)] += 1
    return out


def ceil_div(a, b):
    return -(-a // b)


def ephemeral_ports():
    """How many ports connect() picks from (ip_local_port_range)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = map(int, f.read().split())
        return hi - lo + 1
    except (OSError, ValueError):
        return 28232  # Linux's default range, 32768-60999


def distinct_free_ports(n):
    ports = []
    while len(ports) < n:
        p = free_port()
        if p not in ports:
            ports.append(p)
    return ports


def plan(args):
    """Fills in the automatic --servers, --client-processes and
    --source-ips; exits with a usage error naming the flag to change when
    the numbers do not fit this machine's descriptor limit."""
    per_server_max = FD_LIMIT - 500  # the rest: listener, loop, stats, Redis, logs
    need = ceil_div(args.clients, per_server_max)
    if args.servers == 0:
        args.servers = need
    elif args.servers < need:
        die(f"--clients {args.clients} needs at least {need} heartwheel-chat processes at "
            f"ulimit -n {FD_LIMIT} (each holds at most {per_server_max} clients): add "
            f"--servers {need}, or leave --servers out to pick it", EXIT_USAGE)
    per_client_process_max = FD_LIMIT - 100
    if args.client_processes == 0:
        args.client_processes = max(2, ceil_div(args.clients, 15000))
    elif ceil_div(args.clients, args.client_processes) > per_client_process_max:
        die(f"too many clients per client process at ulimit -n {FD_LIMIT}: add "
            f"--client-processes {ceil_div(args.clients, per_client_process_max)} or more, "
            "or leave it out to pick it", EXIT_USAGE)
    # A quarter of the ephemeral range per (source, server) pair: room for
    # the killed server's connections in TIME_WAIT and for connect()'s
    # search through the range during the storm.
    per_pair = ephemeral_ports() // 4
    if args.source_ips == 0:
        args.source_ips = ceil_div(ceil_div(args.clients, args.servers), per_pair)
    if not 1 <= args.source_ips <= 254:
        die("--source-ips 1..254", EXIT_USAGE)
    if args.redis is None:
        args.redis = args.servers > 1


def main():
    rel = os.path.join(ROOT, "build-rel", "bin", "heartwheel-chat")
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clients", type=int, default=5000)
    p.add_argument("--token-alg", choices=("HS256", "ES256"), default="HS256")
    p.add_argument("--servers", type=int, default=0,
                   help="heartwheel-chat processes, each with one worker on its own port; "
                        "client i uses server i %% N (default: enough for ulimit -n)")
    p.add_argument("--redis", dest="redis", action="store_true", default=None,
                   help="the servers share one redis-server started here (--redis), the "
                        "default with --servers above 1")
    p.add_argument("--no-redis", dest="redis", action="store_false",
                   help="every server on its own in-process bus (the default with one server)")
    p.add_argument("--client-processes", type=int, default=0,
                   help="asyncio client processes (each holds clients / P connections; "
                        "default: 2, or one per 15,000 clients)")
    p.add_argument("--source-ips", type=int, default=0,
                   help="clients connect from 127.0.0.1 .. 127.0.0.K (default: enough that no "
                        "(source, server) pair uses more than a quarter of the ephemeral ports)")
    p.add_argument("--handshakes-in-flight", type=int, default=200,
                   help="per client process: connections between connect() and the subscribe "
                        "reply at most (the others wait in the client before connecting)")
    p.add_argument("--connect-rate", type=float, default=2000,
                   help="the first ramp, connects/s over all client processes")
    p.add_argument("--channels", type=int, default=0,
                   help="clients share K channels (each join is then sent to the channel's "
                        "other subscribers: presence fan-out); 0: a channel per client")
    p.add_argument("--down", type=float, default=2.0, help="seconds the servers stay down")
    p.add_argument("--after-restart", type=float, default=60,
                   help="give up when not every client is back this long after the new start "
                        "(or connected this long after the first ramp's planned end)")
    p.add_argument("--reconnect-initial", type=float, default=0.1, help="seconds")
    p.add_argument("--reconnect-max", type=float, default=10.0, help="seconds")
    p.add_argument("--tokens-file", help="keep the tokens here (reused when it fits)")
    p.add_argument("--chat", default=rel if os.access(rel, os.X_OK)
                   else os.path.join(ROOT, "build", "bin", "heartwheel-chat"),
                   help="the server binary (default build-rel/bin, else build/bin)")
    p.add_argument("--json", help="write the whole result here")
    args = p.parse_args()
    if (args.clients < 1 or args.handshakes_in_flight < 1 or args.servers < 0
            or args.client_processes < 0 or args.source_ips < 0):
        die("--clients and --handshakes-in-flight must be positive; --servers, "
            "--client-processes, --source-ips at least 0", EXIT_USAGE)
    plan(args)
    if not os.access(args.chat, os.X_OK):
        die(f"heartwheel-chat not found at {args.chat!r} (cmake --build build-rel "
            "--target heartwheel-chat)")

    tmp = tempfile.mkdtemp(prefix="reconnect-storm-chat-")
    if not args.tokens_file:
        # Also when making tokens, starting Redis or the servers fails.
        atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    tokens_file = args.tokens_file or os.path.join(tmp, "tokens.txt")
    t = time.monotonic()
    loaded = load_tokens(tokens_file, args.token_alg, args.clients)
    if loaded is None:
        make_tokens(args.token_alg, args.clients, tokens_file)
        loaded = load_tokens(tokens_file, args.token_alg, args.clients)
        log(f"made {args.clients} {args.token_alg} tokens in {time.monotonic() - t:.1f} s")
    flag, key, tokens = loaded

    n_servers = args.servers
    redis = RedisServer() if args.redis else None
    # Picked after Redis is up, just before the servers bind them: free
    # ports, so the less time between the two the better.
    ports = distinct_free_ports(n_servers)
    redis_addr = redis.address() if redis else None
    load_before = os.getloadavg()
    log(f"{args.clients} clients in {args.client_processes} processes from "
        f"{args.source_ips} source address(es), {n_servers} server(s)"
        + (f" on redis-server {redis_addr}" if redis else ""))
    try:
        first = start_servers(args.chat, ports, flag, key, tmp, "before", redis_addr)
    except RuntimeError as e:
        if redis:
            redis.stop()
        die(str(e))
    second = []
    queue = multiprocessing.Queue()
    t0 = time.monotonic()
    tally = Tally(queue, t0)
    tally.start()
    opts = {"initial": args.reconnect_initial, "max": args.reconnect_max,
            "channels": args.channels, "in_flight": args.handshakes_in_flight}
    clients = [{"i": i, "token": tokens[i], "server": i % n_servers,
                "port": ports[i % n_servers],
                "source": f"127.0.0.{1 + (i // n_servers) % args.source_ips}"}
               for i in range(args.clients)]
    per_server_clients = [len(clients[k::n_servers]) for k in range(n_servers)]
    procs = []
    for k in range(args.client_processes):
        pr = multiprocessing.Process(target=client_process, daemon=True,
                                     args=(clients[k::args.client_processes], opts, queue,
                                           t0 + 0.5, args.connect_rate))
        pr.start()
        procs.append(pr)
    del clients
    result = {"clients": args.clients, "token_alg": args.token_alg,
              "servers": n_servers, "redis": bool(redis),
              "handshakes_in_flight": args.handshakes_in_flight,
              "client_processes": args.client_processes, "source_ips": args.source_ips,
              "server": first[0].cmd[0]}
    ok = False
    try:
        ramp_cpu0 = [s.cpu() for s in first]
        redis_cpu0 = cpu_seconds(redis.proc.pid) if redis else 0.0
        # The ramp gets the storm's patience too: on a loaded machine the
        # Python clients, not the offered rate, set its pace.
        deadline = time.monotonic() + args.clients / args.connect_rate + args.after_restart
        while tally.up < args.clients and time.monotonic() < deadline:
            time.sleep(0.05)
        if tally.up < args.clients:
            raise RuntimeError(f"only {tally.up} of {args.clients} connected before the restart")
        backs = tally.times("back")
        ramp_s = backs[-1] - backs[0]
        ramp_cpu = [s.cpu() - c0 for s, c0 in zip(first, ramp_cpu0)]
        client_rss = rss_kib([pr.pid for pr in procs]) * 1024
        result["ramp"] = {"connect_rate": args.connect_rate, "seconds": round(ramp_s, 2),
                          "connects_per_s": round(args.clients / max(ramp_s, 1e-3)),
                          "server_cpu_us_per_connect":
                              round(1e6 * sum(ramp_cpu) / args.clients, 1)}
        if redis:
            result["ramp"]["redis_cpu_us_per_connect"] = round(
                1e6 * (cpu_seconds(redis.proc.pid) - redis_cpu0) / args.clients, 1)
        result["client_rss_mib"] = round(client_rss / 2**20, 1)
        result["client_rss_bytes_per_client"] = round(client_rss / args.clients)
        log(f"all {args.clients} connected; ramp {ramp_s:.1f} s; clients' RSS "
            f"{client_rss / 2**20:.0f} MiB; restart")
        time.sleep(2)
        restart_s = time.monotonic() - t0
        for s in first:
            s.stop(signal.SIGKILL)
        # Held while down (the clients' connects refused all the same): a
        # free port could be taken meanwhile, by another program's listener
        # or by a client connecting to itself through it, and then the
        # server could not come back on it.
        held = [PortHold(p) for p in ports]
        time.sleep(args.down)
        try:
            second = start_servers(args.chat, ports, flag, key, tmp, "after", redis_addr)
        finally:
            for h in held:
                h.release()
        up_s = max(s.listening_at for s in second) - t0
        cpu0 = [s.cpu() for s in second]
        redis_cpu0 = cpu_seconds(redis.proc.pid) if redis else 0.0
        backs_before = len(backs)
        deadline = time.monotonic() + args.after_restart
        all_back = None
        while time.monotonic() < deadline:
            with tally.lock:
                n = len(tally.events["back"]) - backs_before
                if n >= args.clients and tally.up >= args.clients:
                    all_back = max(t for t, _ in tally.events["back"])
            if all_back is not None:
                break
            time.sleep(0.02)
        cpu = [s.cpu() - c0 for s, c0 in zip(second, cpu0)]
        redis_cpu = cpu_seconds(redis.proc.pid) - redis_cpu0 if redis else None
        time.sleep(1)  # the stats files' last write
        # Every connect since the kill is a storm connect (nothing listened
        # in between). Not "since listening_at": that is when this process
        # read a server's "listening on" line, and servers are read one after
        # another, so a client can be back on a server before it is noted.
        storm = tally.times("back", restart_s)
        failed = tally.times("failed", restart_s)
        lost = tally.times("lost", restart_s)
        end = all_back if all_back is not None else time.monotonic() - t0
        series = per_second(storm, up_s, end)
        first_back = storm[0] if storm else None
        each = []
        for k, s in enumerate(second):
            mine = tally.times("back", restart_s, k)
            each.append({
                "port": s.port, "clients": per_server_clients[k],
                "storm_connects": len(mine),
                "all_back_after_start_s": round(mine[-1] - (s.listening_at - t0), 2)
                if all_back is not None and mine else None,
                "server_cpu_s_storm": round(cpu[k], 2),
                "server_cpu_us_per_connect": round(1e6 * cpu[k] / max(len(mine), 1), 1),
                "ramp_server_cpu_us_per_connect":
                    round(1e6 * ramp_cpu[k] / per_server_clients[k], 1),
                "server_after": s.counters()})
        result.update({
            "restart_at_s": round(restart_s, 2), "server_down_s": round(up_s - restart_s, 2),
            "all_back_after_start_s": round(all_back - up_s, 2) if all_back else None,
            "all_back_after_kill_s": round(all_back - restart_s, 2) if all_back else None,
            "storm_connects": len(storm),
            "storm_connects_per_s": round(len(storm) / max(end - first_back, 1e-3))
            if first_back is not None else 0,
            "peak_connects_per_s": max(series, default=0),
            "server_cpu_s_storm": round(sum(cpu), 2),
            "server_cpu_us_per_connect": round(1e6 * sum(cpu) / max(len(storm), 1), 1),
            "failed_attempts_after_kill": len(failed),
            "failed_by_cause": dict(tally.why),
            "server_after": sum_counters(second),
            "per_server": each,
            "connects_per_s_series": series,
            "lost_per_s_series": per_second(lost, restart_s, end),
            "failed_per_s_series": per_second(failed, restart_s, end),
        })
        if redis:
            result["redis_cpu_s_storm"] = round(redis_cpu, 2)
            result["redis_cpu_us_per_connect"] = round(1e6 * redis_cpu / max(len(storm), 1), 1)
        ok = all_back is not None
    except RuntimeError as e:
        log(str(e))
    finally:
        for pr in procs:
            if pr.is_alive():
                os.kill(pr.pid, signal.SIGTERM)
        for pr in procs:
            pr.join(10)
            if pr.is_alive():
                os.kill(pr.pid, signal.SIGKILL)
        queue.put(None)
        for s in second:
            s.stop(signal.SIGTERM)
        for s in first:
            s.stop()
        if redis:
            redis.stop()
    result["loadavg_1m"] = [round(load_before[0], 2), round(os.getloadavg()[0], 2)]
    result["server_cmd"] = " ".join(first[0].cmd)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    print(json.dumps({k: v for k, v in result.items() if not k.endswith("_series")}))
    sys.exit(0 if ok else EXIT_FAILURE)


if __name__ == "__main__":
    main()
