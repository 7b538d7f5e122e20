#!/usr/bin/env python3
"""permessage-deflate (RFC 7692) between heartwheel-chat and real clients:
python3-websockets (which offers it by default) on /echo and /ws, the raw
client of chat_support.py for what no library sends (a zip bomb, a flood of
small bombs).

- compressed round trips on /echo, fragmented messages included, the 101's
  answer checked, the server's counters showing both directions compressed;
- a publication fanned out to subscribers that all agreed: deflated once
  (heartwheel_ws_deflate_calls_total moves by one per publication), received
  by every one;
- --ws-compression-context: windows capped in the answer, round trips;
- --no-ws-compression: the offer is not answered;
- a bomb (10 MiB of zeros deflated: ~10 KB, DEFLATE cannot do better than
  ~1:1032) closed 1009 as soon as it passes --max-message-size, twenty of
  them growing the server's RSS by less than 16 MiB;
- a flood of compressed messages, each just under the limit, in one write:
  the server yields its loop between reads of it (inflate_yields) and still
  answers every one, in order.

Usage: ws_deflate_test.py PATH/TO/heartwheel-chat [test ...]
"""
import asyncio
import json
import os
import sys

from chat_support import BINARY, RawClient, Server, deflated, inflated, run_tests

try:
    import websockets
except ImportError:
    sys.exit("python3-websockets is missing: run tools/install-deps (and use /usr/bin/python3)")

SERVER_BINARY = None  # set by run_tests
STATELESS = "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
OFFER = "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"


def json_body(n, seed=0):
    items, s = [], ""
    while len(s) < n:
        items.append({"user": "u%d" % ((len(items) * 7 + seed) % 31), "text": "hello there",
                      "n": len(items)})
        s = json.dumps({"items": items})
    return s


