#!/usr/bin/env python3
"""heartwheel-chat's Redis link with credentials and TLS (issues 21 and 23),
against a redis-server of the test's own: with requirepass, with an ACL user
and over mutual TLS a publication made on node A reaches a subscriber on
node B; a wrong password is a clear line on stderr naming the address,
counted in the link's auth_failures and retried with backoff while the node
stays up; the password is never on the command line or in the log; a bad
password file is a usage error.

Usage: chat_redis_auth_test.py PATH/TO/heartwheel-chat [test ...]
"""
import asyncio
import os
import subprocess
import time

from chat_support import Server, run_tests
from chat_server_test import Chat
from redis_link_support import (PASSWORD, WRONG, RedisServer, assert_not_shown,
                                check_refused_tls_is_one_warning, secret_file, tls_files,
                                tls_flags)

SERVER_BINARY = None  # set by run_tests


def node(redis, *flags):
    return Server(SERVER_BINARY, "--redis", redis.address(), "--pubsub-prefix", "t:", *flags)


def cross_node_publish(a, b, n=5):
    async def go():
        sub = await Chat.open(b, "bob")
        rep = await sub.request("subscribe", channel="room")
        assert rep["ok"], rep
        pub = await Chat.open(a, "alice")
        for i in range(1, n + 1):
            rep = await pub.request("publish", channel="room", data={"n": i})
            assert rep["ok"] and rep["offset"] == i, rep
        for i in range(1, n + 1):
            msg = await sub.publication()
            assert msg["data"] == {"n": i}, msg
        await sub.close()
        await pub.close()
    asyncio.run(go())


def link_stats(server, ready=lambda link: True):
    return server.read_stats(lambda st: ready(st["pubsub"]["redis"]["link"]))["pubsub"]["redis"][
        "link"]


def test_requirepass_publish_crosses_two_nodes():
    pw = secret_file(PASSWORD)
    with RedisServer(password=PASSWORD) as r, node(r, "--redis-password-file", pw) as a, \
            node(r, "--redis-password-file", pw, "--workers", "2") as b:
        cross_node_publish(a, b)
        assert link_stats(b)["auth_failures"] == 0
        err = assert_not_shown(a, PASSWORD)
        assert "warning" not in err, err  # mode 600: no warning
        assert_not_shown(b, PASSWORD)
    os.unlink(pw)


def test_acl_user_publish_crosses_two_nodes():
    pw = secret_file(PASSWORD)
    flags = ("--redis-password-file", pw, "--redis-user", "chat")
    with RedisServer(password=PASSWORD, user="chat") as r, node(r, *flags) as a, \
            node(r, *flags) as b:
        cross_node_publish(a, b)
        clients = r.command("CLIENT", "LIST")  # this one's own as chat too
        assert clients.count("user=chat") >= 5 and "user=default" not in clients, clients
        assert_not_shown(a, PASSWORD)
        assert_not_shown(b, PASSWORD)
    os.unlink(pw)


def test_wrong_password_is_logged_counted_and_retried_with_backoff():
    bad = secret_file(WRONG)
    with RedisServer(password=PASSWORD, user="chat") as r, \
            node(r, "--redis-password-file", bad, "--redis-user", "chat",
                 "--redis-timeout", "300ms") as a:
        first = link_stats(a, lambda l: l["auth_failures"] >= 2)
        t0 = time.monotonic()
        time.sleep(2)
        later = link_stats(a)
        elapsed = time.monotonic() - t0
        # Two links (commands, subscriber), backoff 100 ms doubling to 5 s:
        # a few tries a second at most, never a tight loop.
        assert later["auth_failures"] - first["auth_failures"] <= 2 * (3 + elapsed), later
        assert later["connected"] == 0, later
        assert a.proc.poll() is None  # the node is up

        async def go():
            c = await Chat.open(a, "alice")
            rep = await c.request("publish", channel="room", data=1)
            assert rep["error"]["code"] == "unavailable", rep
            await c.close()
        asyncio.run(go())
        err = assert_not_shown(a, WRONG)
        assert ("heartwheel-chat: warning: redis: AUTH refused by %s for user chat: WRONGPASS"
                % r.address()) in err, err
    os.unlink(bad)


