"""What the heartwheel-chat tests share: the server process on a free
loopback port, and a raw-socket WebSocket client that builds every frame by
hand (so the tests can send what no library would: reserved bits, bad
opcodes, broken UTF-8, unmasked frames) and reads the server's frames byte by
byte. Standard library only; the library clients (python3-websockets, node
ws) are in the interop tests."""
import base64
import hashlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import zlib

# procs.PortHold, for the tests whose server comes back on its port.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                                "pylib"))
from procs import PortHold  # noqa: E402,F401

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

TEXT, BINARY, CONT, CLOSE, PING, PONG = 0x1, 0x2, 0x0, 0x8, 0x9, 0xA


def run_tests(module_globals, argv):
    """`script BINARY [test ...]`: runs the named tests (all by default) under
    a watchdog; exits 1 on the first failure."""
    if len(argv) < 2:
        sys.exit("usage: %s PATH/TO/heartwheel-chat [test ...]" % argv[0])
    module_globals["SERVER_BINARY"] = argv[1]
    names = argv[2:] or sorted(n for n in module_globals if n.startswith("test_"))
    def watchdog(*_):
        raise TimeoutError("watchdog: the test ran too long")
    signal.signal(signal.SIGALRM, watchdog)
    for name in names:
        signal.alarm(module_globals.get("WATCHDOG_SECONDS", 100))
        started = time.monotonic()
        module_globals[name]()
        signal.alarm(0)
        print("ok  %s (%.2f s)" % (name, time.monotonic() - started))


