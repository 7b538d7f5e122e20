"""The fault runner's checker: reads a history of operations (what clients
asked, what they were told, what they received) after a run and says what
broke. Pure functions of lists of dicts; no I/O, no clock: unit-tested by
tests/unit/fault_checker_test.py with hand-made histories.

A history is a list of events, each a dict with at least `t` (ms, one
monotonic clock for every process of the run), `proc` (which client) and
`type`. Operations are Jepsen's: an `invoke` event, then `ok` (it happened),
`fail` with `definite: true` (it did not) or `fail` with `definite: false` /
no outcome at all (it may have happened: indeterminate).

Three models:

check_pubsub  publications on channels (heartwheel-chat, the pushes of
              heartwheel-push): `publish` (invoke/ok/fail; value, and on ok
              offset + epoch), `subscribed` (channel, offset, epoch, since,
              recovered), `deliver` (channel, value, offset, epoch, via live |
              recovery | history), `final_history` (channel, epoch,
              publications [[offset, value], ...]: the stream read at the end).
check_delayed the same for delayed pushes: `schedule` (invoke/ok/fail; value,
              due_ms) instead of `publish`, delivered through a channel.
check_lock    `acquire` ok (token), `lost`, `release`, `write` invoke/ok/fail
              (token, seq) and the store's own log `store` (token, writer,
              seq, result accepted | rejected, in the store's order).

Definitions (per channel; every subscriber of the runs here is subscribed
before the first publish and stays to the end, reconnecting as needed):
  acknowledged      publications whose publish was answered ok
  lost              acknowledged, yet absent from the final history (the
                    channel's stream read at the end): gone from what any
                    client can still recover, whether or not a subscriber saw
                    it live before (lost_seen_live counts those); without a
                    final history: received by no subscriber
  duplicates        a subscriber received the same publication twice (live or
                    recovered; a history reload after an announcement does
                    not count), or one publication stands at two offsets
  reordered         a subscriber received an acknowledged publication after a
                    later one of the same publisher (a publisher's next publish
                    starts after the previous one's answer)
  unannounced_gaps  a subscriber's offsets jump within one epoch without a
                    `recovered: false` reply, or it lacks an acknowledged
                    publication and was never told it missed anything (no
                    new epoch, no recovered: false)
  conflicting       a subscriber that was never told got a publication at
                    an (epoch, offset) that an acknowledgement gave to
                    another one: two histories under one name (the missing
                    publication is an unannounced gap too)
  announced_gaps    a subscriber was told (recovered: false, or a push with a
                    new epoch): the protocol's "reload" signal
"""


def _ops(events, kind):
    """{value: {"invoke": ev, "ok": ev, "fail": ev}} for one kind of operation."""
    out = {}
    for e in events:
        if e.get("type") == kind:
            out.setdefault((e.get("channel"), e["value"]), {})[e["phase"]] = e
    return out


def _status(op):
    if "ok" in op:
        return "ok"
    if "fail" in op and op["fail"].get("definite"):
        return "failed"
    return "indeterminate"


def _publisher_order(value):
    """('pA', 17) for 'pA:17'; None for values not in that form."""
    if isinstance(value, str) and ":" in value:
        who, _, k = value.rpartition(":")
        if k.isdigit():
            return who, int(k)
    return None


def _subscriber_streams(events):
    """{(proc, channel): [event, ...]} of subscribed/deliver/announce events, in order."""
    out = {}
    for e in events:
        if e.get("type") in ("subscribed", "deliver", "announce"):
            out.setdefault((e["proc"], e["channel"]), []).append(e)
    return out


def _walk_stream(stream):
    """One subscriber's channel: what it received and what it was told.
    Returns a dict: values (set), duplicates, offset_gaps (holes within an
    epoch never announced), announced (count of announcements), order
    ([values] in arrival order, live and recovered only)."""
    epoch, offset = None, None  # the position after the last publication seen
    seen_positions, seen_values = set(), set()
    r = {"values": set(), "duplicates": 0, "offset_gaps": 0, "announced": 0, "order": [],
         "gap_details": [], "positions": {}}
    for e in stream:
        kind = e["type"]
        if kind == "announce":
            r["announced"] += 1
            continue
        if kind == "subscribed":
            since = e.get("since")
            if since is not None and not e.get("recovered"):
                r["announced"] += 1  # recovered: false is the protocol's "reload"
            if since is None or not e.get("recovered"):
                epoch, offset = e.get("epoch"), e.get("offset")
            # recovered: true: the reply's publications continue from `since`
            continue
        # a deliver
        value, via = e["value"], e.get("via", "live")
        if via == "history":  # a reload after an announcement: fills, never duplicates
            r["values"].add(value)
            continue
        pos = (e.get("epoch"), e.get("offset"))
        if pos in seen_positions:  # the same publication again
            r["duplicates"] += 1
            continue
        if value in seen_values:  # published twice: a new position, the same value
            r["duplicates"] += 1
            seen_positions.add(pos)
            if e.get("epoch") == epoch and offset is not None and e["offset"] > offset:
                epoch, offset = e.get("epoch"), e.get("offset")
            continue
        seen_positions.add(pos)
        seen_values.add(value)
        r["positions"][pos] = value
        r["values"].add(value)
        r["order"].append(value)
        if e.get("epoch") != epoch:
            if epoch:  # "" (no stream yet at the subscribe) is no announcement
                r["announced"] += 1  # a push in a new epoch: "reload"
        elif offset is not None and e["offset"] > offset + 1:
            r["offset_gaps"] += 1
            r["gap_details"].append({"epoch": epoch, "after": offset, "next": e["offset"]})
        epoch, offset = e.get("epoch"), e.get("offset")
    return r


