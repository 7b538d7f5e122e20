#!/usr/bin/python3
"""Reconnect storm with tokens: N clients speaking heartwheel-chat's protocol
version 2 (a connect with a per-client JWT, then a subscribe) on ONE worker
of heartwheel-chat; restart the server; measure the connect cost and how the
clients come back.

  1. makes the token key and N tokens with python3-jwt (never the server):
     HS256 (a random 32-byte secret) or ES256 (a new P-256 key); each token
     {"sub": "user<i>", "iat", "exp": +1 h, "info": {"name": "user <i>"}};
     --tokens-file keeps them (and reuses a file made for the same N and
     algorithm, with its key beside it);
  2. starts heartwheel-chat --workers 1 with the key (--token-hmac-secret-file
     or --token-ecdsa-public-key) on a free port;
  3. starts the clients (--client-processes asyncio processes, raw sockets):
     each opens /ws, sends its connect and a subscribe to channel
     storm-<i> (its own: no presence fan-out; --channels K shares K) in one write, and counts as connected when the
     subscribe reply comes (the token was verified); a lost connection comes
     back after a backoff with full jitter (--reconnect-initial doubling to
     --reconnect-max, uniform in [0, delay]);
  4. once every client is connected: SIGKILL the server, --down seconds
     later start it again on the same port;
  5. reports: the ramp (connects/s at --connect-rate), the storm: seconds
     from the new server's start until every client was back, connects per
     second over that time and at the peak second, the server's CPU per
     connect (its /proc CPU time over the storm divided by the connects:
     the cost, which a loaded machine does not inflate as it does the wall
     clock), failed attempts, and the load average.

The clients are Python: at a few thousand connects per second they use a
core of their own, so on a 2-core machine the wall-clock rate is the pair's,
and the server's CPU per connect is the figure to compare. Exit status: 0
every client came back; 1 not all did, or a run failed; 2 usage error.
Everything started here is stopped by PID.
"""

import argparse
import asyncio
import base64
import json
import multiprocessing
import os
import random
import resource
import secrets
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "pylib"))
from procs import cpu_seconds, free_port  # noqa: E402

EXIT_FAILURE, EXIT_USAGE = 1, 2
# The server (one process) and each client process inherit this limit.
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


# ---- the clients --------------------------------------------------------------

