#!/usr/bin/env python3
"""Issue 23's attacks on build/bin/heartwheel-push's HTTP API, rerun against
the real program (with a redis-server of the test's own) and now refused or
bounded: a body nested 80,000 deep is a 400 and the process lives.

Usage: push_limits_test.py PATH/TO/heartwheel-push [test ...]
Every server binds port 0; every process started is stopped by PID; a
watchdog ends a hung test. Bounds have slack for a loaded 2-core machine.
"""
import sys

from chat_support import Server, run_tests
from push_support import Redis, http, publish

SERVER_BINARY = None  # set by run_tests


def node(redis, *flags):
    return Server(SERVER_BINARY, "--redis", redis.address(), "--tick", "5ms", *flags)


def test_80000_deep_body_is_refused_and_the_process_lives():
    with Redis() as r, node(r, "--max-message-size", "1048576") as s:
        deep = '{"channel":"c","data":' + "[" * 80000 + "]" * 80000 + "}"
        status, _, body = http(s.port, "POST", "/publish", deep.encode())
        assert status == 400 and body["error"]["code"] == "too_deep", (status, body)
        ok = '{"channel":"c","data":' + "[" * 63 + "]" * 63 + "}"
        status, _, body = http(s.port, "POST", "/publish", ok.encode())
        assert status == 202, (status, body)
        assert s.proc.poll() is None, "the server died"
        assert publish(s.port, "c", "still here")[0] == 202


if __name__ == "__main__":
    run_tests(globals(), sys.argv)
