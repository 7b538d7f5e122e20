#!/usr/bin/env python3
# Writes the seed corpora of tests/fuzz/*/corpus/: small real inputs, each
# prefixed by the plan byte (and, for HTTP, the options byte) described in
# tests/fuzz/common/fuzz_input.h. Run it after changing a seed here; the
# files it writes are committed. New targets may add their seeds the same way
# or commit files written by hand. Usage: /usr/bin/python3 tests/fuzz/make_seeds.py
import os, struct
root = os.path.dirname(os.path.abspath(__file__))
def write(target, name, data):
    d = os.path.join(root, target, "corpus")
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, name), "wb").write(data)

# ---- HTTP: plan byte, options byte, request bytes
def h(name, plan, opts, text):
    write("fuzz_http_session", name, bytes([plan, opts]) + text.encode("latin-1"))
WHOLE, BYTES = 0x00, 0x01
def fixed(n): return 0x02 | ((n - 1) << 2)
RANDOM = 0x03 | (0x5 << 4) | (2 << 2)
PIPE32 = 0x03
h("get", WHOLE, PIPE32, "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
h("get-bytes", BYTES, PIPE32, "GET /index.html?q=1&r=2 HTTP/1.1\r\nHost: x\r\nUser-Agent: curl/7.88\r\nAccept: */*\r\n\r\n")
h("pipelined", fixed(7), 0x01, "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /async HTTP/1.1\r\nHost: x\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\nGET /async HTTP/1.1\r\n\r\n")
h("post-length", fixed(5), PIPE32, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\nhello world")
h("post-chunked", RANDOM, PIPE32, "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer-Field: v\r\n\r\n")
h("expect-continue", WHOLE, PIPE32, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nxyz")
h("expect-bad", WHOLE, PIPE32, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: something-else\r\n\r\nxyz")
h("upgrade-websocket", fixed(16), PIPE32, "GET /chat HTTP/1.1\r\nHost: server.example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: http://example.com\r\nSec-WebSocket-Protocol: chat, superchat\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58")
h("upgrade-h2c", WHOLE, PIPE32, "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")
h("h2-preface", WHOLE, PIPE32, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
h("http10-keepalive", WHOLE, PIPE32, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /stream HTTP/1.0\r\n\r\n")
h("stream", fixed(3), PIPE32 | 0x40, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\nGET /stream-drop HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\n\r\n")
h("throw-drop", WHOLE, PIPE32, "GET /throw HTTP/1.1\r\n\r\nGET /drop HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n")
h("head", WHOLE, PIPE32, "HEAD /stream HTTP/1.1\r\nHost: x\r\n\r\nHEAD / HTTP/1.1\r\n\r\n")
h("connect", WHOLE, PIPE32, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
h("options-star", WHOLE, PIPE32, "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\nGET http://example.com/abs?x=1 HTTP/1.1\r\nHost: example.com\r\n\r\n")
h("connection-close", WHOLE, PIPE32 | 0x10, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /never HTTP/1.1\r\n\r\n")
h("smuggle-cl-te", WHOLE, PIPE32, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /x HTTP/1.1\r\n\r\n")
h("double-cl", WHOLE, PIPE32, "POST /echo HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab")
h("small-limits", fixed(9), 0x04 | 0x02, "GET /" + "a" * 300 + " HTTP/1.1\r\nHost: x\r\n\r\nPOST /echo HTTP/1.1\r\nContent-Length: 100\r\n\r\n" + "b" * 100)
h("big-header", RANDOM, 0x04, "GET / HTTP/1.1\r\nHost: x\r\nCookie: " + "c" * 400 + "\r\n\r\n")
h("stalled-reader", WHOLE, 0x08 | 0xC0, "GET /stream HTTP/1.1\r\n\r\nGET /echo HTTP/1.1\r\n\r\n")
h("drain", fixed(20), 0x20 | 0x03, "GET /async HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n")
h("slow-timeouts", BYTES, 0xC0, "GET / HTTP/1.1\r\nHost: x\r\n")
h("eof-mid-body", WHOLE, 0x10, "POST /echo HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc")
h("garbage", WHOLE, 0x00, "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03")
h("lf-only", WHOLE, PIPE32, "GET / HTTP/1.1\nHost: x\n\n")
h("chunk-overflow", WHOLE, PIPE32, "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nx\r\n")
h("obs-fold", WHOLE, PIPE32, "GET / HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n  b\r\n\r\n")

# ---- RPC: plan byte + frames (length:u32be | type | id:u64be | payload)
def frame(t, i, p=b""): return struct.pack(">IBQ", 9 + len(p), t, i) + p
def r(name, plan, data): write("fuzz_rpc_frame", name, bytes([plan]) + data)
r("request", WHOLE, frame(1, 1, b"hello"))
r("all-types", fixed(6), frame(1, 7, b"req") + frame(2, 7, b"resp") + frame(3, 1, struct.pack(">Q", 123456789)) + frame(4, 1, struct.pack(">Q", 123456789)) + frame(5, 8, b"no such method"))
r("split-bytes", BYTES, frame(1, 2**64 - 1, b"x" * 40) + frame(3, 0, b"\0" * 8))
r("random-split", RANDOM, b"".join(frame(1 + k % 5, k, bytes(range(k))) for k in range(20)))
r("max-frame", fixed(64), frame(2, 3, b"m" * (4096 - 9)))
r("too-large", WHOLE, struct.pack(">I", 4097) + b"\x01")
r("bad-type", fixed(3), frame(1, 1) + frame(9, 1))
r("short-length", WHOLE, struct.pack(">I", 8) + b"\x01" + b"\0" * 8)
r("partial", fixed(2), frame(1, 5, b"abc") + frame(1, 6, b"defgh")[:7])

# ---- Redis: plan byte + RESP2 replies, as Redis sends them
def resp(v):
    if v is None: return b"$-1\r\n"
    if isinstance(v, int): return b":%d\r\n" % v
    if isinstance(v, bytes): return b"$%d\r\n%s\r\n" % (len(v), v)
    if isinstance(v, list): return b"*%d\r\n" % len(v) + b"".join(resp(e) for e in v)
    kind, text = v  # ("+", b"OK") / ("-", b"ERR ...")
    return kind.encode() + text + b"\r\n"
def rr(name, plan, *replies): write("fuzz_redis_reply", name, bytes([plan]) + b"".join(resp(x) for x in replies))
rr("simple", WHOLE, ("+", b"OK"), ("+", b"PONG"), 42, -7, b"value", None, b"")
rr("errors", fixed(4), ("-", b"ERR unknown command 'FOO'"), ("-", b"NOSCRIPT No matching script. Please use EVAL."), ("-", b"WRONGTYPE Operation against a key holding the wrong kind of value"))
rr("pubsub", BYTES, [b"subscribe", b"news", 1], [b"psubscribe", b"user:*", 2], [b"message", b"news", b"hello"], [b"pmessage", b"user:*", b"user:42", b"hi"], [b"pong", b""], [b"unsubscribe", b"news", 1])
rr("xrange", RANDOM, [[b"1700000000000-0", [b"data", b"m0", b"info", b""]], [b"1700000000000-1", [b"data", b"\x00\r\n\xff"]]])
rr("xread", fixed(9), [[b"history:chat", [[b"1-1", [b"data", b"x"]]]]], None)
rr("nested", fixed(2), [[[[[[[1]]]]]]], [], [None, [], [b""]])
rr("binary-bulk", RANDOM, bytes(range(256)), b"\r\n" * 20)
rr("near-limit", fixed(64), b"L" * 4000, b"M" * 4096)
write("fuzz_redis_reply", "too-large", bytes([fixed(33)]) + b"$100000\r\n" + b"z" * 5000)
write("fuzz_redis_reply", "bad-type", bytes([WHOLE]) + b"+OK\r\n!oops\r\n")
write("fuzz_redis_reply", "odd-numbers", bytes([BYTES]) + b":12a\r\n$-5\r\n*-3\r\n$3x\r\nabc\r\n:+5\r\n")
write("fuzz_redis_reply", "deep", bytes([WHOLE]) + b"*1\r\n" * 9 + b":1\r\n")

# ---- PROXY: plan byte + header + application bytes
SIG = bytes.fromhex("0d0a0d0a000d0a515549540a")
def crc32c(b):
    crc = 0xFFFFFFFF
    for c in b:
        crc ^= c
        for _ in range(8): crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF
def tlv(t, v): return bytes([t]) + struct.pack(">H", len(v)) + v
def v2(vc, fam, block, crc=False):
    if crc: block += tlv(3, b"\0\0\0\0")
    hdr = SIG + bytes([vc, fam]) + struct.pack(">H", len(block)) + block
    if crc: hdr = hdr[:-4] + struct.pack(">I", crc32c(hdr))
    return hdr
a4 = bytes([192, 0, 2, 1, 198, 51, 100, 7]) + struct.pack(">HH", 56324, 443)
a6 = bytes(15) + b"\x01" + bytes(15) + b"\x02" + struct.pack(">HH", 1, 2)
un = b"/run/client.sock".ljust(108, b"\0") + b"\0abstract".ljust(108, b"\0")
app = b"GET / HTTP/1.1\r\n\r\n"
def p(name, plan, data): write("fuzz_proxy_protocol", name, bytes([plan]) + data)
p("v1-haproxy", WHOLE, b"PROXY TCP4 127.0.0.1 127.0.0.1 55960 18082\r\n" + app)
p("v1-tcp6", BYTES, b"PROXY TCP6 2001:db8::1 ::ffff:192.0.2.1 65535 0\r\n" + app)
p("v1-unknown", fixed(4), b"PROXY UNKNOWN\r\n" + app)
p("v1-unknown-long", RANDOM, b"PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n")
p("v2-haproxy-crc", fixed(5), bytes.fromhex("0d0a0d0a000d0a515549540a211100447f0000017f000001a780a639030004dcaf5fa005002e37463030303030313a413738305f37463030303030313a413633395f36423034353841375f303030303a33323431") + b"hello")
p("v2-local", WHOLE, bytes.fromhex("0d0a0d0a000d0a515549540a20000007030004a9b87e8f"))
p("v2-tcp4", BYTES, v2(0x21, 0x11, a4) + app)
p("v2-udp6", WHOLE, v2(0x21, 0x22, a6))
p("v2-unix", fixed(33), v2(0x21, 0x31, un))
ssl = bytes([7]) + struct.pack(">I", 0) + tlv(0x21, b"TLSv1.3") + tlv(0x22, b"client.example") + tlv(0x23, b"TLS_AES_128_GCM_SHA256") + tlv(0x24, b"SHA256") + tlv(0x25, b"RSA2048")
p("v2-all-tlvs", RANDOM, v2(0x21, 0x11, a4 + tlv(1, b"h2") + tlv(2, b"example.com") + tlv(4, b"pad") + tlv(5, b"u" * 128) + tlv(0x20, ssl) + tlv(0x30, b"blue") + tlv(0xE0, b"\0\1\2"), crc=True) + app)
p("v2-unspec-tlv", WHOLE, v2(0x21, 0x00, tlv(2, b"example.com"), crc=True))
p("v2-max", fixed(64), v2(0x21, 0x11, a4 + tlv(4, b"n" * (536 - 16 - 12 - 3))))
p("v2-bad-crc", WHOLE, v2(0x21, 0x21, a6 + tlv(5, b"id"), crc=True)[:-1] + b"\0")
p("v2-truncated-tlv", WHOLE, v2(0x21, 0x11, a4 + b"\x04\x00"))
p("not-proxy", WHOLE, app)

# ---- WebSocket frames: plan byte, options byte (fuzz_ws_frame.cpp), frames
SERVER, CLIENT = 0x00, 0x01
def opts(role, rsv=0, max_shift=4, echo=False): return role | (rsv << 1) | (max_shift << 4) | (0x80 if echo else 0)
def wsframe(op, payload=b"", fin=True, rsv=0, mask=b"\x37\xfa\x21\x3d", length_form=None):
    b0 = (0x80 if fin else 0) | (rsv << 4) | op
    n = len(payload)
    m = 0x80 if mask else 0
    form = length_form or (7 if n < 126 else 16 if n <= 0xFFFF else 64)
    if form == 7: head = struct.pack("!BB", b0, m | n)
    elif form == 16: head = struct.pack("!BBH", b0, m | 126, n)
    else: head = struct.pack("!BBQ", b0, m | 127, n)
    if not mask: return head + payload
    return head + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload))
def w(name, plan, options, *frames): write("fuzz_ws_frame", name, bytes([plan, options]) + b"".join(frames))
w("text-hello", WHOLE, opts(SERVER, echo=True), wsframe(0x1, b"Hello"))  # RFC 6455 5.7
w("fragmented-text", BYTES, opts(SERVER), wsframe(0x1, b"Hel", fin=False), wsframe(0x9, b"ping in between"), wsframe(0x0, b"lo"))
w("binary-16bit", fixed(5), opts(SERVER, max_shift=5), wsframe(0x2, bytes(range(256))))
w("long-form-64", WHOLE, opts(SERVER), wsframe(0x2, b"abc", length_form=64))
w("ping-pong-close", RANDOM, opts(SERVER, echo=True), wsframe(0x9, b"hb"), wsframe(0xA, b"hb"), wsframe(0x8, struct.pack("!H", 1000) + b"bye"))
w("close-4321", WHOLE, opts(SERVER), wsframe(0x8, struct.pack("!H", 4321) + "á".encode()))
w("close-bad-code", WHOLE, opts(SERVER), wsframe(0x8, struct.pack("!H", 1005)))
w("close-one-byte", WHOLE, opts(SERVER), wsframe(0x8, b"\x03"))
w("unmasked-to-server", WHOLE, opts(SERVER), wsframe(0x1, b"no mask", mask=None))
w("client-role", fixed(3), opts(CLIENT, echo=True), wsframe(0x1, b"from server", mask=None), wsframe(0x9, b"", mask=None))
w("rsv-allowed", WHOLE, opts(SERVER, rsv=4), wsframe(0x1, b"compressed?", rsv=4), wsframe(0x1, b"rsv2", rsv=2))
w("reserved-opcode", WHOLE, opts(SERVER), wsframe(0x3), wsframe(0xB))
w("big-control", WHOLE, opts(SERVER), wsframe(0x9, b"p" * 126))
w("fragmented-control", WHOLE, opts(SERVER), wsframe(0x9, b"x", fin=False))
w("continuation-first", WHOLE, opts(SERVER), wsframe(0x0, b"orphan"))
w("new-message-mid-fragment", WHOLE, opts(SERVER), wsframe(0x1, b"a", fin=False), wsframe(0x1, b"b"))
w("top-bit-length", WHOLE, opts(SERVER), struct.pack("!BBQ", 0x82, 0xFF, 1 << 63) + b"\0" * 4)
w("too-big", fixed(2), opts(SERVER, max_shift=0), wsframe(0x2, b"x" * 17))
w("too-big-fragments", fixed(2), opts(SERVER, max_shift=0), wsframe(0x2, b"x" * 10, fin=False), wsframe(0x0, b"y" * 10))
w("bad-utf8-mid-frame", BYTES, opts(SERVER), wsframe(0x1, b"ok \xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5 \xed\xa0\x80 more"))
w("utf8-across-fragments", BYTES, opts(SERVER), wsframe(0x1, b"\xce", fin=False), wsframe(0x0, b"\xba"))
w("truncated", fixed(4), opts(SERVER), wsframe(0x1, b"cut short")[:-3])
# permessage-deflate: RSV1 allowed turns it on for the session (rsv=5: with context).
import zlib
def deflated(data, wbits=15, ctx=None):
    c = ctx or zlib.compressobj(6, zlib.DEFLATED, -wbits)
    return (c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH))[:-4]
DEFLATE, CONTEXT = 4, 5
doc = b'{"channel":"room","items":[' + b",".join(b'{"sku":"A%d","qty":%d}' % (i, i % 5) for i in range(40)) + b"]}"
w("deflate-text", WHOLE, opts(SERVER, rsv=DEFLATE, max_shift=7, echo=True), wsframe(0x1, deflated(doc), rsv=4))
z = deflated(doc)
w("deflate-fragmented", RANDOM, opts(SERVER, rsv=DEFLATE, max_shift=7, echo=True), wsframe(0x1, z[:20], fin=False, rsv=4), wsframe(0x9, b"between"), wsframe(0x0, z[20:60], fin=False), wsframe(0x0, z[60:]))
w("deflate-bomb", fixed(7), opts(SERVER, rsv=DEFLATE, max_shift=7), wsframe(0x2, deflated(b"\0" * 100000), rsv=4))
w("deflate-many", WHOLE, opts(SERVER, rsv=DEFLATE, max_shift=4, echo=True), *[wsframe(0x2, deflated(bytes([i]) * 200), rsv=4) for i in range(6)])
ctx = zlib.compressobj(6, zlib.DEFLATED, -9)
w("deflate-context", BYTES, opts(SERVER, rsv=CONTEXT, max_shift=7, echo=True), wsframe(0x1, deflated(doc, ctx=ctx), rsv=4), wsframe(0x1, deflated(doc, ctx=ctx), rsv=4))
w("deflate-client", fixed(3), opts(CLIENT, rsv=DEFLATE, max_shift=7, echo=True), wsframe(0x1, deflated(doc), rsv=4, mask=None))
w("deflate-bad-data", WHOLE, opts(SERVER, rsv=DEFLATE), wsframe(0x2, b"\xff\xff\x00", rsv=4))
w("deflate-bad-utf8", WHOLE, opts(SERVER, rsv=DEFLATE), wsframe(0x1, deflated(b"caf\xc3"), rsv=4))
w("deflate-rsv1-continuation", WHOLE, opts(SERVER, rsv=DEFLATE), wsframe(0x1, z[:10], fin=False, rsv=4), wsframe(0x0, z[10:], rsv=4))
w("deflate-rsv1-ping", WHOLE, opts(SERVER, rsv=DEFLATE), wsframe(0x9, b"x", rsv=4))

# ---- UTF-8: plan byte + bytes (Markus Kuhn's UTF-8 test file's kinds of cases)
def u(name, plan, data): write("fuzz_utf8", name, bytes([plan]) + data)
u("ascii", WHOLE, b"Hello, world! 0123456789 the quick brown fox" * 2)
u("mixed", BYTES, "κόσμε ünïcödé ≠ 𝄞 €".encode())
u("boundaries", fixed(3), "\u0080\u07ff\u0800\uffff\U00010000\U0010ffff\ud7ff\ue000".encode("utf-8", "surrogatepass"))
u("overlong", WHOLE, b"\xc0\xaf \xe0\x80\xaf \xf0\x80\x80\xaf")
u("surrogate", RANDOM, b"ok \xed\xa0\x80 \xed\xbf\xbf")
u("above-max", WHOLE, b"\xf4\x90\x80\x80")
u("bad-leads", BYTES, b"\x80\xbf\xc0\xc1\xf5\xf8\xfc\xfe\xff")
u("truncated", WHOLE, "abc€".encode()[:-1])
u("noncharacters", fixed(5), "\ufffe\uffff\ufdd0\U0001fffe".encode())
u("long-ascii-then-bad", fixed(64), b"a" * 300 + b"\xe2\x82" + b"b")

# ---- JWT (fuzz_jwt.cpp): mode byte (bit 0: 0 a whole token, 1 a claims payload the target signs)
import json as _json
_vectors = _json.load(open(os.path.join(root, "..", "unit", "auth_vectors.json")))
def j(name, mode, data): write("fuzz_jwt", name, bytes([mode]) + data)
for _name in ["hs256_valid", "es256_valid", "alg_none", "hs256_signed_with_rsa_public_pem",
              "hs256_crit_header", "sub_valid"]:
    _token = next(v["token"] for v in _vectors["vectors"] if v["name"] == _name)
    j("token-" + _name, 0, _token.encode())
j("claims-full", 1, _json.dumps({"sub": "alice", "exp": 1700003600, "iat": 1700000000,
    "info": {"name": "Alice \u00e9", "tags": ["a", {"b": [1, 2.5, None, True]}]},
    "channels": ["news", "dm:#alice,bob"]}).encode())
j("claims-times", 1, b'{"sub":"x","exp":1699999996.5,"nbf":1700000004,"iat":-1e300}')
j("claims-repeated", 1, b'{"sub":"a","aud":1,"aud":2,"sub":"b"}')
j("claims-wrong-types", 1, b'{"sub":7,"channels":["ok",["nested"]],"exp":"soon"}')
j("claims-deep-info", 1, b'{"info":' + b"[" * 70 + b"]" * 70 + b'}')
j("claims-escapes", 1, b'{"info":"\\u0000\\"\\\\\\/\\b\\f\\n\\r\\t\\ud83d\\ude00","sub":"\\u00e9"}')

# ---- TLS 1.3 records (fuzz_tls_records.cpp): plan byte, options byte (suite, buffer),
# directives kind:u8 len:u8 bytes (kind 0: an inner plaintext the target seals; 1: raw bytes)
def tr(name, plan, opts, *directives):
    out = bytes([plan, opts])
    for kind, data in directives:
        out += bytes([kind, len(data)]) + data
    write("fuzz_tls_records", name, out)
tr("data", WHOLE, 0x00, (0, b"hello\x17"), (0, b"world\x17"))
tr("data-bytes", BYTES, 0x01, (0, b"GET / HTTP/1.1\r\n\r\n\x17"), (0, b"\x17"))
tr("padded", fixed(7), 0x02, (0, b"pad\x17" + b"\x00" * 40), (0, b"more\x17"))
tr("large-small-buffer", RANDOM, 0x00, (0x7c, b"x" * 254 + b"\x17"), (0, b"tail\x17"))
tr("key-update", fixed(3), 0x02, (0, b"one\x17"), (0, b"\x18\x00\x00\x01\x01\x16"), (0, b"two\x17"))
tr("key-update-split", WHOLE, 0x01, (0, b"\x18\x00\x16"), (0, b"\x00\x01\x00\x16"), (0, b"x\x17"))
tr("user-canceled-close", BYTES, 0x00, (0, b"\x01\x5a\x15"), (0, b"a\x17"), (0, b"\x01\x00\x15"), (0, b"late\x17"))
tr("fatal-alert", WHOLE, 0x00, (0, b"\x02\x28\x15"))
tr("outer-handshake", WHOLE, 0x00, (0x5a, b"x\x16"))
tr("raw-header", fixed(2), 0x00, (0, b"a\x17"), (1, b"\x17\x03\x03\x00\x11"), (1, b"\x00" * 17))
