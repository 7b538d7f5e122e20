#!/usr/bin/env python3
"""heartwheel-load across hosts (tools/load/coordinator.h, agent.h) on
loopback: a coordinator and agents against heartwheel-echo. Two agents'
results merge into one --expect-idle-close verdict with each agent's share
and figures; agents that dial in (--coordinator) work the same; an agent
SIGKILLed mid-run is reported lost (exit 1) and its workers die with it; an
agent that refuses its share stops the run before it starts (exit 2); the
coordinator's own usage errors. ~20 s.

Usage: load_agents_test.py PATH/TO/heartwheel-load PATH/TO/heartwheel-echo [test ...]
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

LOAD = ECHO = None


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


def agent(*flags):
    return Proc([LOAD, "--agent-listen", "127.0.0.1:0", "-q", *flags], "agent listening on")


def run_flags(echo, out):
    return ["--target", echo.address, "-c", "400", "-p", "2", "--dead-fraction", "0.1",
            "--message-interval", "300ms", "--expect-idle-close", "1s",
            "--idle-close-slack", "700ms", "--duration", "4s", "--json", out]


def test_two_agents_merge_into_one_verdict():
    echo = echo_server()
    agents = [agent(), agent()]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "run.json")
            r = subprocess.run([LOAD, "--agents", ",".join(a.address for a in agents), "-q",
                                *run_flags(echo, out)], capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, (r.stdout, r.stderr)
            assert "expectations met (merged over every agent)" in r.stdout, r.stdout
            with open(out) as f:
                rep = json.load(f)
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


def test_coordinator_usage_errors_name_the_flag():
    for flags, says in [(["--agents-listen", "127.0.0.1:0"], "--expect-agents"),
                        (["--agents", "127.0.0.1:1", "--mode", "ws"], "--mode ws"),
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
    if len(sys.argv) < 3:
        sys.exit("usage: load_agents_test.py PATH/TO/heartwheel-load PATH/TO/heartwheel-echo "
                 "[test ...]")
    LOAD, ECHO = sys.argv[1], sys.argv[2]
    sys.exit(script_tests.run(globals(), sys.argv[3:], 100))
