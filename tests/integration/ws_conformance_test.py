#!/usr/bin/env python3
"""WebSocket conformance over real sockets, derived from the Autobahn|Testsuite
case list: a representative set of each section (1 framing, 2 pings, 3
reserved bits, 4 opcodes, 5 fragmentation, 6 UTF-8, 7 close handling, 9
limits, scaled down), plus the opening handshake, run with a raw-socket
client against heartwheel-chat's /echo endpoint (Autobahn's fuzzing client
expects an echo server). Case numbers in comments are Autobahn's.

Usage: ws_conformance_test.py PATH/TO/heartwheel-chat [test ...]
The sans-I/O versions of the whole case list are tests/unit/ws_autobahn_*.
"""
import struct
import sys

from chat_support import (BINARY, CLOSE, CONT, PING, PONG, TEXT, RawClient, Server,
                          run_tests)

SERVER_BINARY = None  # set by run_tests
MAX_MESSAGE = 256 * 1024


def server():
    return Server(SERVER_BINARY, "--max-message-size", str(MAX_MESSAGE), "--ping-interval", "0")


def echo_ok(c, opcode, payload, **kw):
    c.send(opcode, payload, **kw)
    op, got = c.recv_message()
    assert (op, got) == (opcode, payload if isinstance(payload, bytes) else payload.encode()), \
        (op, len(got))


def closes_with(c, code):
    """The server fails the connection with `code` and closes TCP."""
    c.expect_close(code)
    assert c.expect_eof()


def test_handshake():
    with server() as s:
        c = RawClient(s.port, handshake=False)
        assert c.handshake("/echo") == 101
        assert c.headers["upgrade"].lower() == "websocket"
        assert c.headers["connection"].lower() == "upgrade"
        assert "sec-websocket-extensions" not in c.headers  # none negotiated
        echo_ok(c, TEXT, "after the handshake")
        for kw, status in [({"version": "8"}, 426), ({"key": "c2hvcnQ="}, 400),
                           ({"method": "POST"}, 405)]:
            c = RawClient(s.port, handshake=False)
            assert c.handshake("/echo", **kw) == status, kw
            if status == 426:
                assert c.headers["sec-websocket-version"] == "13"
            assert c.headers["connection"].lower() == "close"
            assert c.expect_eof()
        # Bytes sent with the handshake request are the session's first.
        c = RawClient(s.port, handshake=False)
        c.sock.sendall(b"GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                       b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                       b"Sec-WebSocket-Version: 13\r\n\r\n" + c.frame(TEXT, "early"))
        while b"\r\n\r\n" not in c.buf:
            c._fill()
        head, c.buf = c.buf.split(b"\r\n\r\n", 1)
        assert b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" in head
        assert c.recv_message() == (TEXT, b"early")


def test_framing():
    """1.1.x / 1.2.x: text and binary at every length encoding, sent whole
    and in pieces (split anywhere)."""
    with server() as s:
        c = RawClient(s.port)
        for n in (0, 125, 126, 127, 128, 65535, 65536, 200000):
            echo_ok(c, TEXT, "*" * n)
            echo_ok(c, BINARY, bytes(i % 251 for i in range(n)))
        echo_ok(c, TEXT, "x" * 300, chunk=1)         # 1.1.8-style: byte by byte
        echo_ok(c, BINARY, b"\xfe" * 70000, chunk=997)
        # A non-minimal length encoding is accepted (common servers do).
        payload = b"hello"
        head = struct.pack("!BBH", 0x81, 0x80 | 126, len(payload))
        key = b"\x01\x02\x03\x04"
        c.send_raw(head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload)))
        assert c.recv_message() == (TEXT, payload)
        c.send_close(1000)
        closes_with(c, 1000)


def test_unmasked_client_frame_fails_the_connection():
    with server() as s:
        c = RawClient(s.port)
        c.send(TEXT, "no mask", mask=False)
        closes_with(c, 1002)


