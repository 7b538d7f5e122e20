"""Operating heartwheel-chat (issue 39): the config file, the JSON log,
/healthz and /readyz, and the restart on SIGUSR2 that refuses no one.

Each test starts its own heartwheel-chat (and redis-server) on free loopback
ports and stops them by PID; waits poll a condition with a time limit.

usage: operating_test.py PATH/TO/heartwheel-chat [test ...]
(under /usr/bin/python3: python3-websockets)"""
import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                                "pylib"))
from chat_support import run_tests  # noqa: E402
from redis_server import RedisServer  # noqa: E402
from restart_clients import Chat as ChatProcess, eventually, run_restart, write  # noqa: E402

import websockets  # noqa: E402

SERVER_BINARY = None  # set by run_tests
WATCHDOG_SECONDS = 110


def Chat(*flags):
    return ChatProcess(SERVER_BINARY, *flags)


def print_config(*flags):
    r = subprocess.run([SERVER_BINARY, *flags, "--print-config"], capture_output=True, text=True,
                       timeout=20)
    assert r.returncode == 0, (r.returncode, r.stderr)
    return r.stdout


def test_config_file_flags_override_it_and_print_config_round_trips():
    with tempfile.TemporaryDirectory() as d:
        conf = os.path.join(d, "chat.toml")
        write(conf, "# a comment\nlisten = \"127.0.0.1:7111\"\nworkers = 2\n"
                    "history-size = 7\nno-join-leave = true\n"
                    "allowed-origin = [\"https://a.example\", \"https://b.example\"]\n")
        text = print_config("--config", conf, "--workers", "3")
        keys = dict(l.split(" = ", 1) for l in text.splitlines() if " = " in l)
        assert keys["listen"] == "'127.0.0.1:7111'", text  # from the file
        assert keys["workers"] == "3", text  # the flag wins
        assert keys["history-size"] == "7", text
        assert keys["no-join-leave"] == "true", text
        assert keys["allowed-origin"] == "['https://a.example', 'https://b.example']", text
        assert "drain-timeout" in keys, text  # a default is printed too
        assert "config" not in keys and "print-config" not in keys, text
        # Fed back, it gives the same configuration, byte for byte.
        again = os.path.join(d, "again.toml")
        write(again, text)
        assert print_config("--config", again) == text


def test_an_unknown_key_is_a_usage_error_naming_the_key_and_its_line():
    with tempfile.TemporaryDirectory() as d:
        conf = os.path.join(d, "chat.toml")
        write(conf, "listen = \"127.0.0.1:0\"\n\nworkrs = 2\n")
        r = subprocess.run([SERVER_BINARY, "--config", conf], capture_output=True, text=True,
                           timeout=20)
        assert r.returncode == 2, (r.returncode, r.stderr)
        assert ("heartwheel-chat: error: %s:3: unknown key 'workrs'" % conf) in r.stderr, r.stderr
        assert r.stdout == "", r.stdout  # nothing started


def test_json_log_lines_are_one_object_each():
    with Chat("--log-format", "json", "--redis-prefix", "x:") as c:
        c.proc.send_signal(signal.SIGTERM)
        assert c.proc.wait(timeout=20) == 0
        time.sleep(0)  # the reader threads drain the pipes at EOF
        eventually(lambda: c.stderr_has("stopped after"), 10, "the last line")
        objs = [json.loads(l) for l in c.err]  # every line parses
        for o in objs:
            assert set(o) >= {"time", "level", "program", "msg"}, o
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", o["time"]), o
            assert o["program"] == "heartwheel-chat", o
        levels = {o["msg"].split(":")[0]: o["level"] for o in objs}
        assert levels["--redis-prefix is deprecated"] == "warning", objs
        assert any(o["msg"] == "signal 15, draining (up to 10s)" and o["level"] == "info"
                   for o in objs), objs
        stopped = [o for o in objs if o["msg"].startswith("stopped after")]
        assert stopped and stopped[0]["connections"] == 0, objs


def test_log_level_warning_drops_info_lines():
    with Chat("--log-level", "warning") as c:
        c.proc.send_signal(signal.SIGTERM)
        assert c.proc.wait(timeout=20) == 0
        time.sleep(0.2)
        assert not c.stderr_has("draining"), c.err