def rss_bytes(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_python_websockets_compressed_round_trips():
    async def go(s):
        async with websockets.connect(s.url("/echo"), max_size=None, ping_interval=None) as ws:
            assert ws.response_headers["Sec-WebSocket-Extensions"] == STATELESS, \
                ws.response_headers
            for i in range(20):
                text = json_body(300 + 200 * i, i)
                await ws.send(text)
                assert await ws.recv() == text
            await ws.send(b"\x00" * 50000)
            assert await ws.recv() == b"\x00" * 50000
            # One message in fragments: the library compresses each fragment,
            # RSV1 on the first only.
            parts = [json_body(2000, 1), json_body(3000, 2), "tail"]
            await ws.send(parts)
            assert await ws.recv() == "".join(parts)
            await ws.send("small")  # under --ws-compression-min-size: sent back plain
            assert await ws.recv() == "small"

    with Server(SERVER_BINARY) as s:
        asyncio.run(go(s))
        st = s.read_stats(lambda st: st["ws"]["messages_received"] >= 23)["ws"]
        assert st["compression_negotiated"] == 1, st
        assert st["compressed_messages_received"] >= 22, st
        assert st["compressed_messages_sent"] == 22, st  # all but "small"
        assert st["compression_skipped_small"] == 1, st
        assert st["compressed_sent_compressed_bytes"] * 3 < st["compressed_sent_uncompressed_bytes"]
        assert st["protocol_errors"] == 0, st


def test_publication_deflated_once_for_every_subscriber():
    subscribers, publications = 25, 4

    async def go(s):
        conns = []
        for i in range(subscribers):
            ws = await websockets.connect(s.url("/ws?name=s%d" % i), ping_interval=None)
            assert ws.response_headers["Sec-WebSocket-Extensions"] == STATELESS
            await ws.recv()  # the greeting
            await ws.send(json.dumps({"id": 1, "op": "subscribe", "channel": "room"}))
            while json.loads(await ws.recv()).get("id") != 1:
                pass
            conns.append(ws)
        before = s.read_stats(fresh=True)["ws"]["deflate_calls"]
        async with websockets.connect(s.url("/ws?name=pub"), ping_interval=None) as pub:
            await pub.recv()
            for k in range(publications):
                data = json.loads(json_body(1024, k))
                await pub.send(json.dumps({"id": k, "op": "publish", "channel": "room",
                                           "data": data}))
        for ws in conns:
            got = []
            while len(got) < publications:
                m = json.loads(await asyncio.wait_for(ws.recv(), 10))
                if "offset" in m and "data" in m and "id" not in m:
                    got.append(m["data"])
            assert got == [json.loads(json_body(1024, k)) for k in range(publications)]
            await ws.close()
        return before

    with Server(SERVER_BINARY, "--workers", "1", "--no-join-leave") as s:
        before = asyncio.run(go(s))
        st = s.read_stats(lambda st: st["ws"]["compressed_messages_sent"] >=
                          subscribers * publications)["ws"]
        # One deflate per publication, not per subscriber (the publish
        # replies and the greetings are under the size threshold).
        assert st["deflate_calls"] - before == publications, (before, st)
        assert st["shared_sent"] >= subscribers * publications, st


def test_context_takeover_caps_windows_and_round_trips():
    async def go(s):
        async with websockets.connect(s.url("/echo"), max_size=None, ping_interval=None) as ws:
            got = ws.response_headers["Sec-WebSocket-Extensions"]
            assert got == "permessage-deflate; client_no_context_takeover; " \
                          "server_max_window_bits=10", got
            # Within the reach of a 1 KiB window (zlib: 1024 - 262): a repeat refers back.
            text = json_body(500)
            for _ in range(5):
                await ws.send(text)
                assert await ws.recv() == text

    with Server(SERVER_BINARY, "--ws-compression-context", "--ws-compression-window-bits",
                "10") as s:
        asyncio.run(go(s))
        st = s.read_stats(lambda st: st["ws"]["compressed_messages_sent"] == 5)["ws"]
        # With context the repeats refer back: far below the stateless ratio.
        assert st["compressed_sent_compressed_bytes"] * 8 < \
            st["compressed_sent_uncompressed_bytes"], st


def test_no_ws_compression_leaves_the_offer_unanswered():
    async def go(s):
        async with websockets.connect(s.url("/echo"), ping_interval=None) as ws:
            assert "Sec-WebSocket-Extensions" not in ws.response_headers
            await ws.send(json_body(2000))
            assert await ws.recv() == json_body(2000)

    with Server(SERVER_BINARY, "--no-ws-compression") as s:
        asyncio.run(go(s))
        assert s.read_stats()["ws"]["compression_negotiated"] == 0


def test_bomb_closed_1009_with_rss_bounded():
    bomb = deflated(b"\x00" * (10 << 20))
    assert len(bomb) < 12 * 1024, len(bomb)
    with Server(SERVER_BINARY, "--max-message-size", "65536") as s:
        # Warm up: the pool's streams and the allocator's arenas exist.
        c = RawClient(s.port, handshake=False)
        assert c.handshake("/echo", OFFER) == 101
        assert c.headers["sec-websocket-extensions"] == STATELESS
        c.send(BINARY, deflated(b"w" * 60000), rsv=4)
        b0, payload = c.recv_raw_frame()
        assert b0 == 0xC2 and inflated(payload) == b"w" * 60000
        c.close()
        before = rss_bytes(s.proc.pid)
        for _ in range(20):
            c = RawClient(s.port, handshake=False)
            assert c.handshake("/echo", OFFER) == 101
            c.send(BINARY, bomb, rsv=4)
            assert c.expect_close(1009) == 1009
            c.close()
        grew = rss_bytes(s.proc.pid) - before
        assert grew < 16 << 20, "RSS grew by %d bytes" % grew
        st = s.read_stats(lambda st: st["ws"]["close_codes_sent"].get("1009", 0) == 20)["ws"]
        assert st["protocol_errors"] == 20, st


def test_flood_of_compressed_messages_yields_the_loop_and_answers_all():
    count, size = 300, 60000  # each just under --max-message-size
    one = RawClient.frame(BINARY, deflated(b"\x00" * size), rsv=4)
    with Server(SERVER_BINARY, "--max-message-size", "65536") as s:
        c = RawClient(s.port, handshake=False)
        assert c.handshake("/echo", OFFER) == 101
        c.send_raw(one * count)  # ~18 MiB inflated from ~20 KB, in one write
        for _ in range(count):
            b0, payload = c.recv_raw_frame()
            assert b0 == 0xC2, hex(b0)  # FIN | RSV1 | binary: compressed back
            assert inflated(payload) == b"\x00" * size
        c.close()
        st = s.read_stats(lambda st: st["ws"]["messages_received"] == count)["ws"]
        # 18 MiB in one read is past the 1 MiB budget many times over.
        assert st["inflate_yields"] >= 1, st
        assert st["protocol_errors"] == 0, st


if __name__ == "__main__":
    run_tests(globals(), sys.argv)
