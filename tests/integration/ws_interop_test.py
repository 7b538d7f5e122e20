#!/usr/bin/env python3
"""Interoperability of heartwheel's WebSocket server with real clients:
python3-websockets (Debian's, /usr/bin/python3) and Node's ws (Debian's
node-ws, run by ws_node_client.js). Both against heartwheel-chat's /echo:
echo of text and binary, a fragmented message, ping/pong both ways (the
server pings every 200 ms here and neither client is closed), close codes
echoed, 1009 for a message over --max-message-size.

Usage: ws_interop_test.py PATH/TO/heartwheel-chat [test ...]
"""
import asyncio
import os
import subprocess
import sys

from chat_support import Server, run_tests

try:
    import websockets
except ImportError:
    sys.exit("python3-websockets is missing: run tools/install-deps (and use /usr/bin/python3)")

SERVER_BINARY = None  # set by run_tests
MAX_MESSAGE = 65536
NODE_WS = "/usr/share/nodejs"  # node-ws installs the module here


def server():
    return Server(SERVER_BINARY, "--max-message-size", str(MAX_MESSAGE), "--ping-interval",
                  "200ms", "--pong-timeout", "2s")


def test_python_websockets():
    async def go(s):
        async with websockets.connect(s.url("/echo"), max_size=None, ping_interval=None) as ws:
            await ws.send("héllo")
            assert await ws.recv() == "héllo"
            await ws.send(b"\x00\x01\xff")
            assert await ws.recv() == b"\x00\x01\xff"
            await ws.send(["frag", "men", "ted"])  # one message in three fragments
            assert await ws.recv() == "fragmented"
            await ws.send(b"z" * MAX_MESSAGE)  # at the limit
            assert await ws.recv() == b"z" * MAX_MESSAGE
            pong = await ws.ping(b"heartbeat")
            await asyncio.wait_for(pong, 5)
            await asyncio.sleep(1.0)  # server pings, answered by the library
            await ws.send("still open")
            assert await ws.recv() == "still open"
        for code, reason in ((1000, ""), (4000, "bye"), (3001, "restart")):
            ws = await websockets.connect(s.url("/echo"), ping_interval=None)
            await ws.close(code, reason)
            assert ws.close_code == code, (code, ws.close_code)  # echoed by the server
        ws = await websockets.connect(s.url("/echo"), ping_interval=None, max_size=None)
        await ws.send(b"x" * (MAX_MESSAGE + 1))
        try:
            await asyncio.wait_for(ws.recv(), 10)
            raise AssertionError("a message over the limit was accepted")
        except websockets.ConnectionClosed as e:
            assert e.rcvd.code == 1009, e

    with server() as s:
        asyncio.run(go(s))
        st = s.read_stats(lambda st: st["ws"]["close_codes_sent"].get("1009", 0) == 1)
        assert st["ws"]["pong_timeouts"] == 0
        assert st["ws"]["pongs_received"] >= 3  # the library answered the server's pings
        assert st["ws"]["close_codes_received"]["4000"] == 1


def test_node_ws():
    if not os.path.isdir(os.path.join(NODE_WS, "ws")):
        raise AssertionError("node-ws is missing: run tools/install-deps")
    with server() as s:
        env = dict(os.environ, NODE_PATH=NODE_WS)
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ws_node_client.js")
        r = subprocess.run(["node", script, str(s.port), str(MAX_MESSAGE)], env=env,
                           capture_output=True, text=True, timeout=60)
        print(r.stdout, end="")
        assert r.returncode == 0, r.stdout + r.stderr
        st = s.read_stats(lambda st: st["ws"]["close_codes_sent"].get("1009", 0) == 1)
        assert st["ws"]["pong_timeouts"] == 0
        assert st["ws"]["close_codes_received"]["4000"] == 1


if __name__ == "__main__":
    run_tests(globals(), sys.argv)