def test_pings():
    """2.1-2.10: pongs echo the ping's payload; 126 bytes or fragmented is a
    protocol error; unsolicited pongs are ignored."""
    with server() as s:
        c = RawClient(s.port)
        c.send(PING, b"")                                  # 2.1
        assert c.recv_message() == (PONG, b"")
        c.send(PING, "Hello, world!")                      # 2.2
        assert c.recv_message() == (PONG, b"Hello, world!")
        c.send(PING, bytes([0, 255, 254, 253, 252, 251, 0, 255]))  # 2.3 binary payload
        assert c.recv_message() == (PONG, bytes([0, 255, 254, 253, 252, 251, 0, 255]))
        c.send(PING, b"*" * 125)                           # 2.4
        assert c.recv_message() == (PONG, b"*" * 125)
        c.send(PONG, b"unsolicited")                       # 2.7: ignored
        echo_ok(c, TEXT, "still here")
        for i in range(10):                                # 2.10: ten pings, ten pongs
            c.send(PING, "ping %d" % i)
        for i in range(10):
            assert c.recv_message() == (PONG, ("ping %d" % i).encode())
        c.send(PING, b"*" * 125, chunk=1)                  # 2.6: split into bytes
        assert c.recv_message() == (PONG, b"*" * 125)
        c.send(PING, b"*" * 126)                           # 2.5
        closes_with(c, 1002)
        c = RawClient(s.port)
        c.send(PING, b"frag", fin=False)                   # 5.1: a fragmented ping
        closes_with(c, 1002)


def test_reserved_bits():
    """3.1-3.7: a reserved bit without an extension fails the connection; a
    good message before it is still echoed."""
    with server() as s:
        for opcode, payload, rsv in [(TEXT, "Hello", 1), (TEXT, "Hello", 2), (TEXT, "Hello", 3),
                                     (BINARY, b"\x00\xff", 4), (PING, b"", 5), (CLOSE, b"", 7)]:
            c = RawClient(s.port)
            c.send(TEXT, "before")
            c.send(opcode, payload, rsv=rsv)
            c.send(PING, b"after")  # never answered
            assert c.recv_message() == (TEXT, b"before")
            closes_with(c, 1002)


def test_opcodes():
    """4.1.x / 4.2.x: reserved data (3-7) and control (0xB-0xF) opcodes fail
    the connection."""
    with server() as s:
        for opcode in (3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF):
            c = RawClient(s.port)
            echo_ok(c, TEXT, "fine")
            c.send(opcode, b"reserved")
            closes_with(c, 1002)


def test_fragmentation():
    """5.x: fragments join into one message, control frames may interleave,
    continuations must belong to a message."""
    with server() as s:
        c = RawClient(s.port)
        c.send(TEXT, "frag", fin=False)                    # 5.3
        c.send(CONT, "ment", fin=True)
        assert c.recv_message() == (TEXT, b"fragment")
        c.send(BINARY, b"a", fin=False)                    # 5.4-ish: many fragments
        for i in range(50):
            c.send(CONT, b"b", fin=False)
        c.send(CONT, b"c")
        assert c.recv_message() == (BINARY, b"a" + b"b" * 50 + b"c")
        c.send(TEXT, "frag", fin=False)                    # 5.6: a ping in between
        c.send(PING, "in between")
        c.send(CONT, "ment")
        assert c.recv_message() == (PONG, b"in between")
        assert c.recv_message() == (TEXT, b"fragment")
        c.send(TEXT, "", fin=False)                        # 5.18-ish: empty fragments
        c.send(CONT, "", fin=False)
        c.send(CONT, "")
        assert c.recv_message() == (TEXT, b"")
        # 5.9: a continuation with nothing to continue.
        c.send(CONT, "nothing to continue")
        closes_with(c, 1002)
        # 5.18: a new text frame while a fragmented message is open.
        c = RawClient(s.port)
        c.send(TEXT, "first", fin=False)
        c.send(TEXT, "second")
        closes_with(c, 1002)