def test_password_file_errors_are_usage_errors():
    def usage(*flags):
        p = subprocess.run([SERVER_BINARY, "--listen", "127.0.0.1:0", "--redis", "127.0.0.1:1",
                            *flags], capture_output=True, text=True, timeout=10)
        assert p.returncode == 2, p
        return p.stderr
    err = usage("--redis-password-file", "/nonexistent/pw")
    assert "--redis-password-file: cannot read /nonexistent/pw" in err, err
    empty = secret_file("")
    assert "is empty" in usage("--redis-password-file", empty)
    assert "--redis-user needs --redis-password-file" in usage("--redis-user", "chat")
    assert "--redis-tls-cert needs --redis-tls-key" in usage("--redis-tls-cert", empty)
    os.unlink(empty)
    # A file others may read works, with a warning.
    loose = secret_file(PASSWORD, mode=0o644)
    with RedisServer(password=PASSWORD) as r:
        s = node(r, "--redis-password-file", loose)
        err = assert_not_shown(s, PASSWORD)
        assert ("heartwheel-chat: warning: --redis-password-file %s is readable by group or "
                "others" % loose) in err, err
    os.unlink(loose)


def test_mutual_tls_publish_crosses_two_nodes():
    tls = tls_files()
    pw = secret_file(PASSWORD)
    flags = ("--redis-password-file", pw, *tls_flags(tls))
    with RedisServer(password=PASSWORD, tls=tls) as r, node(r, *flags) as a, \
            node(r, *flags) as b:
        cross_node_publish(a, b)
        assert link_stats(a)["connected"] == 2
        assert_not_shown(a, PASSWORD)
        assert_not_shown(b, PASSWORD)
        # Without a client certificate Redis refuses the handshake: nothing
        # gets through (TLS 1.3 may open the connection for a moment).
        c = node(r, "--redis-password-file", pw, "--redis-tls-ca", tls.ca,
                 "--redis-timeout", "300ms")

        async def go():
            ch = await Chat.open(c, "carol")
            rep = await ch.request("publish", channel="room", data=1)
            assert rep["error"]["code"] == "unavailable", rep
            await ch.close()
        asyncio.run(go())
        assert link_stats(c)["replies_ok"] == 0
        c.stop()
    os.unlink(pw)


def test_refused_tls_handshake_is_logged_once_per_cause_not_per_retry():
    """Issue 21: before, a refused handshake showed only as a link that never
    connected."""
    def refused(node):
        assert link_stats(node)["replies_ok"] == 0
    check_refused_tls_is_one_warning(
        "heartwheel-chat",
        lambda redis, *flags: Server(SERVER_BINARY, "--redis", redis, "--pubsub-prefix", "t:",
                                     "--redis-timeout", "300ms", *flags),
        refused)


def test_password_protected_cluster_publish_crosses_two_nodes():
    """Every node of a Redis Cluster with requirepass: the link authenticates
    on the slot map reader, each master's command and sharded-subscriber
    connection."""
    from redis_cluster import RedisCluster
    pw = secret_file(PASSWORD)
    with RedisCluster(password=PASSWORD) as c:
        flags = ("--redis-cluster", c.seeds(), "--pubsub-prefix", "t:", "--redis-password-file", pw)
        with Server(SERVER_BINARY, *flags) as a, Server(SERVER_BINARY, *flags) as b:
            cross_node_publish(a, b)
            # The stats file is rewritten every 100 ms: the first one read
            # may predate the publishes (every master's connects 0 then).
            # Wait for one written after them.
            st = b.read_stats(lambda st: st["pubsub"]["redis"]["messages"] >= 5)["pubsub"]["redis"]
            # Its connections (slot map reader, masters) authenticated.
            assert st["link"]["auth_failures"] == 0 and st["link"]["connected"] >= 2, st["link"]
            subscribed = [m for m in st["subscriber_masters"] if m["link"]["subscribes"] > 0]
            assert len(subscribed) == 1 and subscribed[0]["link"]["connects"] >= 1, st
            sa = a.read_stats(lambda st: st["pubsub"]["redis"]["publishes"] == 5)["pubsub"]["redis"]
            # Each master's figures count its own connection: the one that
            # took the publishes was connected (once, authenticated); the
            # others were never needed (links are opened on first use).
            used = [m for m in sa["masters"] if m["link"]["commands"] > 0]
            assert len(used) == 1 and used[0]["link"]["connects"] == 1, sa["masters"]
            assert used[0]["link"]["commands"] >= 5 and used[0]["connected"], sa["masters"]
            assert all(m["link"]["connects"] == 0 for m in sa["masters"] if m not in used), sa
            assert sa["link"]["connects"] >= 1 + sum(m["link"]["connects"] for m in sa["masters"])
            assert_not_shown(a, PASSWORD)
            assert_not_shown(b, PASSWORD)
    os.unlink(pw)


if __name__ == "__main__":
    import sys
    run_tests(globals(), sys.argv)
