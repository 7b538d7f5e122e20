"""The clients of chat_tokens.py: Python asyncio processes on raw sockets,
each client speaking heartwheel-chat's protocol version 2 (a connect with its
token and a subscribe, in one write) and coming back after a backoff with
full jitter when its connection is lost. Events ("back", "lost", "failed")
go to the parent in batches through a multiprocessing queue, each tagged
with the client's server index.

Source addresses: a client binds its loopback source address (127.0.0.x)
with IP_BIND_ADDRESS_NO_PORT, so the kernel picks the port at connect()
per (source, destination) pair rather than reserving one per source address
for every destination. Standard library only.
"""

import asyncio
import base64
import json
import os
import random
import signal
import socket
import struct
import time

# <linux/in.h>; Python's socket module does not name it.
IP_BIND_ADDRESS_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)


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
    """Batches events (kind, monotonic time, cause, server) to the parent
    every 100 ms."""

    def __init__(self, queue):
        self.queue, self.batch = queue, []

    def add(self, kind, server, why=None):
        self.batch.append((kind, time.monotonic(), why, server))

    async def run(self):
        while True:
            await asyncio.sleep(0.1)
            self.flush()

    def flush(self):
        if self.batch:
            self.queue.put(self.batch)
            self.batch = []


async def open_from(source, port):
    """A stream to 127.0.0.1:port from the loopback address `source`."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
        sock.bind((source, 0))
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    except BaseException:
        sock.close()
        raise
    return await asyncio.open_connection(sock=sock)


async def client(c, opts, report, gate, start_at):
    """c: {"i", "token", "port", "server", "source"}; gate: the process's
    semaphore of handshakes in flight."""
    i, port = c["i"], c["port"]
    key = base64.b64encode(os.urandom(16)).decode()
    handshake = (f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                 f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                 f"Sec-WebSocket-Version: 13\r\n\r\n").encode()
    hello = (frame(json.dumps({"id": 1, "op": "connect", "token": c["token"]})) +
             frame(json.dumps({"id": 2, "op": "subscribe",
                               "channel": f"storm-{i % opts['channels'] if opts['channels'] else i}"})))
    await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    failures = 0
    while True:
        writer = None
        back = False
        why = None
        try:
            # From connect() to the subscribe reply under the gate: a client
            # process behind on its work does not connect more than it can
            # carry through the handshake, so the server's timeouts (the
            # request's, --connect-timeout) measure the server, not the
            # clients' own backlog.
            async with gate:
                reader, writer = await open_from(c["source"], port)
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
            report.add("back", c["server"])
            failures = 0
            while True:  # connected: answer pings until the server goes
                op, payload = await read_frame(reader)
                if op == 0x9:
                    writer.write(pong(payload))
                elif op == 0x8:
                    break
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                ConnectionError, ValueError) as e:
            # errno's text, not strerror: sock_connect's names the address
            detail = (os.strerror(e.errno) if isinstance(e, OSError) and e.errno
                      else getattr(e, "strerror", None))
            why = (type(e).__name__ + (":" + detail if detail else ""))[:60]
        finally:
            if writer:
                writer.close()
        if back:
            report.add("lost", c["server"])
        else:
            report.add("failed", c["server"], why)
            failures += 1
        delay = min(opts["max"], opts["initial"] * 2 ** max(failures - 1, 0))
        await asyncio.sleep(random.uniform(0, delay))  # full jitter


def client_process(clients, opts, queue, t_start, rate):
    """Runs `clients` (dicts as client() takes) until SIGTERM; client i
    first connects at t_start + i / rate; at most opts["in_flight"]
    handshakes at once."""
    async def main():
        report = Reporter(queue)
        gate = asyncio.Semaphore(opts["in_flight"])
        asyncio.ensure_future(report.run())
        await asyncio.gather(*(client(c, opts, report, gate, t_start + c["i"] / rate)
                               for c in clients))
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    asyncio.run(main())
