#!/usr/bin/python3
"""tools/reconnect-storm/chat_tokens.py in quick mode against the real
heartwheel-chat: 200 clients with HS256 tokens over two server processes on
one redis-server (both started and stopped by the tool), from two source
addresses; every server killed and started again. Checks the split (client i
on server i % 2), that every client came back to its own server, the
counters added over the servers, and that too few servers for `ulimit -n`
is a usage error naming the flag to add. About 10 s.

Usage: reconnect_storm_chat_test.py PATH/TO/heartwheel-chat [test ...]
"""
import json
import os
import resource
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from chat_support import run_tests  # noqa: E402

TOOL = os.path.join(HERE, "..", "..", "tools", "reconnect-storm", "chat_tokens.py")
WATCHDOG_SECONDS = 110


def run_tool(*flags, timeout=100):
    return subprocess.run([sys.executable, TOOL, "--chat", globals()["SERVER_BINARY"], *flags],
                          capture_output=True, text=True, timeout=timeout)


def test_two_servers_every_client_back_and_counted_per_server():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "storm.json")
        r = run_tool("--clients", "200", "--servers", "2", "--source-ips", "2",
                     "--connect-rate", "1000", "--down", "0.5", "--after-restart", "60",
                     "--json", out)
        assert r.returncode == 0, r.stderr
        with open(out) as f:
            res = json.load(f)
    assert res["servers"] == 2 and res["redis"] is True and res["source_ips"] == 2, res
    assert res["storm_connects"] == 200, res
    each = res["per_server"]
    assert [s["clients"] for s in each] == [100, 100], each
    assert [s["storm_connects"] for s in each] == [100, 100], each
    assert len({s["port"] for s in each}) == 2, each
    # Each restarted server accepted its own clients (a failed handshake
    # would be counted too, so at least), and nothing was an error.
    for s in each:
        assert s["server_after"]["connections_accepted"] >= 100, s
        assert s["server_after"]["chat_errors"] == {}, s
        assert s["all_back_after_start_s"] is not None and s["server_cpu_s_storm"] >= 0, s
    total = res["server_after"]["connections_accepted"]
    assert total == sum(s["server_after"]["connections_accepted"] for s in each), res
    assert res["all_back_after_start_s"] is not None and res["all_back_after_start_s"] < 60, res
    assert "redis_cpu_us_per_connect" in res and res["client_rss_bytes_per_client"] > 0, res
    # Both servers were stopped: no process of theirs is left. Asked of
    # /proc, not by a connect to their ports: a port is free once they are
    # gone, and a parallel test's listener may take it at once.
    for s in each:
        assert not processes_listening_on(s["port"]), s


def processes_listening_on(port):
    """PIDs of the heartwheel-chat processes started with --listen
    127.0.0.1:`port` (what the tool passes its servers)."""
    want = [os.fsencode(globals()["SERVER_BINARY"]), b"--listen", b"127.0.0.1:%d" % port]
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue  # gone meanwhile
        if argv[:3] == want:
            found.append(int(pid))
    return found


def test_too_few_servers_is_a_usage_error_naming_the_flag():
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    per_server = limit - 500  # what the tool allows one process
    clients = 3 * per_server + 1
    r = run_tool("--clients", str(clients), "--servers", "1", timeout=30)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "--servers 4" in r.stderr, r.stderr
    assert "made" not in r.stderr, r.stderr  # refused before any token was made


if __name__ == "__main__":
    run_tests(globals(), sys.argv)