def check_pubsub(events, promise_no_loss=True, kind="publish", order_promised=True):
    """The pub/sub model (see the module's comment). Returns a dict of counts,
    per-channel details and `verdict`: 'violation' when a promise broke:
    duplicates or unannounced gaps always; reordering when order_promised;
    lost when promise_no_loss (an acknowledged publication must survive);
    nothing acknowledged at all (the run checked nothing)."""
    ops = _ops(events, kind)
    finals = {}
    for e in events:
        if e.get("type") == "final_history":
            finals[e["channel"]] = e
    streams = _subscriber_streams(events)
    channels = sorted({ch for ch, _ in ops} | {ch for _, ch in streams}, key=str)
    total = {"acknowledged": 0, "failed": 0, "indeterminate": 0, "lost": 0, "lost_seen_live": 0,
             "duplicates": 0, "conflicting": 0,
             "reordered": 0, "unannounced_gaps": 0, "announced_gaps": 0,
             "missing_announced": 0}
    details = {}
    for ch in channels:
        acked = {v for (c, v), op in ops.items() if c == ch and _status(op) == "ok"}
        failed = {v for (c, v), op in ops.items() if c == ch and _status(op) == "failed"}
        indeterminate = {v for (c, v), op in ops.items()
                         if c == ch and _status(op) == "indeterminate"}
        subs = {p: _walk_stream(s) for (p, c), s in streams.items() if c == ch}
        received = set().union(*(s["values"] for s in subs.values())) if subs else set()
        final = finals.get(ch)
        in_history = {v for _, v in final["publications"]} if final else set()
        if final and not final.get("truncated"):
            lost = sorted(acked - in_history, key=str)
        else:
            lost = sorted(acked - received - in_history, key=str)
        d = {"acknowledged": len(acked), "failed": len(failed), "indeterminate": len(indeterminate),
             "lost": len(lost), "lost_seen_live": len(set(lost) & received),
             "lost_values": lost[:20], "subscribers": {}}
        # A publication at two offsets of the stream: published twice.
        if final:
            values = [v for _, v in final["publications"]]
            d["duplicated_in_stream"] = len(values) - len(set(values))
            total["duplicates"] += d["duplicated_in_stream"]
        # Failed for certain, yet it exists: the "definite" failure was not.
        d["failed_but_present"] = len(failed & (received | in_history))
        total["duplicates"] += d["failed_but_present"]
        ack_ok = {v: op["ok"] for (c, v), op in ops.items() if c == ch and "ok" in op}
        at = {(e.get("epoch"), e.get("offset")): v for v, e in ack_ok.items()}
        for proc, s in sorted(subs.items()):
            missing = acked - s["values"]
            unannounced_missing = 0 if s["announced"] else len(missing)
            # reordering among acknowledged publications of one publisher
            last_of, reordered = {}, 0
            for v in s["order"]:
                po = _publisher_order(v)
                if po is None or v not in ack_ok:
                    continue
                who, k = po
                if who in last_of and k < last_of[who]:
                    reordered += 1
                last_of[who] = max(k, last_of.get(who, k))
            conflicting = 0 if s["announced"] else sum(
                1 for pos, v in s["positions"].items() if pos in at and at[pos] != v)
            gaps = s["offset_gaps"] + (1 if unannounced_missing else 0)
            d["subscribers"][proc] = {
                "received": len(s["values"]), "missing": len(missing),
                "missing_values": sorted(missing, key=str)[:10],
                "duplicates": s["duplicates"], "reordered": reordered,
                "conflicting": conflicting,
                "unannounced_gaps": gaps, "announced": s["announced"],
                "gap_details": s["gap_details"][:10]}
            total["duplicates"] += s["duplicates"]
            total["reordered"] += reordered
            total["conflicting"] += conflicting
            total["unannounced_gaps"] += gaps
            total["announced_gaps"] += s["announced"]
            if s["announced"]:
                total["missing_announced"] += len(missing)
        for key in ("acknowledged", "failed", "indeterminate", "lost", "lost_seen_live"):
            total[key] += d[key]
        details[ch] = d
    reasons = []
    if total["acknowledged"] == 0:
        reasons.append("nothing was acknowledged: the run checked nothing")
    if promise_no_loss and total["lost"]:
        reasons.append("%d acknowledged publications lost" % total["lost"])
    for key in ("duplicates", "reordered", "unannounced_gaps", "conflicting"):
        if total[key] and (key != "reordered" or order_promised):
            reasons.append("%s: %d" % (key, total[key]))
    total["verdict"] = "violation" if reasons else "ok"
    total["reasons"] = reasons
    total["channels"] = details
    return total


