"""Clients for a restart of heartwheel-chat (SIGUSR2, docs/operating.md):
subscribers that reconnect after each close and recover what they missed
with `since`, a publisher that publishes through the restart, and a loop of
plain HTTP requests that counts refusals. Used by
tests/integration/operating_test.py (300 clients); tools/restart-run takes
Chat and the HTTP loop from here and holds its 10,000 clients in
heartwheel-load's processes (one Python process falls behind at that size).
Needs python3-websockets (/usr/bin/python3)."""
import asyncio
import http.client
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time

import websockets

from redis_server import RedisServer


def eventually(check, timeout=20, what="condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


class Chat:
    """heartwheel-chat with its stdout and stderr read by threads (a restart's
    successor writes to the same pipes); stopped by PID, successors too."""

    def __init__(self, binary, *flags):
        self.proc = subprocess.Popen([binary, "--listen", "127.0.0.1:0", *flags],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.out, self.err = [], []
        for stream, sink in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=self._read, args=(stream, sink), daemon=True).start()
        line = eventually(lambda: self.out[:1] or self.proc.poll() is not None, 20, "listening")
        if not self.out or not self.out[0].startswith("listening on "):
            raise AssertionError("did not start: %r %s" % (self.out, "".join(self.err)))
        self.port = int(self.out[0].rsplit(":", 1)[1])
        self.metrics = None
        if any(f == "--metrics-listen" for f in flags):
            line = eventually(lambda: [l for l in self.out if l.startswith("metrics on ")], 10,
                              "metrics on")[0]
            self.metrics = int(line.rsplit(":", 1)[1])
        self.others = []  # pids started by restarts, to stop at the end

    @staticmethod
    def _read(stream, sink):
        for line in stream:
            sink.append(line.rstrip("\n"))

    def stderr_has(self, text):
        return any(text in l for l in self.err)

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.metrics, timeout=5)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read().decode()
        c.close()
        return r.status, body

    def stop(self):
        for pid in self.others:
            stop_pid(pid)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=20)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def alive(pid):
    """True while `pid` runs (a zombie nobody reaps counts as ended)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def stop_pid(pid):
    """Stops a process that is not our child (a restart's successor)."""
    if not alive(pid):
        return
    os.kill(pid, signal.SIGKILL)
    eventually(lambda: not alive(pid), 10, "pid %d gone" % pid)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


class Client:
    """One subscriber of `channel`: reconnects after each close, recovers with
    `since`, and records every offset it received."""

    def __init__(self, port, name, channel="room", start_delay=0.0):
        self.port, self.name, self.channel = port, name, channel
        self.start_delay = start_delay  # a ramp: thousands at once overflow the accept queue
        self.connect_errors = 0  # timeouts and resets while connecting (not refusals)
        self.offsets = []  # in arrival order
        self.epoch = None
        self.position = None  # (offset, epoch): the last publication seen, or the subscribe's top
        self.back = []  # (time, seconds from the close to subscribed again)
        self.closes = []  # (time, code)
        self.recovered = []
        self.refused = 0
        self.subscribed = asyncio.Event()

    async def run(self, stop):
        rid = 0
        await asyncio.sleep(self.start_delay)
        while not stop.is_set():
            try:
                ws = await websockets.connect("ws://127.0.0.1:%d/ws?name=%s" % (self.port,
                                                                                 self.name),
                                              max_size=None, ping_interval=None, open_timeout=60)
            except ConnectionRefusedError:
                self.refused += 1
                await asyncio.sleep(0.05)
                continue
            except (asyncio.TimeoutError, OSError, websockets.InvalidHandshake):
                self.connect_errors += 1
                await asyncio.sleep(0.1)
                continue
            try:
                rid += 1
                req = {"id": rid, "op": "subscribe", "channel": self.channel}
                if self.position:
                    req["since"] = {"offset": self.position[0], "epoch": self.position[1]}
                await ws.send(json.dumps(req))
                while True:
                    msg = json.loads(await ws.recv())
                    if msg.get("id") == rid:
                        assert msg["ok"], msg
                        if "since" in req:
                            self.recovered.append(msg["recovered"])
                        self.epoch = msg["epoch"]
                        for p in msg["publications"]:
                            self.offsets.append(p["offset"])
                        self.position = ((self.offsets[-1] if self.offsets else msg["offset"]),
                                         msg["epoch"])
                        if self.closes:
                            self.back.append((time.monotonic(),
                                              time.monotonic() - self.closes[-1][0]))
                        self.subscribed.set()
                    elif msg.get("channel") == self.channel and "offset" in msg:
                        self.offsets.append(msg["offset"])
                        self.position = (msg["offset"], msg.get("epoch", self.epoch))
            except websockets.ConnectionClosed as e:
                self.closes.append((time.monotonic(), e.code))
            finally:
                await ws.close()


async def publisher(port, stop, acked, channels=("room",), every=0.02):
    """Publishes a counter every `every` seconds, to each of `channels` in
    turn, through every restart; `acked[channel]` gets each acknowledged
    offset."""
    n = 0
    while not stop.is_set():
        try:
            async with websockets.connect("ws://127.0.0.1:%d/ws?name=pub" % port,
                                          ping_interval=None) as ws:
                while not stop.is_set():
                    n += 1
                    channel = channels[n % len(channels)]
                    await ws.send(json.dumps({"id": n, "op": "publish", "channel": channel,
                                              "data": n}))
                    while True:
                        rep = json.loads(await ws.recv())
                        if rep.get("id") == n:
                            break
                    if rep.get("ok"):
                        acked.setdefault(channel, []).append(rep["offset"])
                    await asyncio.sleep(every)
        except (websockets.ConnectionClosed, OSError):
            await asyncio.sleep(0.02)


def connect_loop(port, stop, counts):
    """Plain HTTP requests one after another all along: each must be answered."""
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
        except ConnectionRefusedError:
            counts["refused"] += 1
            continue
        try:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = s.recv(64)
            counts["ok" if data.startswith(b"HTTP/1.1 200") else "failed"] += 1
        except OSError:
            counts["failed"] += 1
        finally:
            s.close()
        time.sleep(0.005)


def run_restart(binary, clients, drain, channels=1, workers=2, every=0.02, ramp=1000):
    """heartwheel-chat on its own redis-server with `clients` subscribers over
    `channels` channels (connecting `ramp` a second), a publisher and an
    HTTP loop; SIGUSR2 once all are subscribed. Returns (subscribers, acked offsets per channel, the HTTP
    loop's counts, the time the signal was sent)."""
    with tempfile.TemporaryDirectory() as d, RedisServer() as r:
        pidfile = os.path.join(d, "chat.pid")
        conf = os.path.join(d, "chat.toml")
        write(conf, "redis = \"%s\"\npubsub-prefix = \"op:\"\nworkers = %d\n"
                    "drain-timeout = \"%s\"\npid-file = \"%s\"\n"
                    % (r.address(), workers, drain, pidfile))
        with Chat(binary, "--config", conf, "--metrics-listen", "127.0.0.1:0") as c:
            old = c.proc.pid
            assert int(open(pidfile).read()) == old

            async def scenario():
                stop = asyncio.Event()
                subs = [Client(c.port, "c%d" % i, "room%d" % (i % channels), i / ramp)
                        for i in range(clients)]
                tasks = [asyncio.create_task(s.run(stop)) for s in subs]
                # All subscribed (a client task that failed says why at once).
                waiting = asyncio.ensure_future(
                    asyncio.gather(*(s.subscribed.wait() for s in subs)))
                done, _ = await asyncio.wait([waiting, *tasks], timeout=60 + clients / 50,
                                             return_when=asyncio.FIRST_COMPLETED)
                for t in done:
                    if t is not waiting:
                        t.result()  # raises what ended it
                assert waiting in done, "%d of %d clients subscribed" % (
                    sum(s.subscribed.is_set() for s in subs), clients)
                acked = {}
                names = tuple("room%d" % i for i in range(channels))
                pub = asyncio.create_task(publisher(c.port, stop, acked, names, every))
                counts = {"ok": 0, "refused": 0, "failed": 0}
                loop_stop = threading.Event()
                looper = threading.Thread(target=connect_loop, args=(c.port, loop_stop, counts))
                looper.start()
                # Every channel has a stream before the restart (so that every
                # client recovers from a publication it saw).
                deadline = time.monotonic() + 60 + channels
                while len(acked) < channels and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                await asyncio.sleep(0.5)
                sent = time.monotonic()
                os.kill(old, signal.SIGUSR2)
                # The old process drains and exits; the successor serves.
                while c.proc.poll() is None:
                    await asyncio.sleep(0.1)
                    assert time.monotonic() - sent < 60, "the old process did not exit"
                new = int(open(pidfile).read())
                c.others.append(new)
                assert new != old and alive(new)
                # Every client back, subscribed, and the publisher on.
                await asyncio.sleep(0.5)
                mark = sum(map(len, acked.values()))
                deadline = time.monotonic() + 30
                while (sum(map(len, acked.values())) < mark + 10
                       and time.monotonic() < deadline):
                    await asyncio.sleep(0.05)
                stop.set()
                loop_stop.set()
                pub.cancel()  # a publication still unanswered is simply not counted
                await asyncio.gather(pub, return_exceptions=True)
                deadline = time.monotonic() + 60
                while (any(not s.offsets or s.offsets[-1] < max(acked[s.channel]) for s in subs)
                       and time.monotonic() < deadline):
                    await asyncio.sleep(0.05)
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                looper.join()
                return subs, acked, counts, sent, old, new

            subs, acked, counts, sent, old, new = asyncio.run(scenario())
            assert c.proc.returncode == 0, (c.proc.returncode, c.err)
            assert c.stderr_has("signal 12, starting a successor"), c.err
            assert c.stderr_has("restart: successor pid %d listens" % new), c.err
            assert c.get("/readyz") == (200, "ready\n")  # the successor's endpoint
            return subs, acked, counts, sent
