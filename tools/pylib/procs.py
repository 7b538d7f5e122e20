"""Small process and port helpers shared by the Python tools under tools/
(slow-attack, reconnect-storm, tls-bench, http-bench's measure_rss) and the
tests: ports (free ones, and one held through a server's restart), process
trees, CPU seconds, RSS, one HTTP response. Standard library only; Linux
/proc.

    sys.path.insert(0, os.path.join(ROOT, "tools", "pylib"))
    import procs
"""
import json
import os
import signal
import socket
import subprocess


def free_port():
    """A loopback TCP port nothing listens on right now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class PortHold:
    """127.0.0.1:`port` kept bound, never listening, while the server that
    had it is down and is to come back on it. A connect there is refused
    as when nothing has the port, but no bind to port 0 elsewhere is given
    it and no connect() picks it as its own source port. Free, the port may
    be taken in the outage by a parallel test's listener, or by a client
    that retries the dead server and connects to itself through it (TCP
    simultaneous open), and then the server cannot bind it again.

    SO_REUSEADDR on both sides lets a server bind and listen on the port
    while it is held (redis-server and every libuv server set it); release()
    once it listens. Best effort: if the port was taken before the hold
    (the moments between the server's death and this call), there is no
    hold and the restart meets what it would have met without one."""

    def __init__(self, port):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind(("127.0.0.1", port))
        except OSError:
            self.release()

    def release(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def start_server(cmd, env=None):
    """Starts `cmd` in a process group of its own and waits for its first
    line, `listening on HOST:PORT` (every heartwheel server prints it, and
    the floors do); returns (Popen, port). RuntimeError with the server's
    stderr tail if it said anything else (it is stopped then)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True, env=env)
    line = p.stdout.readline()
    if not line.startswith("listening on "):
        stop_group(p)
        raise RuntimeError("%s did not start: %r %s" % (cmd[0], line, p.stderr.read()[-2000:]))
    return p, int(line.strip().rsplit(":", 1)[1])


def stop_group(p):
    """SIGKILLs the process group of a Popen started with
    start_new_session=True (only what we started) and reaps it."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def print_json(result, path=None):
    """A tool's result: indented JSON on stdout, and into `path` if given."""
    text = json.dumps(result, indent=2)
    print(text)
    if path:
        with open(path, "w") as f:
            f.write(text + "\n")


def process_tree(pid):
    """pid and all its descendants (nginx's master and workers, pre-forked servers)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def cpu_seconds(pid):
    """User + system CPU seconds of one process; 0.0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def count_sockets(pid):
    """Sockets among the process's descriptors."""
    n = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                n += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
            except OSError:
                pass
    except OSError:
        pass
    return n


def rss_kib(pids):
    """Resident set size (VmRSS) in KiB of one process, or the sum over a list
    of them (nginx's workers, pre-forked servers)."""
    total = 0
    for pid in ([pids] if isinstance(pids, int) else pids):
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS"):
                    total += int(line.split()[1])
                    break
            else:
                raise SystemExit(f"no VmRSS for {pid}")
    return total


def read_http_response(sock):
    """Reads one Content-Length-framed HTTP/1.1 response from `sock` (plain or
    TLS); SystemExit if the peer closes first."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            raise SystemExit("closed before a response: %r" % buf)
        buf += chunk
    head, body = buf.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = sock.recv(4096)
        if not chunk:
            raise SystemExit("closed inside a response body")
        body += chunk