def check_delayed(events, promise_no_loss=True):
    """Delayed pushes: `schedule` operations (202 = ok), delivered once each
    through one channel. The pub/sub model with schedules as publications;
    also how late each acknowledged push came (`late_ms`: delivery time at
    the first subscriber minus due_ms, from the event's `wall_ms`). Order
    is counted (`reordered`: a push delivered after one due later) but not
    promised: heartwheel-push keeps due order on time, and a push that a
    fault made late (taken over, re-queued after a lease) comes when it can."""
    r = check_pubsub(events, promise_no_loss, kind="schedule", order_promised=False)
    due = {e["value"]: e.get("due_ms") for e in events
           if e.get("type") == "schedule" and e.get("phase") == "ok"}
    first = {}
    for e in events:
        if e.get("type") == "deliver" and e["value"] in due and "wall_ms" in e:
            first.setdefault(e["value"], e["wall_ms"])
    late = sorted(first[v] - due[v] for v in first if due[v] is not None)
    r["late_ms"] = {"count": len(late), "max": late[-1] if late else None,
                    "p50": late[len(late) // 2] if late else None}
    return r


def check_lock(events):
    """Fencing: every acquisition gets a token no other got, tokens grow in
    the order the acquisitions were granted, and the store never accepted a
    write whose token is below one it had accepted before (recomputed from
    the store's own log, not trusted). Also counts what fencing had to stop:
    writes the store rejected as stale, and writes sent by a holder while a
    newer holder already held the lock (the lease alone would have let them
    land)."""
    acquires = sorted((e for e in events if e.get("type") == "acquire" and e.get("phase") == "ok"),
                      key=lambda e: e["t"])
    store = [e for e in events if e.get("type") == "store"]
    writes = [e for e in events if e.get("type") == "write" and e.get("phase") == "invoke"]
    violations, notes = 0, []
    by_token = {}
    for a in acquires:
        by_token.setdefault(a["token"], []).append(a["proc"])
    for token, procs in by_token.items():
        if len(procs) > 1:
            violations += len(procs) - 1
            notes.append("token %d granted %d times (%s)" % (token, len(procs), ",".join(procs)))
    for prev, nxt in zip(acquires, acquires[1:]):
        if nxt["token"] <= prev["token"] and nxt["proc"] != prev["proc"]:
            violations += 1
            notes.append("token %d (%s) granted after %d (%s)"
                         % (nxt["token"], nxt["proc"], prev["token"], prev["proc"]))
    top, accepted, rejected = 0, 0, 0
    for s in store:
        if s["result"] == "accepted":
            accepted += 1
            if s["token"] < top:
                violations += 1
                notes.append("store accepted token %d after %d" % (s["token"], top))
            top = max(top, s["token"])
        else:
            rejected += 1
    # Writes sent while a newer token had been granted to another holder.
    stale_sent = 0
    for w in writes:
        newer = [a for a in acquires
                 if a["t"] < w["t"] and a["token"] > w["token"] and a["proc"] != w["proc"]]
        stale_sent += bool(newer)
    total = {"acquisitions": len(acquires), "acknowledged": accepted,
             "stale_writes_rejected": rejected, "stale_writes_sent": stale_sent,
             "fencing_violations": violations, "notes": notes[:20],
             "holders": sorted({a["proc"] for a in acquires})}
    reasons = list(notes[:5])
    if accepted == 0:
        reasons.append("the store accepted no write: the run checked nothing")
    total["warnings"] = [] if len(total["holders"]) >= 2 else [
        "only %d holder got the lock: the partition never handed it over" % len(total["holders"])]
    total["verdict"] = "violation" if reasons else "ok"
    total["reasons"] = reasons
    return total
