#!/usr/bin/python3
"""The fault runner's chat workload: publishers and subscribers speaking the
heartwheel chat protocol (docs/chat-protocol.md) to one or more nodes, each
operation written to a history file (one JSON event a line, flushed at once,
so a run killed midway keeps what happened). Runs inside a host
(tools/hosts run, or netns_hosts.HostSet.popen); python3-websockets.

    chat_client.py CONFIG.json

CONFIG: {"out": FILE, "nodes": {"A": "ws://198.18.0.2:8080/ws", ...},
         "publishers": [{"proc": "pA", "node": "A", "channels": ["c0", ...],
                         "interval_ms": 50}],
         "subscribers": [{"proc": "sA", "node": "A", "channels": [...]}],
         "publish_for_s": 20, "request_timeout_s": 10,
         "final_history_by": "sA", "stop_file": FILE}

Publishers publish value "PROC:K" (K = 1, 2, ...) round-robin over their
channels for publish_for_s or until stop_file exists, one at a time (the
next after the previous one's answer, or its timeout): the checker relies
on that order. A publish answered ok is
acknowledged; answered `unavailable`, timed out or cut by a disconnect it is
indeterminate (it may have been taken: docs/chat-protocol.md); other errors
are definite failures. Subscribers reconnect (100 ms to 1 s backoff) and
resubscribe with `since` {offset, epoch} of the last publication they saw; a
`recovered: false` reply or a push in a new epoch is an announcement, after
which they reload `history` (deliveries via "history", only values not seen
before). SIGTERM: publishers stop, `final_history_by` reads each channel's
whole history (`final_history`), then the process exits 0.
"""
import asyncio
import json
import os
import random
import signal
import sys
import time

import websockets


class Log:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)

    def __call__(self, **e):
        e["t"] = round(time.monotonic() * 1000, 3)
        self.f.write(json.dumps(e, separators=(",", ":")) + "\n")


class Conn:
    """One /ws connection: requests by id, pushes to a callback."""

    def __init__(self, url, on_push):
        self.url, self.on_push = url, on_push
        self.ws, self.next_id, self.waiting, self.reader = None, 1, {}, None

    async def open(self, timeout):
        self.ws = await asyncio.wait_for(
            websockets.connect(self.url, ping_interval=None, close_timeout=1,
                               max_size=2 ** 24), timeout)
        hello = json.loads(await asyncio.wait_for(self.ws.recv(), timeout))
        self.reader = asyncio.ensure_future(self._read())
        return hello

    async def _read(self):
        try:
            async for raw in self.ws:
                msg = json.loads(raw)
                fut = self.waiting.pop(msg.get("id"), None) if "id" in msg else None
                if fut is not None:
                    if not fut.done():
                        fut.set_result(msg)
                elif "id" not in msg:
                    self.on_push(msg)
        except (websockets.ConnectionClosed, OSError):
            pass
        finally:
            for fut in self.waiting.values():
                if not fut.done():
                    fut.set_exception(ConnectionError("connection closed"))
            self.waiting.clear()

    async def request(self, timeout, **req):
        rid = self.next_id
        self.next_id += 1
        fut = asyncio.get_running_loop().create_future()
        self.waiting[rid] = fut
        await self.ws.send(json.dumps(dict(id=rid, **req)))
        try:
            return await asyncio.wait_for(fut, timeout)
        finally:
            self.waiting.pop(rid, None)

    def closed(self):
        return self.reader is None or self.reader.done()

    async def close(self):
        if self.ws is not None:
            try:
                await asyncio.wait_for(self.ws.close(), 2)
            except (asyncio.TimeoutError, OSError, websockets.WebSocketException):
                pass


async def publisher(cfg, spec, log, stop):
    url = cfg["nodes"][spec["node"]]
    timeout = cfg.get("request_timeout_s", 10)
    interval = spec.get("interval_ms", 50) / 1000
    channels, proc = spec["channels"], spec["proc"]
    k, conn = 0, None
    end = time.monotonic() + cfg["publish_for_s"]
    stop_file = cfg.get("stop_file")
    while not stop.is_set() and time.monotonic() < end and not (
            stop_file and os.path.exists(stop_file)):
        started = time.monotonic()
        if conn is None or conn.closed():
            try:
                conn = Conn(url, lambda m: None)
                await conn.open(timeout)
            except (OSError, asyncio.TimeoutError, websockets.WebSocketException) as e:
                log(type="disconnected", proc=proc, reason=repr(e)[:200])
                conn = None
                await asyncio.sleep(0.2)
                continue
        k += 1
        ch, value = channels[k % len(channels)], "%s:%d" % (proc, k)
        log(type="publish", phase="invoke", proc=proc, channel=ch, value=value, node=spec["node"])
        try:
            rep = await conn.request(timeout, op="publish", channel=ch, data={"v": value})
            if rep.get("ok"):
                log(type="publish", phase="ok", proc=proc, channel=ch, value=value,
                    offset=rep["offset"], epoch=rep["epoch"])
            else:
                code = rep.get("error", {}).get("code")
                log(type="publish", phase="fail", proc=proc, channel=ch, value=value, error=code,
                    definite=code not in ("unavailable", "internal"))
        except (ConnectionError, OSError, asyncio.TimeoutError,
                websockets.WebSocketException) as e:
            log(type="publish", phase="fail", proc=proc, channel=ch, value=value,
                error=type(e).__name__, definite=False)
            await conn.close()
            conn = None
        await asyncio.sleep(max(0, started + interval - time.monotonic()))
    if conn is not None:
        await conn.close()