def test_utf8():
    """6.x: valid text echoed whole or fragmented anywhere (even inside a code
    point); invalid text fails with 1007, at the first impossible byte."""
    with server() as s:
        c = RawClient(s.port)
        kosme = "κόσμε".encode()                            # 6.2
        echo_ok(c, TEXT, kosme)
        for cut in range(1, len(kosme)):                   # 6.2.3: split inside code points
            c.send(TEXT, kosme[:cut], fin=False)
            c.send(CONT, kosme[cut:])
            assert c.recv_message() == (TEXT, kosme)
        echo_ok(c, TEXT, "\U0010FFFF\u2028\ufeff".encode())  # 6.5-6.7 edges
        for bad in (b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80edited",  # 6.3 surrogate
                    b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\xff", b"\xe0\x80\xaf"):    # overlong, >U+10FFFF
            c2 = RawClient(s.port)
            c2.send(TEXT, bad)
            closes_with(c2, 1007)
        # 6.4.x: fail fast: the first fragment already holds the invalid byte;
        # the server closes before the rest of the message arrives.
        c2 = RawClient(s.port)
        c2.send(TEXT, b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xf4\x90\x80\x80", fin=False)
        closes_with(c2, 1007)
        # A message that ends inside a code point.
        c2 = RawClient(s.port)
        c2.send(TEXT, b"ok \xe2\x82")
        closes_with(c2, 1007)
        echo_ok(c, TEXT, "still fine")


def test_close_handling():
    """7.x: the close handshake, close codes and reasons."""
    with server() as s:
        c = RawClient(s.port)
        c.send_close(1000, b"bye")                          # 7.1.1
        closes_with(c, 1000)
        c = RawClient(s.port)
        c.send_close()                                      # 7.3.1: empty close, empty answer
        assert c.expect_close() is None
        assert c.expect_eof()
        c = RawClient(s.port)
        c.send_close(1000)
        c.send(TEXT, "after close")                         # 7.1.3: not echoed
        closes_with(c, 1000)
        for code in (1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 3999, 4000,
                     4999):                                 # 7.7.x: valid codes echoed
            c = RawClient(s.port)
            c.send_close(code)
            closes_with(c, code)
        for code in (0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535):  # 7.9.x
            c = RawClient(s.port)
            c.send_close(code)
            closes_with(c, 1002)
        c = RawClient(s.port)
        c.send(CLOSE, b"\x03")                              # 7.3.2: a one-byte payload
        closes_with(c, 1002)
        c = RawClient(s.port)
        c.send_close(1000, b"*" * 123)                      # 7.3.5: the longest reason
        closes_with(c, 1000)
        c = RawClient(s.port)
        c.send_close(1000, b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80")  # 7.5.1
        closes_with(c, 1007)
        c = RawClient(s.port)
        c.send(TEXT, "half", fin=False)                     # 7.1.6-ish: close mid-message
        c.send_close(1000)
        closes_with(c, 1000)
        st = s.read_stats(lambda st: st["ws"]["protocol_errors"] >= 12)
        assert st["ws"]["close_codes_received"]["4999"] >= 1
        assert st["ws"]["close_codes_sent"]["1002"] >= 12


def test_limits():
    """9.x, scaled down to --max-message-size: a message at the limit is
    echoed, one byte more (in one frame, or summed over fragments) closes
    with 1009 before its payload is read."""
    with server() as s:
        c = RawClient(s.port)
        echo_ok(c, BINARY, b"\x01" * MAX_MESSAGE)
        echo_ok(c, TEXT, "x" * MAX_MESSAGE, chunk=4096)
        half = MAX_MESSAGE // 2
        c.send(BINARY, b"a" * half, fin=False)
        c.send(CONT, b"b" * half)
        assert c.recv_message() == (BINARY, b"a" * half + b"b" * half)
        c.send_raw(c.frame(BINARY, b"\x02" * (MAX_MESSAGE + 1))[:14])  # the header alone
        closes_with(c, 1009)
        c = RawClient(s.port)
        c.send(TEXT, "a" * half, fin=False)
        c.send(CONT, "b" * (half + 1))
        closes_with(c, 1009)
        # Both in the wait: the net counters come from runtime::Workers' copy,
        # published on a timer of its own, apart from the worker's ws copy.
        st = s.read_stats(lambda st: st["ws"]["close_codes_sent"].get("1009", 0) >= 2 and
                          st["net"]["closed_by_reason"]["protocol_error"] >= 2)


if __name__ == "__main__":
    run_tests(globals(), sys.argv)
