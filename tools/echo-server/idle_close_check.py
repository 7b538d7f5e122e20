#!/usr/bin/env python3
# Opens 15,000 silent connections to heartwheel-echo (--read-idle 3s) and
# reports how long until all were closed, the server's CPU time meanwhile and
# the wheel's expiry lateness. Usage: idle_close_check.py wheel|uv
# (run from the repository root after building; stays under a minute).
import os
BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'build', 'bin', 'heartwheel-echo')
import socket, subprocess, time, json, sys
timers = sys.argv[1]
p = subprocess.Popen([BIN, "--read-idle", "3s", "--tick", "10ms", "--timers", timers,
                      "--stats-json", f"/tmp/scale-{timers}.json"], stdout=subprocess.PIPE, text=True)
port = int(p.stdout.readline().strip().rsplit(":",1)[1])
import atexit
atexit.register(lambda: p.poll() is None and p.terminate())  # never leave the server behind
def cpu():
    f = open(f"/proc/{p.pid}/stat").read().rsplit(")",1)[1].split()
    return (int(f[11]) + int(f[12])) * 10  # ms (CLK_TCK=100)
N = 15000
t0 = time.time()
socks = []
for i in range(N):
    socks.append(socket.create_connection(("127.0.0.1", port)))
t1 = time.time()
c0 = cpu()
# wait for all closes
closed = 0
import select
deadline = time.time() + 20
for s in socks: s.setblocking(False)
pending = set(socks)
while pending and time.time() < deadline:
    for s in list(pending):
        try:
            d = s.recv(1)
            if d == b"": pending.discard(s)
        except BlockingIOError:
            pass
        except ConnectionResetError:
            pending.discard(s)
    time.sleep(0.05)
t2 = time.time()
c1 = cpu()
p.terminate(); p.wait()
st = json.load(open(f"/tmp/scale-{timers}.json"))
print(timers, f"connect {t1-t0:.2f}s, all closed {t2-t0:.2f}s after first connect; server CPU during wait {c1-c0} ms;",
      "read_idle", st["closed_by_reason"]["read_idle"], "lateness", st["expiry_lateness_ms"], "budget_exhausted", st["wheel"]["budget_exhausted"])
for s in socks: s.close()