class Subscriber:
    def __init__(self, cfg, spec, log):
        self.cfg, self.spec, self.log = cfg, spec, log
        self.proc = spec["proc"]
        self.pos = {}  # channel -> (epoch, offset) of the last publication seen
        self.seen = {ch: set() for ch in spec["channels"]}
        self.reload = asyncio.Queue()
        self.conn = None

    def value_of(self, pub):
        d = pub.get("data")
        return d.get("v") if isinstance(d, dict) else d

    def deliver(self, pub, via):
        ch, value = pub["channel"], self.value_of(pub)
        epoch, offset = pub.get("epoch"), pub.get("offset")
        extra = {"wall_ms": int(time.time() * 1000)}
        self.log(type="deliver", proc=self.proc, channel=ch, value=value, offset=offset,
                 epoch=epoch, via=via, **extra)
        old = self.pos.get(ch)
        if via == "live" and old is not None and old[0] and epoch != old[0]:
            self.reload.put_nowait(ch)  # a new epoch: "reload"
        self.seen[ch].add(value)
        self.pos[ch] = (epoch, offset)

    def on_push(self, msg):
        if "offset" in msg and "channel" in msg and "data" in msg:
            self.deliver(msg, "live")

    async def subscribe(self, ch, timeout):
        since = None
        if ch in self.pos and self.pos[ch][0]:
            since = {"epoch": self.pos[ch][0], "offset": self.pos[ch][1]}
        req = {"op": "subscribe", "channel": ch}
        if since:
            req["since"] = since
        rep = await self.conn.request(timeout, **req)
        if not rep.get("ok"):
            raise ConnectionError("subscribe %s: %s" % (ch, rep.get("error")))
        self.log(type="subscribed", proc=self.proc, channel=ch, offset=rep["offset"],
                 epoch=rep["epoch"], since=since, recovered=rep.get("recovered", False),
                 node=self.spec["node"])
        if since and rep.get("recovered"):
            for pub in rep.get("publications", []):
                self.deliver(pub, "recovery")
        else:
            self.pos[ch] = (rep["epoch"], rep["offset"])
            if since:
                await self.history(ch, timeout)

    async def history(self, ch, timeout):
        """The reload after an announcement: values not seen before."""
        rep = await self.conn.request(timeout, op="history", channel=ch)
        if rep.get("ok"):
            for pub in rep.get("publications", []):
                if self.value_of(pub) not in self.seen[ch]:
                    self.log(type="deliver", proc=self.proc, channel=ch,
                             value=self.value_of(pub), offset=pub.get("offset"),
                             epoch=pub.get("epoch"), via="history",
                             wall_ms=int(time.time() * 1000))
                    self.seen[ch].add(self.value_of(pub))

    async def run(self, stop):
        url = self.cfg["nodes"][self.spec["node"]]
        timeout = self.cfg.get("request_timeout_s", 10)
        backoff = 0.1
        while not stop.is_set():
            try:
                self.conn = Conn(url, self.on_push)
                await self.conn.open(timeout)
                for ch in self.spec["channels"]:
                    await self.subscribe(ch, timeout)
                backoff = 0.1
                while not stop.is_set() and not self.conn.closed():
                    try:
                        ch = await asyncio.wait_for(self.reload.get(), 0.2)
                        self.log(type="announce", proc=self.proc, channel=ch, why="new epoch")
                        await self.history(ch, timeout)
                    except asyncio.TimeoutError:
                        pass
                if not stop.is_set():
                    self.log(type="disconnected", proc=self.proc, reason="closed by the server")
            except (ConnectionError, OSError, asyncio.TimeoutError,
                    websockets.WebSocketException) as e:
                self.log(type="disconnected", proc=self.proc, reason=repr(e)[:200])
            if not stop.is_set():
                await self.conn.close()
                await asyncio.sleep(backoff * (0.5 + random.random() / 2))
                backoff = min(1.0, backoff * 2)

    async def final_history(self, timeout):
        for ch in self.spec["channels"]:
            for _ in range(20):
                try:
                    if self.conn is None or self.conn.closed():
                        self.conn = Conn(self.cfg["nodes"][self.spec["node"]], lambda m: None)
                        await self.conn.open(timeout)
                    rep = await self.conn.request(timeout, op="history", channel=ch)
                    if rep.get("ok"):
                        self.log(type="final_history", proc=self.proc, channel=ch,
                                 epoch=rep["epoch"], offset=rep["offset"],
                                 truncated=rep.get("truncated", False),
                                 publications=[[p.get("offset"), self.value_of(p)]
                                               for p in rep.get("publications", [])])
                        break
                except (ConnectionError, OSError, asyncio.TimeoutError,
                        websockets.WebSocketException):
                    self.conn = None
                await asyncio.sleep(0.5)


async def main(cfg):
    log = Log(cfg["out"])
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    subs = [Subscriber(cfg, s, log) for s in cfg.get("subscribers", [])]
    tasks = [asyncio.ensure_future(s.run(stop)) for s in subs]
    # Publishers start once every subscriber is in (the checker expects it).
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not stop.is_set():
        if all(all(ch in s.pos for ch in s.spec["channels"]) for s in subs):
            break
        await asyncio.sleep(0.05)
    log(type="ready", proc="client")
    tasks += [asyncio.ensure_future(publisher(cfg, p, log, stop))
              for p in cfg.get("publishers", [])]
    await finish(cfg, stop, subs, tasks, log)


async def finish(cfg, stop, subs, tasks, log):
    """After SIGTERM: every task done, the final history read, connections closed."""
    await stop.wait()
    await asyncio.gather(*tasks, return_exceptions=True)
    for s in subs:
        if s.proc == cfg.get("final_history_by"):
            await s.final_history(cfg.get("request_timeout_s", 10))
        if s.conn is not None:
            await s.conn.close()
    log(type="exit", proc="client")


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        asyncio.run(main(json.load(f)))
