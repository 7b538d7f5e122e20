#!/usr/bin/env python3
"""heartwheel-load across hosts (tools/load/coordinator.h, agent.h) on
loopback: a coordinator and agents against heartwheel-echo. Two agents'
results merge into one --expect-idle-close verdict with each agent's share
and figures; agents that dial in (--coordinator) work the same; an agent
SIGKILLed mid-run is reported lost (exit 1) and its workers die with it; an
agent that refuses its share stops the run before it starts (exit 2); the
coordinator's own usage errors; --mode ws on two agents against
heartwheel-chat: one publisher, every agent's subscribers held to its
offsets, one verdict. ~30 s.

Usage: load_agents_test.py PATH/TO/heartwheel-load PATH/TO/heartwheel-echo PATH/TO/heartwheel-chat
       [test ...]
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import script_tests  # noqa: E402

LOAD = ECHO = CHAT = None


class Proc:
    """A process whose first stdout line says where it listens."""

    def __init__(self, argv, prefix):
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        line = self.p.stdout.readline()
        assert line.startswith(prefix), (line, self.p.stderr.read() if self.p.poll() else "")
        self.address = line.split(" on ")[1].split()[0]

    def port(self):
        return int(self.address.rsplit(":", 1)[1])

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait(10)


def echo_server():
    return Proc([ECHO, "--listen", "127.0.0.1:0", "--read-idle", "1s"], "listening on")


class ChatServer:
    """heartwheel-chat on a free port: pings every second, closes a second
    after an unanswered ping; its log goes nowhere (nothing reads a pipe)."""

    def __init__(self):
        self.p = subprocess.Popen([CHAT, "--listen", "127.0.0.1:0", "--ping-interval", "1s",
                                   "--pong-timeout", "1s", "--tick", "10ms", "--no-join-leave"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for _ in range(50):
            line = self.p.stdout.readline()
            if not line or "listening on " in line:
                break
        assert "listening on " in line, (line, self.p.poll())
        self.address = line.split("listening on ")[1].split()[0]

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
        self.p.wait(15)


def agent(*flags):
    return Proc([LOAD, "--agent-listen", "127.0.0.1:0", "-q", *flags], "agent listening on")


def run_flags(echo, out):
    return ["--target", echo.address, "-c", "400", "-p", "2", "--dead-fraction", "0.1",
            "--message-interval", "300ms", "--expect-idle-close", "1s",
            "--idle-close-slack", "700ms", "--duration", "4s", "--json", out]


def coordinate(agents, flags):
    """Runs a coordinator over `agents` with flags(json_path); asserts it met
    its expectations and returns its stdout and its --json report."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.json")
        r = subprocess.run([LOAD, "--agents", ",".join(a.address for a in agents), "-q",
                            *flags(out)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert "expectations met (merged over every agent)" in r.stdout, r.stdout
        with open(out) as f:
            return r.stdout, json.load(f)


def test_two_agents_merge_into_one_verdict():
    echo = echo_server()
    agents = [agent(), agent()]
    try:
        _, rep = coordinate(agents, lambda out: run_flags(echo, out))
        assert rep["connections_established"] == 400 and rep["complete"], rep
        assert rep["workers_expected"] == 4 and rep["workers_reported"] == 4, rep
        assert rep["agents_lost"] == 0 and rep["expectations_met"], rep
        assert rep["dead"]["count"] == 40 and rep["dead"]["closed"] == 40, rep["dead"]
        assert rep["live_closed_by_server"] == 0, rep
        assert [a["connections"] for a in rep["agents"]] == [200, 200], rep["agents"]
        for a in rep["agents"]:
            assert a["connections_established"] == 200 and a["status"] == 0, a
            assert a["dead"]["closed"] == 20, a
        # Merged histograms: every sample of both agents.
        sent = sum(a["messages_sent"] for a in rep["agents"])
        assert rep["messages_sent"] == sent and rep["rtt_us"]["count"] > 0, rep["rtt_us"]
        for a in agents:
            assert a.p.wait(10) == 0  # one run each, then they exit
    finally:
        for p in [echo, *agents]:
            p.stop()


def test_agents_dialing_in_and_one_killed_mid_run_is_reported_lost():
    echo = echo_server()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.json")
        coord = Proc([LOAD, "--agents-listen", "127.0.0.1:0", "--expect-agents", "2",
                      "--agent-timeout", "3s", *run_flags(echo, out)], "coordinator listening on")
        marks = [os.path.join(tmp, "agent%d.json" % i) for i in range(2)]
        agents = [subprocess.Popen([LOAD, "--coordinator", coord.address, "-q", "--json", m],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                  for m in marks]
        try:
            time.sleep(2)  # both connected and running
            agents[1].send_signal(signal.SIGKILL)
            out_text, err_text = coord.p.communicate(timeout=60)
            assert coord.p.returncode == 1, (out_text, err_text)
            assert "LOST" in out_text and "INCOMPLETE: 1 of 2 agents lost" in out_text, out_text
            with open(out) as f:
                rep = json.load(f)
            lost = [a for a in rep["agents"] if a["lost"]]
            assert rep["agents_lost"] == 1 and len(lost) == 1 and not rep["complete"], rep
            assert "closed before its result" in lost[0]["lost_why"], lost
            kept = [a for a in rep["agents"] if not a["lost"]][0]
            assert kept["connections_established"] == 200, kept
            assert agents[0].wait(10) == 0
            # The killed agent's supervisor and workers died with it (their
            # command line is the agent's, with its own --json).
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and processes_with(marks[1]):
                time.sleep(0.1)
            assert not processes_with(marks[1]), processes_with(marks[1])
        finally:
            for a in agents:
                if a.poll() is None:
                    a.kill()
                a.wait(10)
            coord.stop()
            echo.stop()


def processes_with(arg):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    if arg.encode() in f.read().split(b"\0"):
                        out.append(int(d))
            except OSError:
                pass
    return out


def test_a_share_an_agent_refuses_stops_the_run_before_it_starts():
    echo = echo_server()
    good, bad = agent(), agent("--source-ips", "300.1.1.1")
    try:
        r = subprocess.run([LOAD, "--agents", "%s,%s" % (good.address, bad.address),
                            "--target", echo.address, "-c", "10", "--duration", "2s"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert bad.address in r.stderr and "--source-ips" in r.stderr, r.stderr
        assert bad.p.wait(10) == 2
        assert good.p.wait(10) == 1  # told to abort before the start
    finally:
        for p in (echo, good, bad):
            p.stop()


def test_ws_subscribers_on_two_agents_are_held_to_one_publisher():
    chat = ChatServer()
    agents = [agent(), agent()]
    try:
        stdout, rep = coordinate(agents, lambda out: [
            "--mode", "ws", "--target", chat.address, "-c", "300", "--channels", "2",
            "--publish-rate", "20", "--publish-start", "1500ms", "--dead-fraction", "0.1",
            "--expect-idle-close", "2s", "--idle-close-slack", "1500ms", "--expect-delivery",
            "--duration", "6s", "--json", out])
        assert "agent 1 ws:" in stdout and ", the publisher" in stdout, stdout
        w = rep["ws"]
        # One publisher for the whole run, on agent 0; 20/s from 1.5 s to
        # 4 s: about 50 publications, each acknowledged.
        assert w["publishers"] == 1 and w["publish_acks"] >= 35, w
        assert w["publish_acks"] == w["publications_sent"], w
        assert w["subscribed"] == 300 and w["live_subscribers_at_end"] == 270, w
        # Both agents' subscribers got every publication of their channel
        # once: held to agent 0's offsets.
        assert w["expected"] >= 270 * 35 // 2 and w["delivered"] == w["expected"], w
        assert w["missing"] == 0 and w["duplicates"] == 0, w
        assert w["delivery_us"]["count"] == w["delivered"], w["delivery_us"]
        assert rep["dead"]["closed"] == 30 and rep["dead"]["closed_early"] == 0, rep["dead"]
        assert rep["dead"]["closed_late"] == 0 and rep["live_closed_by_server"] == 0, rep
        assert rep["expectations_met"] and rep["agents_lost"] == 0, rep
        a0, a1 = rep["agents"]
        assert a0["ws"]["publishers"] == 1 and a1["ws"]["publishers"] == 0, rep["agents"]
        for a in (a0, a1):
            assert a["ws"]["subscribed"] == 150 and a["ws"]["delivered"] > 0, a
            # Loopback: one clock, so the offset is read as about zero.
            assert abs(a["ws"]["clock_offset_us"]) <= a["ws"]["clock_rtt_us"] + 1000, a["ws"]
        assert a0["ws"]["delivered"] + a1["ws"]["delivered"] == w["delivered"], rep["agents"]
    finally:
        for p in [chat, *agents]:
            p.stop()


def test_coordinator_usage_errors_name_the_flag():
    for flags, says in [(["--agents-listen", "127.0.0.1:0"], "--expect-agents"),
                        (["--agents", "127.0.0.1:1,127.0.0.1:2", "-c", "1"], "fewer than"),
                        (["--agents", "127.0.0.1:1", "-c", "100000", "-p", "1"],
                         "each agent's share")]:
        r = subprocess.run([LOAD, "--target", "127.0.0.1:9", *flags], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 2 and says in r.stderr, (flags, r.stderr)
    r = subprocess.run([LOAD, "--agent-listen", "127.0.0.1:0", "--coordinator", "127.0.0.1:1"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "excludes" in r.stderr, r.stderr


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit("usage: load_agents_test.py PATH/TO/heartwheel-load PATH/TO/heartwheel-echo "
                 "PATH/TO/heartwheel-chat [test ...]")
    LOAD, ECHO, CHAT = sys.argv[1], sys.argv[2], sys.argv[3]
    sys.exit(script_tests.run(globals(), sys.argv[4:], 100))
