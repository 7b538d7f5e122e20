#!/usr/bin/python3
"""The fault runner's delayed-push workload: schedules pushes through
heartwheel-push's HTTP API (`POST /publish` with `delay_ms`, alternating
between the nodes) and watches them arrive on WebSocket subscribers (the
chat protocol, chat_client.Subscriber). Runs inside a host.

    push_client.py CONFIG.json

CONFIG: {"out": FILE, "nodes": {"A": "ws://...", ...}, "api": {"A": "HOST:PORT", ...},
         "channel": "d", "pushes": 60, "due_from_s": 3, "due_to_s": 9,
         "subscribers": [{"proc": "sA", "node": "A", "channels": ["d"]}],
         "final_history_by": "sA", "request_timeout_s": 10}

Push K (value "p:K") is due at start + due_from_s + K x (due_to_s -
due_from_s) / pushes; `schedule` events: invoke, ok (202: id, due_ms),
fail (definite for a 4xx, indeterminate for a 503 or no answer: the API
says a 503 after a lost reply may have been stored). Deliveries carry
wall_ms (the wall clock, as due_ms) for lateness. SIGTERM: the final
history, then exit 0.
"""
import asyncio
import http.client
import json
import signal
import sys
import time

from chat_client import Log, Subscriber, finish


def post(api, body, timeout):
    host, port = api.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        c.request("POST", "/publish", json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, r.read().decode(errors="replace")
    finally:
        c.close()


async def schedule_all(cfg, log, start):
    n, apis = cfg["pushes"], sorted(cfg["api"])
    span = cfg["due_to_s"] - cfg["due_from_s"]
    for k in range(1, n + 1):
        value = "p:%d" % k
        due = start + cfg["due_from_s"] + k * span / n
        api = apis[k % len(apis)]
        delay_ms = max(0, int((due - time.time()) * 1000))
        log(type="schedule", phase="invoke", proc="p", channel=cfg["channel"], value=value,
            node=api)
        try:
            status, body = await asyncio.to_thread(
                post, cfg["api"][api], {"channel": cfg["channel"], "data": {"v": value},
                                        "delay_ms": delay_ms}, cfg.get("request_timeout_s", 10))
            if status == 202:
                b = json.loads(body)
                log(type="schedule", phase="ok", proc="p", channel=cfg["channel"], value=value,
                    id=b["id"], due_ms=b["due_ms"])
            else:
                log(type="schedule", phase="fail", proc="p", channel=cfg["channel"], value=value,
                    error="%d %s" % (status, body[:100]), definite=status < 500)
        except OSError as e:
            log(type="schedule", phase="fail", proc="p", channel=cfg["channel"], value=value,
                error=repr(e)[:100], definite=False)


async def main(cfg):
    log = Log(cfg["out"])
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    subs = [Subscriber(cfg, s, log) for s in cfg["subscribers"]]
    tasks = [asyncio.ensure_future(s.run(stop)) for s in subs]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not all(cfg["channel"] in s.pos for s in subs):
        await asyncio.sleep(0.05)
    log(type="ready", proc="client")
    await schedule_all(cfg, log, time.time())
    await finish(cfg, stop, subs, tasks, log)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        asyncio.run(main(json.load(f)))
