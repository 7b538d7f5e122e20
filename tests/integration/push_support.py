"""What the heartwheel-push tests share: a redis-server of the test's own (on
a free loopback port, stopped by PID), a one-command RESP client, an HTTP
client for the push API and a Server-Sent Events reader. Standard library
only."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time


# The one-command RESP client is the cluster helper's (tools/pylib).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                                "pylib"))
from redis_cluster import command as redis_command  # noqa: E402
from redis_server import RedisServer, TlsFiles  # noqa: E402,F401


class Redis(RedisServer):
    """redis-server on a free port (tools/pylib/redis_server.py: password,
    ACL user and TLS options; kill(), restart() on the same port,
    freeze()/thaw()), and the delayed queue's sizes."""

    def queue_size(self, kind, prefix="heartwheel:push:"):
        """The size of the delayed queue's `kind` (due, claims: ZCARD; data:
        HLEN) summed over its partitions (keys PREFIX{tag}KIND)."""
        count = "HLEN" if kind == "data" else "ZCARD"
        return sum(self.command(count, k) for k in self.command("KEYS", prefix + "{*}" + kind))


def http(port, method, path, body=None, timeout=10):
    """(status, headers, body) over a fresh connection: the body parsed as
    JSON, as text if it is not, None if empty."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else (body or b"")
    if isinstance(data, str):
        data = data.encode()
    head = ("%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json"
            "\r\nContent-Length: %d\r\n\r\n" % (method, path, len(data))).encode()
    raw = b""
    try:
        # The head first: a body the server refuses (413) may be cut short.
        s.sendall(head)
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        raw += chunk
    s.close()
    if not raw:
        raise ConnectionError("no answer to %s %s" % (method, path))
    head, _, payload = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
    try:
        parsed = json.loads(payload) if payload.strip() else None
    except ValueError:  # the HTTP layer's own answers (413, 400) are text
        parsed = payload.decode(errors="replace")
    return int(lines[0].split()[1]), headers, parsed


def publish(port, channel, data, delay_ms=None):
    body = {"channel": channel, "data": data}
    if delay_ms is not None:
        body["delay_ms"] = delay_ms
    return http(port, "POST", "/publish", body)


class Sse:
    """GET /sse?channel=C as HTTP/1.0 (a close-delimited body: no chunked
    coding to undo); events parsed as they come."""

    def __init__(self, port, channel, last_event_id=None, timeout=10, rcvbuf=None, mss=None):
        """rcvbuf: a small receive buffer, for a reader that stops reading.
        mss: the segment size this end announces; a small one keeps the
        server's send buffer small (on loopback's 64 kB segments the kernel
        sizes it at megabytes), so what the reader does not take queues in
        the server's own write queue at once."""
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        if mss:
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss)
        self.sock.settimeout(timeout)
        self.sock.connect(("127.0.0.1", port))
        extra = "Last-Event-ID: %s\r\n" % last_event_id if last_event_id is not None else ""
        self.sock.sendall(("GET /sse?channel=%s HTTP/1.0\r\nHost: x\r\n%s\r\n"
                           % (channel, extra)).encode())
        self.buf = b""
        self.closed = False
        while b"\r\n\r\n" not in self.buf:
            self._recv()
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
        self.comments = 0

    def _recv(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            self.closed = True
            raise ConnectionError("the server closed the stream")
        self.buf += chunk

    def event(self, timeout=10):
        """The next event as a dict: id, event (default "message"), data
        (parsed JSON). Comments are counted, not returned."""
        deadline = time.monotonic() + timeout
        while True:
            while b"\n\n" not in self.buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no SSE event within %.1f s" % timeout)
                self.sock.settimeout(left)
                self._recv()
            block, _, self.buf = self.buf.partition(b"\n\n")
            ev = {"event": "message"}
            data = []
            for line in block.decode().split("\n"):
                if line.startswith(":"):
                    self.comments += 1
                    continue
                key, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if key == "data":
                    data.append(value)
                elif key in ("id", "event", "retry"):
                    ev[key] = value
            if data:
                ev["data"] = json.loads("\n".join(data))
                return ev
            if "id" in ev or "event" in ev and ev["event"] != "message":
                return ev

    def heartbeats(self, n, timeout=10):
        """Reads until n comment lines (the server's heartbeats) have come in
        all; an event before them is an error. Returns the seconds it took."""
        start = time.monotonic()
        while self.comments < n:
            block, sep, rest = self.buf.partition(b"\n\n")
            if sep:
                lines = block.split(b"\n")
                assert all(l.startswith(b":") for l in lines), "an event came first: %r" % block
                self.comments += len(lines)
                self.buf = rest
                continue
            left = start + timeout - time.monotonic()
            if left <= 0:
                raise TimeoutError("%d of %d heartbeats within %.1f s" % (self.comments, n, timeout))
            self.sock.settimeout(left)
            self._recv()
        return time.monotonic() - start

    def messages(self, n, timeout=10):
        """The next n publication events (skipping subscribed/reset ones)."""
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < n:
            ev = self.event(timeout=max(0.01, deadline - time.monotonic()))
            if ev["event"] == "message":
                out.append(ev)
        return out

    def close(self):
        self.sock.close()


class WsSubscriber:
    """A /ws client of the chat protocol (heartwheel-chat's and
    heartwheel-push's) subscribed to one channel, on chat_support's
    hand-built frames: synchronous, so a test reads what the kernel buffered
    for it after it published."""

    def __init__(self, port, channel, timeout=10):
        from chat_support import RawClient
        self.client = RawClient(port, "/ws", timeout=timeout)
        assert self.client.status == 101, self.client.status
        hello = self.client.recv_json()
        assert "connect" in hello, hello
        self.client.send(0x1, json.dumps({"id": 1, "op": "subscribe", "channel": channel}))
        self.pushes = []
        reply = self._next()
        while reply.get("id") != 1:
            self.pushes.append(reply)
            reply = self._next()
        assert reply.get("ok") is True, reply
        self.subscribed = reply

    def _next(self):
        while True:
            op, payload = self.client.recv_message()
            if op == 0x1:
                return json.loads(payload)
            if op == 0x9:  # the server's ping
                self.client.send(0xA, payload)
            elif op == 0x8:
                raise ConnectionError("the server closed the WebSocket")

    def publications(self, n, timeout=10):
        """The next n publications (pushes with an offset), in arrival order."""
        self.pushes = [p for p in self.pushes if "offset" in p]
        out, self.pushes = self.pushes[:n], self.pushes[n:]
        deadline = time.monotonic() + timeout
        while len(out) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("%d of %d publications within %.1f s" % (len(out), n, timeout))
            self.client.sock.settimeout(left)
            msg = self._next()
            if "offset" in msg:
                out.append(msg)
        return out

    def close(self):
        self.client.close()
