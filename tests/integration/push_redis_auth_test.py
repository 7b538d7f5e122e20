#!/usr/bin/env python3
"""heartwheel-push's Redis link with credentials and TLS (issues 21 and 23),
against a redis-server of the test's own: with requirepass, with an ACL user
over mutual TLS, a publish on node A reaches an SSE reader on node B and a
delayed push is delivered; with a wrong password POST /publish answers 503,
the refusal is a clear line on stderr naming the address, counted in the
stats (auth_failures) and retried with backoff while the node stays up; the
password is never on the command line or in the log; a Redis certificate the
node cannot verify is one warning line, not one per retry.

Usage: push_redis_auth_test.py PATH/TO/heartwheel-push [test ...]
"""
import os
import sys
import time

from chat_support import Server, run_tests
from push_support import Sse, publish
from redis_link_support import (PASSWORD, WRONG, RedisServer, assert_not_shown,
                                check_refused_tls_is_one_warning, secret_file, tls_files,
                                tls_flags)

SERVER_BINARY = None  # set by run_tests


def node(redis, *flags):
    return Server(SERVER_BINARY, "--redis", redis.address(), "--tick", "5ms", *flags)


def cross_node_publish(a, b):
    sse = Sse(b.port, "x")
    sse.event()
    for i in range(5):
        assert publish(a.port, "x", i)[0] == 202
    assert publish(a.port, "x", 99, delay_ms=200)[0] == 202  # through the delayed queue
    got = sse.messages(6, timeout=10)
    assert sorted(e["data"]["data"] for e in got) == [0, 1, 2, 3, 4, 99], got


def test_requirepass_publish_crosses_two_nodes():
    pw = secret_file(PASSWORD)
    with RedisServer(password=PASSWORD) as r, node(r, "--redis-password-file", pw) as a, \
            node(r, "--redis-password-file", pw) as b:
        cross_node_publish(a, b)
        # Waited for: the file is rewritten every 100 ms, and one written
        # before b's link came up says connected 0.
        st = b.read_stats(lambda st: st["redis"]["connected"] >= 1)
        assert st["redis"]["auth_failures"] == 0, st["redis"]
        assert_not_shown(a, PASSWORD)
        assert_not_shown(b, PASSWORD)
    os.unlink(pw)


def test_acl_user_over_mutual_tls_publish_crosses_two_nodes():
    tls = tls_files()
    pw = secret_file(PASSWORD)
    flags = ("--redis-password-file", pw, "--redis-user", "push", *tls_flags(tls))
    with RedisServer(password=PASSWORD, user="push", tls=tls) as r, node(r, *flags) as a, \
            node(r, *flags) as b:
        cross_node_publish(a, b)
        assert "user=default" not in r.command("CLIENT", "LIST")
        assert_not_shown(a, PASSWORD)
        assert_not_shown(b, PASSWORD)
    os.unlink(pw)


def test_wrong_password_503_logged_counted_and_the_node_stays_up():
    bad = secret_file(WRONG)
    with RedisServer(password=PASSWORD) as r, \
            node(r, "--redis-password-file", bad, "--redis-timeout", "300ms") as a:
        st = a.read_stats(lambda st: st["redis"]["auth_failures"] >= 2)
        first = st["redis"]["auth_failures"] + st["pubsub"]["redis"]["link"]["auth_failures"]
        t0 = time.monotonic()
        status = publish(a.port, "x", 1)[0]
        assert status == 503, status
        time.sleep(1.5)
        st = a.read_stats()
        later = st["redis"]["auth_failures"] + st["pubsub"]["redis"]["link"]["auth_failures"]
        # Three links (the node's client, the broker's client and subscriber),
        # backoff 100 ms doubling to 5 s: a few tries a second at most.
        assert later - first <= 3 * (3 + time.monotonic() - t0), (first, later)
        assert a.proc.poll() is None
        err = assert_not_shown(a, WRONG)
        assert ("heartwheel-push: warning: redis: AUTH refused by %s for the default user: WRONGPASS"
                % r.address()) in err, err
    os.unlink(bad)


def test_refused_tls_handshake_is_one_warning_not_one_per_retry():
    def refused(node):
        assert publish(node.port, "x", 1)[0] == 503
    check_refused_tls_is_one_warning(
        "heartwheel-push",
        lambda redis, *flags: Server(SERVER_BINARY, "--redis", redis, "--tick", "5ms", *flags),
        refused)


if __name__ == "__main__":
    run_tests(globals(), sys.argv)