def frame(payload):
    """One masked text frame (RFC 6455: clients mask)."""
    data = payload.encode()
    n = len(data)
    head = bytes([0x81])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    mask = os.urandom(4)
    m = int.from_bytes((mask * (n // 4 + 1))[:n], "big")
    masked = (int.from_bytes(data, "big") ^ m).to_bytes(n, "big") if n else b""
    return head + mask + masked


def pong(payload):
    mask = os.urandom(4)
    return bytes([0x8A, 0x80 | len(payload)]) + mask + bytes(
        b ^ mask[i % 4] for i, b in enumerate(payload))


async def read_frame(reader):
    """(opcode, payload) of the server's next frame (unmasked)."""
    b0, b1 = await reader.readexactly(2)
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack(">H", await reader.readexactly(2))[0]
    elif n == 127:
        n = struct.unpack(">Q", await reader.readexactly(8))[0]
    return b0 & 0x0F, await reader.readexactly(n)


class Reporter:
    """Batches events (kind, monotonic time) to the parent every 100 ms."""

    def __init__(self, queue):
        self.queue, self.batch = queue, []

    def add(self, kind, why=None):
        self.batch.append((kind, time.monotonic(), why))

    async def run(self):
        while True:
            await asyncio.sleep(0.1)
            self.flush()

    def flush(self):
        if self.batch:
            self.queue.put(self.batch)
            self.batch = []


async def client(i, token, port, opts, report, start_at):
    key = base64.b64encode(os.urandom(16)).decode()
    handshake = (f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                 f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                 f"Sec-WebSocket-Version: 13\r\n\r\n").encode()
    hello = (frame(json.dumps({"id": 1, "op": "connect", "token": token})) +
             frame(json.dumps({"id": 2, "op": "subscribe",
                               "channel": f"storm-{i % opts['channels'] if opts['channels'] else i}"})))
    await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    failures = 0
    while True:
        writer = None
        back = False
        why = None
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(handshake)
            head = await reader.readuntil(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 101"):
                raise ConnectionError("status " + head[:12].decode(errors="replace"))
            writer.write(hello)
            while True:
                op, payload = await read_frame(reader)
                if op == 0x9:
                    writer.write(pong(payload))
                    continue
                if op == 0x8:
                    raise ConnectionError("closed by the server")
                if op != 0x1:
                    continue
                msg = json.loads(payload)
                if msg.get("id") == 1 and not msg.get("ok"):
                    raise ConnectionError("connect refused: %s" % msg)
                if msg.get("id") == 2:
                    if not msg.get("ok"):
                        raise ConnectionError("subscribe refused: %s" % msg)
                    break
            back = True
            report.add("back")
            failures = 0
            while True:  # connected: answer pings until the server goes
                op, payload = await read_frame(reader)
                if op == 0x9:
                    writer.write(pong(payload))
                elif op == 0x8:
                    break
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                ConnectionError, ValueError) as e:
            why = (type(e).__name__ + (":" + e.strerror if isinstance(e, OSError) and e.strerror
                                       else ""))[:60]
        finally:
            if writer:
                writer.close()
        if back:
            report.add("lost")
        else:
            report.add("failed", why)
            failures += 1
        delay = min(opts["max"], opts["initial"] * 2 ** max(failures - 1, 0))
        await asyncio.sleep(random.uniform(0, delay))  # full jitter


def client_process(indices, tokens, port, opts, queue, t_start, rate):
    async def main():
        report = Reporter(queue)
        asyncio.ensure_future(report.run())
        await asyncio.gather(*(client(i, tokens[k], port, opts, report, t_start + i / rate)
                               for k, i in enumerate(indices)))
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    asyncio.run(main())


# ---- the server -----------------------------------------------------------------

class Server:
    def __init__(self, binary, port, flag, key, tmp, tag):
        self.stats = os.path.join(tmp, f"chat-{tag}.json")
        self.cmd = [binary, "--listen", f"127.0.0.1:{port}", "--workers", "1",
                    flag, key, "--stats-json", self.stats, "--stats-interval", "500ms"]
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, start_new_session=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on"):
            self.stop()
            raise RuntimeError(f"heartwheel-chat did not start: {line!r}")

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


class Tally(threading.Thread):
    """The clients' events: how many are up, and per-second series."""

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
                for kind, t, why in batch:
                    self.events[kind].append(t - self.t0)
                    if kind == "failed":
                        self.why[why] = self.why.get(why, 0) + 1
                    self.up += {"back": 1, "lost": -1, "failed": 0}[kind]


def per_second(times, start, end):
    out = [0] * max(0, int(end - start) + 1)
    for t in times:
        if start <= t <= end:
            out[int(t - start)] += 1
    return out


def main():
    rel = os.path.join(ROOT, "build-rel", "bin", "heartwheel-chat")
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clients", type=int, default=5000)
    p.add_argument("--token-alg", choices=("HS256", "ES256"), default="HS256")
    p.add_argument("--client-processes", type=int, default=2,
                   help="asyncio client processes (each holds clients / P connections)")
    p.add_argument("--connect-rate", type=float, default=2000,
                   help="the first ramp, connects/s over all client processes")
    p.add_argument("--channels", type=int, default=0,
                   help="clients share K channels (each join is then sent to the channel's "
                        "other subscribers: presence fan-out); 0: a channel per client")
    p.add_argument("--down", type=float, default=2.0, help="seconds the server stays down")
    p.add_argument("--after-restart", type=float, default=60,
                   help="give up when not every client is back this long after the new start")
    p.add_argument("--reconnect-initial", type=float, default=0.1, help="seconds")
    p.add_argument("--reconnect-max", type=float, default=10.0, help="seconds")
    p.add_argument("--tokens-file", help="keep the tokens here (reused when it fits)")
    p.add_argument("--chat", default=rel if os.access(rel, os.X_OK)
                   else os.path.join(ROOT, "build", "bin", "heartwheel-chat"),
                   help="the server binary (default build-rel/bin, else build/bin)")
    p.add_argument("--json", help="write the whole result here")
    args = p.parse_args()
    if not 1 <= args.clients <= FD_LIMIT - 500:
        die(f"--clients 1..{FD_LIMIT - 500}: one server process holds them all "
            f"(ulimit -n is {FD_LIMIT})", EXIT_USAGE)
    if args.client_processes < 1 or -(-args.clients // args.client_processes) > FD_LIMIT - 100:
        die("too many clients per client process: raise --client-processes", EXIT_USAGE)
    if not os.access(args.chat, os.X_OK):
        die(f"heartwheel-chat not found at {args.chat!r} (cmake --build build-rel "
            "--target heartwheel-chat)")

    tmp = tempfile.mkdtemp(prefix="reconnect-storm-chat-")
    tokens_file = args.tokens_file or os.path.join(tmp, "tokens.txt")
    t = time.monotonic()
    loaded = load_tokens(tokens_file, args.token_alg, args.clients)
    if loaded is None:
        make_tokens(args.token_alg, args.clients, tokens_file)
        loaded = load_tokens(tokens_file, args.token_alg, args.clients)
        log(f"made {args.clients} {args.token_alg} tokens in {time.monotonic() - t:.1f} s")
    flag, key, tokens = loaded

    port = free_port()
    load_before = os.getloadavg()
    first = Server(args.chat, port, flag, key, tmp, "before")
    second = None
    queue = multiprocessing.Queue()
    t0 = time.monotonic()
    tally = Tally(queue, t0)
    tally.start()
    opts = {"initial": args.reconnect_initial, "max": args.reconnect_max,
            "channels": args.channels}
    procs = []
    for k in range(args.client_processes):
        idx = list(range(k, args.clients, args.client_processes))
        pr = multiprocessing.Process(target=client_process, daemon=True,
                                     args=(idx, [tokens[i] for i in idx], port, opts, queue,
                                           t0 + 0.5, args.connect_rate))
        pr.start()
        procs.append(pr)
    result = {"clients": args.clients, "token_alg": args.token_alg,
              "client_processes": args.client_processes, "server": first.cmd[0]}
    ok = False
    try:
        ramp_cpu0 = first.cpu()
        deadline = time.monotonic() + args.clients / args.connect_rate + 60
        while tally.up < args.clients and time.monotonic() < deadline:
            time.sleep(0.05)
        if tally.up < args.clients:
            raise RuntimeError(f"only {tally.up} of {args.clients} connected before the restart")
        with tally.lock:
            backs = sorted(tally.events["back"])
        ramp_s = backs[-1] - backs[0]
        result["ramp"] = {"connect_rate": args.connect_rate, "seconds": round(ramp_s, 2),
                          "connects_per_s": round(args.clients / max(ramp_s, 1e-3)),
                          "server_cpu_us_per_connect":
                              round(1e6 * (first.cpu() - ramp_cpu0) / args.clients, 1)}
        log(f"all {args.clients} connected; ramp {ramp_s:.1f} s; restart")
        time.sleep(2)
        restart_s = time.monotonic() - t0
        first.stop(signal.SIGKILL)
        time.sleep(args.down)
        second = Server(args.chat, port, flag, key, tmp, "after")
        up_s = time.monotonic() - t0
        cpu0 = second.cpu()
        with tally.lock:
            backs_before = len(tally.events["back"])
        deadline = time.monotonic() + args.after_restart
        all_back = None
        while time.monotonic() < deadline:
            with tally.lock:
                n = len(tally.events["back"]) - backs_before
                if n >= args.clients and tally.up >= args.clients:
                    all_back = max(tally.events["back"])
            if all_back is not None:
                break
            time.sleep(0.02)
        cpu = second.cpu() - cpu0
        time.sleep(1)  # the stats file's last write
        with tally.lock:
            storm = [t for t in tally.events["back"] if t >= up_s]
            failed = [t for t in tally.events["failed"] if t >= restart_s]
            lost = [t for t in tally.events["lost"] if t >= restart_s]
        end = all_back if all_back is not None else time.monotonic() - t0
        series = per_second(storm, up_s, end)
        first_back = min(storm) if storm else None
        result.update({
            "restart_at_s": round(restart_s, 2), "server_down_s": round(up_s - restart_s, 2),
            "all_back_after_start_s": round(all_back - up_s, 2) if all_back else None,
            "all_back_after_kill_s": round(all_back - restart_s, 2) if all_back else None,
            "storm_connects": len(storm),
            "storm_connects_per_s": round(len(storm) / max(end - first_back, 1e-3))
            if first_back is not None else 0,
            "peak_connects_per_s": max(series, default=0),
            "server_cpu_s_storm": round(cpu, 2),
            "server_cpu_us_per_connect": round(1e6 * cpu / max(len(storm), 1), 1),
            "failed_attempts_after_kill": len(failed),
            "failed_by_cause": dict(tally.why),
            "connects_per_s_series": series,
            "lost_per_s_series": per_second(lost, restart_s, end),
            "failed_per_s_series": per_second(failed, restart_s, end),
            "server_after": second.counters(),
        })
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
        if second:
            second.stop(signal.SIGTERM)
        first.stop()
    result["loadavg_1m"] = [round(load_before[0], 2), round(os.getloadavg()[0], 2)]
    result["server_cmd"] = " ".join(first.cmd)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    print(json.dumps({k: v for k, v in result.items() if not k.endswith("_series")}))
    if not args.tokens_file:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(0 if ok else EXIT_FAILURE)


if __name__ == "__main__":
    main()