class Server:
    """One heartwheel-chat process on a free loopback port (or `listen`, to
    come back on the port of a stopped one); stopped by PID."""

    def __init__(self, binary, *flags, listen="127.0.0.1:0"):
        fd, self.stats = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        os.unlink(self.stats)
        self.proc = subprocess.Popen(
            [binary, "--listen", listen, "--stats-json", self.stats,
             "--stats-interval", "100ms", *flags],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            self.stop()
            raise AssertionError("server did not start: %r %s" % (line, self.proc.stderr.read()))
        self.port = int(line.rsplit(":", 1)[1])

    def url(self, path):
        return "ws://127.0.0.1:%d%s" % (self.port, path)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        for p in (self.stats, self.stats + ".tmp"):
            try:
                os.unlink(p)
            except OSError:
                pass

    def terminate(self, timeout=20):
        """SIGTERM (drain); returns the exit status."""
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)

    def read_stats(self, ready=lambda st: True, timeout=10, fresh=False):
        """The stats file once `ready(stats)` holds (rewritten every 100 ms).
        `fresh`: not before the file's third rewrite after this call. Each
        worker publishes its copy every interval and the file is written
        every interval, so by then it holds copies made after the call:
        for a counter that must NOT have moved, where any earlier file
        would agree whatever happened since."""
        st = None
        deadline = time.monotonic() + timeout
        rewrites, seen = 0, self._stats_version()
        while fresh and rewrites < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
            now = self._stats_version()
            if now != seen:
                rewrites, seen = rewrites + 1, now
        while time.monotonic() < deadline:
            try:
                with open(self.stats) as f:
                    st = json.load(f)
                if ready(st):
                    return st
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.05)
        raise AssertionError("stats never ready: %s" % json.dumps(st)[:3000])

    def _stats_version(self):
        """Tells one write of the stats file from the next (each is a new
        file renamed into place); None while there is none."""
        try:
            f = os.stat(self.stats)
        except OSError:
            return None
        return f.st_ino, f.st_mtime_ns

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def rss_kib(pid):
    """The process's resident set, KiB (/proc/PID/status VmRSS)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def cpu_seconds(pid):
    """User + system CPU time the process used so far (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ping_flood(server, path, clients, pings, extra_flood=None):
    """`clients` raw WebSockets on `path` that each send `pings` 125-byte
    pings and never read (a 4 KiB receive buffer): what the server then
    holds for them is the point. Waits until the server counted every ping
    (ws.pings_received); returns (extra RSS in MiB, the stats, the clients,
    still open: the caller closes them)."""
    before = rss_kib(server.proc.pid)
    socks = [RawClient(server.port, path, rcvbuf=4096) for _ in range(clients)]
    batch = RawClient.frame(PING, b"p" * 125, mask_key=b"\x01\x02\x03\x04") * 1000
    for _ in range(pings // 1000):
        for c in socks:
            c.send_raw(batch)
    want = clients * (pings // 1000) * 1000
    st = server.read_stats(lambda st: st["ws"]["pings_received"] >= want, timeout=60)
    extra = (rss_kib(server.proc.pid) - before) / 1024.0
    return extra, st, socks


def http_get(port, path):
    """(status, headers, body) of GET path over a fresh connection."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path).encode())
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
    return int(lines[0].split()[1]), headers, body


class Closed(Exception):
    """The server closed the TCP connection."""


class RawClient:
    """A WebSocket client on a plain socket: frames built and read by hand."""

    def __init__(self, port, path="/echo", rcvbuf=None, timeout=10, handshake=True):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.status = None
        self.headers = {}
        if handshake:
            self.handshake(path)

    def handshake(self, path, extra="", key=None, version="13", method="GET"):
        key = key or base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((
            "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: %s\r\n%s\r\n"
            % (method, path, key, version, extra)).encode())
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
        if self.status == 101:
            expected = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
            assert self.headers.get("sec-websocket-accept") == expected, self.headers
        return self.status

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise Closed()
        self.buf += chunk

    def _take(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    @staticmethod
    def frame(opcode, payload=b"", fin=True, rsv=0, mask=True, mask_key=None):
        if isinstance(payload, str):
            payload = payload.encode()
        b0 = (0x80 if fin else 0) | (rsv << 4) | opcode
        n = len(payload)
        m = 0x80 if mask else 0
        if n < 126:
            head = struct.pack("!BB", b0, m | n)
        elif n <= 0xFFFF:
            head = struct.pack("!BBH", b0, m | 126, n)
        else:
            head = struct.pack("!BBQ", b0, m | 127, n)
        if not mask:
            return head + payload
        key = mask_key or os.urandom(4)
        masked = bytes(c ^ key[i % 4] for i, c in enumerate(payload)) if n < 4096 else \
            _xor_long(payload, key)
        return head + key + masked

    def send_raw(self, data, chunk=None):
        if chunk is None:
            self.sock.sendall(data)
            return
        for i in range(0, len(data), chunk):
            self.sock.sendall(data[i:i + chunk])

    def send(self, opcode, payload=b"", chunk=None, **kw):
        self.send_raw(self.frame(opcode, payload, **kw), chunk)

    def send_close(self, code=None, reason=b""):
        payload = b"" if code is None else struct.pack("!H", code) + reason
        self.send(CLOSE, payload)

    def recv_frame(self):
        """(fin, opcode, payload) of the server's next frame; checks it is
        unmasked and has no reserved bits."""
        b0, payload = self.recv_raw_frame()
        assert b0 & 0x70 == 0, "no extension was negotiated: RSV bits must be 0"
        return bool(b0 & 0x80), b0 & 0x0F, payload

    def recv_raw_frame(self):
        """(byte 0, payload) of the server's next frame, RSV bits allowed
        (permessage-deflate's RSV1: see inflated()); checks it is unmasked."""
        b0, b1 = self._take(2)
        assert b1 & 0x80 == 0, "server frames must not be masked"
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self._take(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._take(8))[0]
        return b0, self._take(n)

    def recv_message(self):
        """(opcode, payload) of the next data message or control frame."""
        fin, op, payload = self.recv_frame()
        while not fin:
            fin, cont, more = self.recv_frame()
            assert cont == CONT
            payload += more
        return op, payload

    def recv_json(self):
        op, payload = self.recv_message()
        assert op == TEXT, (op, payload[:100])
        return json.loads(payload)

    def expect_close(self, code=None):
        """Reads until the server's close frame; returns its code (None when
        empty). Data frames before it are skipped."""
        while True:
            op, payload = self.recv_message()
            if op == CLOSE:
                got = struct.unpack("!H", payload[:2])[0] if payload else None
                if code is not None:
                    assert got == code, "close code %r, expected %r" % (got, code)
                return got

    def expect_eof(self, timeout=5):
        """True once the server closed TCP (after any remaining bytes)."""
        self.sock.settimeout(timeout)
        try:
            while True:
                self._fill()
                self.buf = b""
        except Closed:
            return True
        except ConnectionResetError:
            return True

    def close(self):
        self.sock.close()


def deflated(payload):
    """A permessage-deflate payload (RFC 7692 7.2.1) without context: raw
    DEFLATE, sync-flushed, its 00 00 ff ff cut off. Send it with rsv=4."""
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    data = c.compress(payload) + c.flush(zlib.Z_SYNC_FLUSH)
    assert data.endswith(b"\x00\x00\xff\xff")
    return data[:-4]


def inflated(payload):
    """The inverse of deflated() (no final block: not zlib.decompress)."""
    return zlib.decompressobj(-15).decompress(payload + b"\x00\x00\xff\xff")


def _xor_long(payload, key):
    k = (key * (len(payload) // 4 + 1))[:len(payload)]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(k, "big")).to_bytes(len(payload), "big")
