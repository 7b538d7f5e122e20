#!/usr/bin/env python3
"""Issue 34: the order of publications on one channel of heartwheel-push.

Immediate publications (POST /publish without a delay) are delivered in the
order they were accepted, whichever node accepted them: a publication whose
202 came before another was posted has the smaller offset, at every
subscriber of every node and in an SSE resume. Delayed pushes held by one
node come in (due time, acceptance) order. Before the fix every publish went
through the delayed queue's wheel, which ran pushes due on the same tick in
no particular order: three publications posted one after another came out
as 7, 6, 5.

Usage: push_order_test.py PATH/TO/heartwheel-push [test ...]
Every server binds port 0; redis-server is the test's own, stopped by PID.
"""
import sys
import threading

from chat_support import Server, run_tests
from push_support import Redis, Sse, WsSubscriber, publish

SERVER_BINARY = None  # set by run_tests


def node(redis, *flags):
    return Server(SERVER_BINARY, "--redis", redis.address(), "--tick", "5ms",
                  "--history-size", "2000", *flags)


def data_of(events):
    """The `data` of SSE events or WebSocket publications, in order."""
    return [e["data"]["data"] if "event" in e else e["data"] for e in events]


def check_offsets(pubs, first):
    offsets = [p["offset"] for p in pubs]
    assert offsets == list(range(first, first + len(pubs))), offsets


def test_three_publications_posted_in_turn_to_a_keep_their_order_on_b():
    """The issue's reproduction: a WebSocket subscriber on node B, {"n":5},
    {"n":6}, {"n":7} posted to node A, each answered 202 before the next is
    sent. Ten rounds, so that a reordering cannot hide by luck."""
    with Redis() as r, node(r) as a, node(r) as b:
        sub = WsSubscriber(b.port, "news")
        sent = []
        for round_ in range(10):
            for n in (5, 6, 7):
                status, _, body = publish(a.port, "news", {"n": n, "round": round_})
                assert status == 202, body
                sent.append({"n": n, "round": round_})
                # The answer says where it went (after the fix): in turn.
                assert body.get("offset", len(sent)) == len(sent), (body, len(sent))
        got = sub.publications(len(sent))
        check_offsets(got, 1)
        assert data_of(got) == sent, data_of(got)
        # A resume on B (Last-Event-ID) replays them in the same order.
        resumed = Sse(b.port, "news", last_event_id=0)
        events = resumed.messages(len(sent))
        assert [e["id"] for e in events] == [str(i) for i in range(1, len(sent) + 1)]
        assert data_of(events) == sent, data_of(events)
        resumed.close()
        sub.close()


def test_a_burst_of_1000_publications_through_two_nodes_is_in_order_everywhere():
    """1,000 immediate publications, four publishers (two per node) posting
    at once, each its own sequence one after another: every publisher's
    sequence keeps its order, and a WebSocket subscriber on A, one on B and an
    SSE resume from offset 0 on either node see one and the same sequence,
    offsets 1..1000 without a gap; each 202 named the offset it got."""
    with Redis() as r, node(r) as a, node(r) as b:
        sub_a = WsSubscriber(a.port, "burst")
        sub_b = WsSubscriber(b.port, "burst")
        sse_a = Sse(a.port, "burst")
        assert sse_a.event()["event"] == "subscribed"
        answers = {}  # (publisher, n) -> the 202's body
        errors = []

        def publisher(name, port, count):
            try:
                for n in range(count):
                    status, _, body = publish(port, "burst", {"p": name, "n": n})
                    assert status == 202, (status, body)
                    answers[(name, n)] = body
            except Exception as e:  # reported by the main thread
                errors.append(repr(e))

        threads = [threading.Thread(target=publisher, args=(name, port, 250))
                   for name, port in (("a1", a.port), ("a2", a.port), ("b1", b.port),
                                      ("b2", b.port))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors[:3]
        total = 1000
        seen_a = data_of(sub_a.publications(total, timeout=30))
        got_b = sub_b.publications(total, timeout=30)
        check_offsets(got_b, 1)
        seen_b = data_of(got_b)
        seen_sse = data_of(sse_a.messages(total, timeout=30))
        resumed = Sse(b.port, "burst", last_event_id=0)
        seen_resume = data_of(resumed.messages(total, timeout=30))
        for name in ("a1", "a2", "b1", "b2"):
            mine = [d["n"] for d in seen_b if d["p"] == name]
            assert mine == list(range(250)), (name, mine[:20])
        assert seen_a == seen_b, "node A's subscriber saw another order than node B's"
        assert seen_sse == seen_b, "the SSE subscriber saw another order"
        assert seen_resume == seen_b, "the SSE resume replayed another order"
        # Each 202 named the offset its publication got.
        if "offset" in answers[("a1", 0)]:
            for offset, d in enumerate(seen_b, 1):
                assert answers[(d["p"], d["n"])]["offset"] == offset, (d, offset)
        for s in (sub_a, sub_b, sse_a, resumed):
            s.close()


def test_delayed_pushes_come_in_due_time_then_acceptance_order():
    """Delayed pushes accepted by node A (held by A alone: due inside the
    window it has loaded) reach a subscriber on node B in (due time,
    acceptance) order: 40 posted one after another with one delay come in the
    order they were posted; three with shrinking delays come in due order."""
    with Redis() as r, node(r) as a, node(r) as b:
        sub = WsSubscriber(b.port, "later")
        sent = []
        for n in range(40):
            status, _, body = publish(a.port, "later", n, delay_ms=800)
            assert status == 202, body
            sent.append(n)
        got = data_of(sub.publications(len(sent), timeout=20))
        assert got == sent, got
        for n, delay in ((100, 900), (101, 600), (102, 300)):
            assert publish(a.port, "later", n, delay_ms=delay)[0] == 202
        assert data_of(sub.publications(3, timeout=20)) == [102, 101, 100]
        sub.close()


if __name__ == "__main__":
    run_tests(globals(), sys.argv)
