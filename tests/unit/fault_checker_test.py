#!/usr/bin/env python3
"""The fault runner's checker (tools/fault-runner/checker.py) on hand-made
histories: each promise it checks, kept and broken. No processes, no clock.

Usage: fault_checker_test.py [test ...]
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "fault-runner"))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import checker  # noqa: E402
import script_tests  # noqa: E402


class History:
    """Builds events with increasing times."""

    def __init__(self):
        self.events, self.t = [], 0

    def add(self, **e):
        self.t += 1
        e.setdefault("t", self.t)
        self.events.append(e)
        return self

    def publish(self, value, offset=None, epoch="e1", outcome="ok", ch="c", definite=False):
        self.add(type="publish", phase="invoke", proc=value.split(":")[0], channel=ch, value=value)
        if outcome == "ok":
            self.add(type="publish", phase="ok", proc=value.split(":")[0], channel=ch,
                     value=value, offset=offset, epoch=epoch)
        elif outcome == "fail":
            self.add(type="publish", phase="fail", proc=value.split(":")[0], channel=ch,
                     value=value, error="unavailable", definite=definite)
        return self

    def subscribed(self, proc, offset=0, epoch="e1", since=None, recovered=False, ch="c"):
        return self.add(type="subscribed", proc=proc, channel=ch, offset=offset, epoch=epoch,
                        since=since, recovered=recovered)

    def deliver(self, proc, value, offset, epoch="e1", via="live", ch="c"):
        return self.add(type="deliver", proc=proc, channel=ch, value=value, offset=offset,
                        epoch=epoch, via=via)


def clean(n=3, subs=("s1", "s2")):
    h = History()
    for s in subs:
        h.subscribed(s)
    for k in range(1, n + 1):
        h.publish("p:%d" % k, offset=k)
        for s in subs:
            h.deliver(s, "p:%d" % k, k)
    return h


def test_a_clean_history_is_ok_and_counts_what_was_acknowledged():
    r = checker.check_pubsub(clean().events)
    assert r["verdict"] == "ok", r
    assert r["acknowledged"] == 3 and r["lost"] == 0 and r["duplicates"] == 0, r
    assert r["unannounced_gaps"] == 0 and r["reordered"] == 0, r


def test_nothing_acknowledged_is_a_violation_because_nothing_was_checked():
    h = History().subscribed("s1").publish("p:1", outcome="fail")
    r = checker.check_pubsub(h.events)
    assert r["verdict"] == "violation" and r["indeterminate"] == 1, r


def test_a_subscriber_missing_an_acknowledged_publication_untold_is_an_unannounced_gap():
    h = clean(2)
    h.publish("p:3", offset=3)
    h.deliver("s1", "p:3", 3)  # s2 never gets it and is never told
    r = checker.check_pubsub(h.events)
    assert r["verdict"] == "violation" and r["unannounced_gaps"] == 1, r
    assert r["lost"] == 0, r  # s1 has it: not gone from the system
    assert r["channels"]["c"]["subscribers"]["s2"]["missing_values"] == ["p:3"], r


def test_an_offset_jump_within_an_epoch_is_an_unannounced_gap():
    h = History().subscribed("s1")
    h.publish("p:1", offset=1).deliver("s1", "p:1", 1)
    h.publish("q:1", offset=2, outcome="fail")  # another publisher's, indeterminate
    h.publish("p:2", offset=3).deliver("s1", "p:2", 3)
    r = checker.check_pubsub(h.events)
    assert r["unannounced_gaps"] == 1, r
    assert r["channels"]["c"]["subscribers"]["s1"]["gap_details"] == [
        {"epoch": "e1", "after": 1, "next": 3}], r


def test_a_gap_told_by_recovered_false_is_announced_not_a_violation():
    h = History().subscribed("s1")
    h.publish("p:1", offset=1).deliver("s1", "p:1", 1)
    h.publish("p:2", offset=2)
    h.add(type="disconnected", proc="s1")
    h.publish("p:3", offset=3)
    h.subscribed("s1", offset=3, since={"offset": 1, "epoch": "e1"}, recovered=False)
    h.publish("p:4", offset=4).deliver("s1", "p:4", 4)
    h.add(type="final_history", proc="s1", channel="c", epoch="e1",
          publications=[[1, "p:1"], [2, "p:2"], [3, "p:3"], [4, "p:4"]])
    r = checker.check_pubsub(h.events)
    assert r["verdict"] == "ok", r
    assert r["announced_gaps"] == 1 and r["missing_announced"] == 2 and r["lost"] == 0, r


def test_a_push_in_a_new_epoch_announces_the_gap_before_it():
    h = History().subscribed("s1")
    h.publish("p:1", offset=1).deliver("s1", "p:1", 1)
    h.publish("p:2", offset=2)  # acknowledged, then lost with its master
    h.publish("p:3", offset=2, epoch="e2").deliver("s1", "p:3", 2, epoch="e2")
    r = checker.check_pubsub(h.events, promise_no_loss=False)
    assert r["verdict"] == "ok" and r["lost"] == 1 and r["announced_gaps"] == 1, r
    r = checker.check_pubsub(h.events, promise_no_loss=True)
    assert r["verdict"] == "violation", r  # with WAIT an acknowledged one must survive


def test_another_publication_at_an_acknowledged_offset_is_conflicting():
    # An old master's message delivered after a failover, at the offset the
    # new master gave an acknowledged publication (found by
    # cluster-failover-partition before the broker compared its top).
    h = History().subscribed("s1")
    h.publish("p:1", offset=1).deliver("s1", "p:1", 1)
    h.publish("q:1", outcome="fail")
    h.deliver("s1", "q:1", 2)
    h.publish("p:2", offset=2)
    h.publish("p:3", offset=3).deliver("s1", "p:3", 3)
    r = checker.check_pubsub(h.events)
    assert r["conflicting"] == 1 and r["unannounced_gaps"] == 1, r
    assert r["verdict"] == "violation", r


def test_recovered_true_continues_from_since_and_fills_the_gap():
    h = History().subscribed("s1")
    h.publish("p:1", offset=1).deliver("s1", "p:1", 1)
    h.publish("p:2", offset=2)
    h.subscribed("s1", offset=2, since={"offset": 1, "epoch": "e1"}, recovered=True)
    h.deliver("s1", "p:2", 2, via="recovery")
    h.publish("p:3", offset=3).deliver("s1", "p:3", 3)
    r = checker.check_pubsub(h.events)
    assert r["verdict"] == "ok" and r["unannounced_gaps"] == 0 and r["duplicates"] == 0, r


def test_the_same_publication_twice_is_a_duplicate():
    h = clean(2)
    h.deliver("s1", "p:2", 2)
    r = checker.check_pubsub(h.events)
    assert r["verdict"] == "violation" and r["duplicates"] == 1, r


def test_a_history_reload_never_counts_as_a_duplicate():
    h = clean(2)
    h.add(type="announce", proc="s1", channel="c")
    h.deliver("s1", "p:1", 1, via="history")
    r = checker.check_pubsub(h.events)
    assert r["duplicates"] == 0 and r["verdict"] == "ok", r


def test_one_publication_at_two_offsets_of_the_stream_is_a_duplicate():
    h = clean(2)
    h.add(type="final_history", proc="s1", channel="c", epoch="e1",
          publications=[[1, "p:1"], [2, "p:2"], [3, "p:2"]])
    r = checker.check_pubsub(h.events)
    assert r["duplicates"] == 1 and r["verdict"] == "violation", r


def test_a_definite_failure_that_happened_anyway_is_caught():
    h = clean(1)
    h.publish("p:2", outcome="fail", definite=True)
    h.deliver("s1", "p:2", 2)
    r = checker.check_pubsub(h.events)
    assert r["channels"]["c"]["failed_but_present"] == 1 and r["verdict"] == "violation", r


def test_an_indeterminate_publication_may_appear_or_not():
    h = clean(1)
    h.publish("p:2", outcome="fail")
    h.deliver("s1", "p:2", 2).deliver("s2", "p:2", 2)
    assert checker.check_pubsub(h.events)["verdict"] == "ok"
    assert checker.check_pubsub(clean(1).publish("p:2", outcome="fail").events)["verdict"] == "ok"


def test_an_acknowledged_publication_nobody_got_and_not_in_the_stream_is_lost():
    h = clean(1)
    h.publish("p:2", offset=2)
    h.add(type="final_history", proc="s1", channel="c", epoch="e1", publications=[[1, "p:1"]])
    r = checker.check_pubsub(h.events)
    assert r["lost"] == 1 and r["channels"]["c"]["lost_values"] == ["p:2"], r
    assert r["verdict"] == "violation", r


def test_one_seen_live_then_gone_from_the_stream_is_lost_seen_live():
    h = History().subscribed("s1")
    h.publish("p:1", offset=1).deliver("s1", "p:1", 1)
    h.publish("p:2", offset=2).deliver("s1", "p:2", 2)  # then its master is replaced
    h.publish("p:3", offset=2, epoch="e2").deliver("s1", "p:3", 2, epoch="e2")
    h.add(type="final_history", proc="s1", channel="c", epoch="e2",
          publications=[[1, "p:1"], [2, "p:3"]])
    r = checker.check_pubsub(h.events, promise_no_loss=False)
    assert r["lost"] == 1 and r["lost_seen_live"] == 1 and r["verdict"] == "ok", r
    assert r["announced_gaps"] == 1 and r["unannounced_gaps"] == 0, r
    assert checker.check_pubsub(h.events, promise_no_loss=True)["verdict"] == "violation"


def test_a_publishers_acknowledged_publications_out_of_order_are_reordered():
    h = History().subscribed("s1")
    h.publish("p:1", offset=2).publish("p:2", offset=1)
    h.deliver("s1", "p:2", 1).deliver("s1", "p:1", 2)
    r = checker.check_pubsub(h.events)
    assert r["reordered"] == 1 and r["verdict"] == "violation", r


def test_delayed_pushes_delivered_twice_and_lateness():
    h = History().subscribed("s1")
    h.add(type="schedule", phase="invoke", proc="p", channel="c", value="p:1")
    h.add(type="schedule", phase="ok", proc="p", channel="c", value="p:1", due_ms=1000)
    h.add(type="schedule", phase="invoke", proc="p", channel="c", value="p:2")
    h.add(type="schedule", phase="ok", proc="p", channel="c", value="p:2", due_ms=1000)
    h.add(type="deliver", proc="s1", channel="c", value="p:1", offset=1, epoch="e1", wall_ms=1010)
    h.add(type="deliver", proc="s1", channel="c", value="p:2", offset=2, epoch="e1", wall_ms=1300)
    r = checker.check_delayed(h.events)
    assert r["verdict"] == "ok" and r["acknowledged"] == 2, r
    assert r["late_ms"]["max"] == 300, r
    # Late and out of due order (taken over after a fault): counted, not a violation.
    h.add(type="schedule", phase="invoke", proc="p", channel="c", value="p:0")
    h.add(type="schedule", phase="ok", proc="p", channel="c", value="p:0", due_ms=900)
    h.add(type="deliver", proc="s1", channel="c", value="p:0", offset=3, epoch="e1", wall_ms=2900)
    r = checker.check_delayed(h.events)
    assert r["verdict"] == "ok" and r["reordered"] == 1 and r["late_ms"]["max"] == 2000, r
    assert r["announced_gaps"] == 0, r
    h.add(type="deliver", proc="s1", channel="c", value="p:1", offset=4, epoch="e1", wall_ms=5000)
    h.add(type="deliver", proc="s1", channel="c", value="p:5", offset=5, epoch="e1", wall_ms=5001)
    r = checker.check_delayed(h.events)
    assert r["duplicates"] == 1 and r["verdict"] == "violation", r
    assert r["unannounced_gaps"] == 0, r  # the second copy took offset 4: no hole before 5


def lock_history(store_tokens):
    h = History()
    h.add(type="acquire", phase="ok", proc="A", token=1)
    h.add(type="write", phase="invoke", proc="A", token=1, seq=1)
    h.add(type="lost", proc="A", token=1)
    h.add(type="acquire", phase="ok", proc="B", token=2)
    h.add(type="write", phase="invoke", proc="B", token=2, seq=1)
    h.add(type="write", phase="invoke", proc="A", token=1, seq=2)  # in flight past its lease
    for token, result in store_tokens:
        h.add(type="store", proc="store", token=token, writer="AB"[token - 1], seq=1,
              result=result)
    return h.events


def test_a_fenced_store_refusing_the_stale_write_is_ok():
    r = checker.check_lock(lock_history([(1, "accepted"), (2, "accepted"), (1, "rejected")]))
    assert r["verdict"] == "ok" and r["fencing_violations"] == 0, r
    assert r["acknowledged"] == 2 and r["stale_writes_rejected"] == 1, r
    assert r["stale_writes_sent"] == 1 and r["holders"] == ["A", "B"], r


def test_a_store_accepting_an_older_token_is_a_fencing_violation():
    r = checker.check_lock(lock_history([(1, "accepted"), (2, "accepted"), (1, "accepted")]))
    assert r["verdict"] == "violation" and r["fencing_violations"] == 1, r


def test_one_token_granted_to_two_holders_is_a_fencing_violation():
    h = History()
    h.add(type="acquire", phase="ok", proc="A", token=5)
    h.add(type="acquire", phase="ok", proc="B", token=5)
    h.add(type="store", proc="store", token=5, writer="A", seq=1, result="accepted")
    r = checker.check_lock(h.events)
    assert r["fencing_violations"] >= 1 and r["verdict"] == "violation", r


if __name__ == "__main__":
    sys.exit(script_tests.run(globals(), sys.argv[1:], 60))
