#!/usr/bin/env python3
"""Issue 34: heartwheel-push feeding heartwheel-chat on one Redis. Both
programs keep their pub/sub channels under --pubsub-prefix, default "hw:" in
both, so with default flags a push (immediate or delayed) reaches the chat's
WebSocket subscribers, and a chat publish reaches the push's SSE readers;
on one redis-server and on a Redis Cluster. Before, push used
"heartwheel:push:pubsub:" and chat "hw:": 0 of 2 chat subscribers got the
push. The old flag names still work: heartwheel-chat's --redis-prefix (a
warning), heartwheel-push's --key-prefix alone (pub/sub keys under
KEY_PREFIX "pubsub:", as before).

Usage: push_chat_test.py PATH/TO/heartwheel-push [test ...]
heartwheel-chat is $HEARTWHEEL_CHAT_BIN, else the heartwheel-chat beside
heartwheel-push. Every server binds port 0; Redis is the test's own.
"""
import os
import subprocess
import sys

from chat_support import Server, run_tests
from push_support import Redis, Sse, WsSubscriber, publish

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                                "pylib"))
from redis_cluster import RedisCluster  # noqa: E402

SERVER_BINARY = None  # heartwheel-push, set by run_tests


def chat_binary():
    return os.environ.get("HEARTWHEEL_CHAT_BIN") or os.path.join(
        os.path.dirname(SERVER_BINARY), "heartwheel-chat")


def push_reaches_chat(push, chats):
    """A WebSocket subscriber of "news" on each chat node; an immediate and a
    delayed POST /publish on the push node reach every one, in order; a chat
    publish reaches an SSE reader of the push node."""
    subs = [WsSubscriber(c.port, "news") for c in chats]
    sse = Sse(push.port, "news")
    assert sse.event()["event"] == "subscribed"
    status, _, body = publish(push.port, "news", {"text": "now"})
    assert status == 202, body
    assert publish(push.port, "news", {"text": "later"}, delay_ms=300)[0] == 202
    for sub in subs:
        got = sub.publications(2, timeout=15)
        assert [(p["offset"], p["data"]) for p in got] == \
            [(1, {"text": "now"}), (2, {"text": "later"})], got
        assert got[0]["epoch"] == body["epoch"], (got, body)
    # And the other way: a chat client's publish reaches the push's SSE reader.
    subs[0].client.send(0x1, '{"id":2,"op":"publish","channel":"news","data":"from chat"}')
    events = sse.messages(3, timeout=15)
    assert [e["data"]["data"] for e in events] == [{"text": "now"}, {"text": "later"},
                                                   "from chat"], events
    for s in subs + [sse]:
        s.close()


def test_a_push_reaches_chat_subscribers_with_default_flags():
    with Redis() as r, Server(SERVER_BINARY, "--redis", r.address(), "--tick", "5ms") as push, \
            Server(chat_binary(), "--redis", r.address()) as chat_a, \
            Server(chat_binary(), "--redis", r.address()) as chat_b:
        push_reaches_chat(push, [chat_a, chat_b])
        # Both wrote under the one default prefix.
        assert r.command("KEYS", "hw:*"), r.command("KEYS", "*")
        assert not r.command("KEYS", "heartwheel:push:pubsub:*")


def test_a_push_reaches_chat_subscribers_on_a_redis_cluster_with_default_flags():
    with RedisCluster() as c, \
            Server(SERVER_BINARY, "--redis-cluster", c.seeds(), "--tick", "5ms") as push, \
            Server(chat_binary(), "--redis-cluster", c.seeds()) as chat_a, \
            Server(chat_binary(), "--redis-cluster", c.seeds()) as chat_b:
        push_reaches_chat(push, [chat_a, chat_b])


def test_the_old_prefix_flags_still_work():
    """heartwheel-push --key-prefix P alone keeps its pub/sub keys under
    P "pubsub:" (a note says so); heartwheel-chat reaches them with its old
    flag name --redis-prefix (deprecated: a warning), and refuses it beside
    --pubsub-prefix (exit 2)."""
    p = subprocess.run([chat_binary(), "--listen", "127.0.0.1:0", "--redis", "127.0.0.1:1",
                        "--redis-prefix", "a:", "--pubsub-prefix", "b:"],
                       capture_output=True, text=True, timeout=10)
    assert p.returncode == 2 and "--pubsub-prefix" in p.stderr, p
    with Redis() as r, Server(SERVER_BINARY, "--redis", r.address(), "--tick", "5ms",
                              "--key-prefix", "t:") as push, \
            Server(chat_binary(), "--redis", r.address(), "--redis-prefix", "t:pubsub:") as chat:
        push_reaches_chat(push, [chat])
        assert not r.command("KEYS", "hw:*")
        push.stop()
        chat.stop()
        assert "--pubsub-prefix t:pubsub:" in push.proc.stderr.read()
        assert "--redis-prefix is deprecated" in chat.proc.stderr.read()


if __name__ == "__main__":
    run_tests(globals(), sys.argv)
