#!/usr/bin/env python3
"""Issue 23's attacks on build/bin/heartwheel-chat, rerun against the real
program and now refused or bounded: a request nested 80,000 deep gets an
error reply and the process lives (and so does a publication of data nested
just within the limit, dumped and pushed back).

Usage: chat_limits_test.py PATH/TO/heartwheel-chat [test ...]
Every server binds port 0 and is stopped by PID; a watchdog ends a hung
test. Bounds have slack for a loaded 2-core machine.
"""
import asyncio
import json
import sys

from chat_support import Server, run_tests

try:
    import websockets
except ImportError:
    sys.exit("python3-websockets is missing: run tools/install-deps (and use /usr/bin/python3)")

SERVER_BINARY = None  # set by run_tests


async def recv_reply(ws, rid, timeout=10):
    """The reply with id `rid` (pushes before it are skipped). Parsed with a
    depth check of our own: Python's json recurses too."""
    while True:
        msg = json.loads(await asyncio.wait_for(ws.recv(), timeout))
        if "id" in msg and msg["id"] == rid:
            return msg


def nested(depth, leaf="x"):
    """`depth` nested arrays around `leaf`, as text (no recursion)."""
    return "[" * depth + json.dumps(leaf) + "]" * depth


def test_80000_deep_message_gets_an_error_and_the_process_lives():
    async def go(s):
        async with websockets.connect(s.url("/ws?name=deep"), ping_interval=None,
                                      max_size=None) as ws:
            await ws.recv()  # the connect push
            # The attack: one request nested 80,000 deep (160 KB, under the 1 MiB
            # message limit). It crashed the server before (the serializer recursed).
            await ws.send('{"id":1,"op":"publish","channel":"c","data":' + nested(80000) + "}")
            msg = await recv_reply(ws, None)
            assert msg["error"]["code"] == "too_deep", msg
            # An "id" nested deep (it used to be copied into the reply).
            await ws.send('{"op":"history","channel":"c","id":' + nested(80000) + "}")
            msg = await recv_reply(ws, None)
            assert msg["error"]["code"] == "too_deep", msg
            # 64 deep in all (the request object is one level): accepted, stored
            # and pushed back; 65: refused.
            await ws.send(json.dumps({"id": 2, "op": "subscribe", "channel": "c"}))
            assert (await recv_reply(ws, 2))["ok"]
            await ws.send('{"id":3,"op":"publish","channel":"c","data":' + nested(63) + "}")
            assert (await recv_reply(ws, 3))["ok"]
            await ws.send('{"id":4,"op":"publish","channel":"c","data":' + nested(64) + "}")
            msg = await recv_reply(ws, None)
            assert msg["error"]["code"] == "too_deep", msg
            # Still serving.
            await ws.send(json.dumps({"id": 5, "op": "history", "channel": "c"}))
            hist = await recv_reply(ws, 5)
            assert len(hist["publications"]) == 1, hist
            data = hist["publications"][0]["data"]
            for _ in range(63):
                data = data[0]
            assert data == "x"

    with Server(SERVER_BINARY, "--max-message-size", "1048576") as s:
        asyncio.run(go(s))
        assert s.proc.poll() is None, "the server died"
        st = s.read_stats(lambda st: st["chat"]["errors"].get("too_deep", 0) == 3)
        assert st["chat"]["errors"]["too_deep"] == 3, st["chat"]


if __name__ == "__main__":
    run_tests(globals(), sys.argv)