def test_healthz_and_readyz_follow_redis_and_the_drain():
    with RedisServer() as r, Chat("--redis", r.address(), "--metrics-listen", "127.0.0.1:0",
                                  "--drain-timeout", "20s") as c:
        assert c.get("/healthz") == (200, "ok\n")
        eventually(lambda: c.get("/readyz") == (200, "ready\n"), 20, "ready")
        r.kill()
        eventually(lambda: c.get("/readyz") == (503, "not ready: redis unreachable\n"), 30,
                   "not ready while Redis is down")
        assert c.get("/healthz") == (200, "ok\n")  # alive all the same
        r.restart()
        eventually(lambda: c.get("/readyz") == (200, "ready\n"), 30, "ready again")
        # A client that never answers the close keeps the drain going.
        sock = socket.create_connection(("127.0.0.1", c.port))
        sock.sendall(b"GET /ws?name=x HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                     b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                     b"Sec-WebSocket-Version: 13\r\n\r\n")
        assert b" 101 " in sock.recv(4096)
        c.proc.send_signal(signal.SIGTERM)
        eventually(lambda: c.get("/readyz") == (503, "not ready: draining\n"), 20, "draining")
        assert c.get("/healthz") == (200, "ok\n")
        sock.close()
        assert c.proc.wait(timeout=30) == 0


def test_usr2_replaces_the_process_and_drops_no_one():
    subs, acked, counts, sent = run_restart(SERVER_BINARY, clients=300, drain="4s")
    acked = acked["room0"]
    assert counts["refused"] == 0 and counts["failed"] == 0, counts
    assert counts["ok"] > 20, counts
    closes = sorted(t for s in subs for t, code in s.closes)
    codes = {code for s in subs for t, code in s.closes}
    assert all(len(s.closes) == 1 for s in subs), [len(s.closes) for s in subs]
    assert codes == {1012}, codes
    assert sum(s.refused for s in subs) == 0
    assert sum(s.connect_errors for s in subs) == 0
    # Every client recovered, and saw every acknowledged publication once,
    # in order, with no gap.
    assert all(s.recovered == [True] for s in subs), [s.recovered for s in subs][:5]
    first = min(acked)
    for s in subs:
        seen = [o for o in s.offsets if o >= first]
        assert seen == list(range(first, seen[-1] + 1)), (s.name, seen[:20])
        assert seen[-1] >= max(acked), (s.name, seen[-1], max(acked))
    # Spread over the drain window (0.8 x 4 s), not in one storm: the middle
    # 80% of the closes took more than a second.
    p10, p90 = closes[len(closes) // 10], closes[len(closes) * 9 // 10]
    assert p90 - p10 > 1.0, (p10 - sent, p90 - sent)


def test_a_successor_that_cannot_start_leaves_the_old_process_serving():
    with tempfile.TemporaryDirectory() as d:
        conf = os.path.join(d, "chat.toml")
        pidfile = os.path.join(d, "chat.pid")
        write(conf, "workers = 1\npid-file = \"%s\"\n" % pidfile)
        with Chat("--config", conf, "--metrics-listen", "127.0.0.1:0") as c:
            write(conf, "workers = 1\nbogus = 1\n")  # the successor will refuse it
            os.kill(c.proc.pid, signal.SIGUSR2)
            eventually(lambda: c.stderr_has("restart: the successor exited with status 2; "
                                            "still serving"), 30, "the refusal")
            assert c.stderr_has("unknown key 'bogus'"), c.err  # the successor's own words
            assert c.proc.poll() is None
            assert int(open(pidfile).read()) == c.proc.pid
            assert c.get("/readyz") == (200, "ready\n")

            async def still_serving():
                async with websockets.connect("ws://127.0.0.1:%d/echo" % c.port) as ws:
                    await ws.send("hi")
                    assert await ws.recv() == "hi"
            asyncio.run(still_serving())


def test_the_successor_tells_systemd_its_pid_over_notify_socket():
    """What the units rely on (Type=notify, NotifyAccess=all), checked against
    a stand-in for systemd's socket: no systemd runs as PID 1 here, so
    systemd's side of the handover (accepting MAINPID= from the successor,
    not taking the old process's exit for the service's) is not tested."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "notify")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(path)
        sock.settimeout(30)
        pidfile = os.path.join(d, "chat.pid")
        os.environ["NOTIFY_SOCKET"] = path
        try:
            c = Chat("--workers", "1", "--drain-timeout", "1s", "--pid-file", pidfile)
        finally:
            del os.environ["NOTIFY_SOCKET"]
        with c:
            assert sock.recv(4096).decode() == "MAINPID=%d\nREADY=1" % c.proc.pid
            os.kill(c.proc.pid, signal.SIGUSR2)
            msg = sock.recv(4096).decode()
            new = int(open(pidfile).read())
            c.others.append(new)
            assert new != c.proc.pid
            assert msg == "MAINPID=%d\nREADY=1" % new, msg  # before the old one drains
            assert c.proc.wait(timeout=30) == 0
        sock.close()


if __name__ == "__main__":
    run_tests(globals(), sys.argv)
