"""A real Redis Cluster for the Python tests and tools: six redis-server
processes in cluster mode (three masters, three replicas by default) on free
loopback ports below 55535 (the bus port is port + 10000), made a cluster with
`redis-cli --cluster create ... --cluster-replicas 1 --cluster-yes`, no
persistence, cluster-node-timeout 2 s by default; every process stopped by
PID. Standard library only.

    sys.path.insert(0, os.path.join(ROOT, "tools", "pylib"))
    from redis_cluster import RedisCluster
    with RedisCluster() as c:
        c.seeds()            # "127.0.0.1:P1,127.0.0.1:P2,..." for --redis-cluster
        m = c.masters()      # master ports, each owning a third of the slots
        c.kill(m[0]); c.wait_ok()   # SIGKILL; its replica is promoted
        c.pause(p); c.resume(p)     # SIGSTOP / SIGCONT (stop() resumes first)
"""
import os
import signal
import shutil
import socket
import subprocess
import tempfile
import time

from procs import PortHold, free_port


def _read_reply(f):
    line = f.readline()
    if not line:
        raise ConnectionError("redis closed the connection")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else f.read(n + 2)[:-2].decode()
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_read_reply(f) for _ in range(n)]
    raise RuntimeError("not RESP: %r" % line)


def _encode(args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def command(port, *args, timeout=5, password=None, user=None, tls=None, host="127.0.0.1"):
    """One command to host:port (127.0.0.1 by default) on a fresh connection;
    the decoded reply (a Redis error raises RuntimeError, a dead node
    OSError). With `password` (and `user`, an ACL user) AUTH goes first; with
    `tls` (an ssl.SSLContext, e.g. redis_server.TlsFiles.client_context())
    the connection speaks TLS."""
    with socket.create_connection((host, port), timeout=timeout) as raw:
        s = tls.wrap_socket(raw, server_hostname=host) if tls else raw
        out = b""
        if password:
            out += _encode(["AUTH", user, password] if user else ["AUTH", password])
        s.sendall(out + _encode(args))
        f = s.makefile("rb")
        if password:
            _read_reply(f)  # a refused AUTH raises
        return _read_reply(f)


def pipeline(port, commands, timeout=5, password=None):
    """Several commands on one fresh connection to 127.0.0.1:port (e.g.
    READONLY first, to read keys from a replica); their decoded replies, a
    Redis error as a RuntimeError object in its place."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        out = _encode(["AUTH", password]) if password else b""
        s.sendall(out + b"".join(_encode(c) for c in commands))
        f = s.makefile("rb")
        if password:
            _read_reply(f)
        replies = []
        for _ in commands:
            try:
                replies.append(_read_reply(f))
            except RuntimeError as e:
                replies.append(e)
        return replies


def _cluster_port():
    for _ in range(200):
        p = free_port()
        if p < 55535:
            try:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p + 10000))
                return p
            except OSError:
                pass
    raise AssertionError("no free port below 55535 with port + 10000 free")


class RedisCluster:
    def __init__(self, masters=3, replicas=1, node_timeout_ms=2000, password=None):
        """password: every node's requirepass (and masterauth, for its
        replicas); command() and the set-up authenticate with it."""
        if not shutil.which("redis-server") or not shutil.which("redis-cli"):
            raise SystemExit("redis-server / redis-cli missing: run tools/install-deps")
        self.dir = tempfile.mkdtemp(prefix="hw-cluster-")
        self.node_timeout_ms = node_timeout_ms
        self.password = password
        self.procs = {}  # port -> Popen
        self.holds = {}  # port -> its and its bus port's PortHold, from kill() to restart()
        self.paused = set()  # ports SIGSTOPped and not yet resumed
        try:
            for _ in range(masters * (1 + replicas)):
                self._start_new()
            made = subprocess.run(["redis-cli", "--cluster", "create",
                                   *["127.0.0.1:%d" % p for p in self.procs],
                                   "--cluster-replicas", str(replicas), "--cluster-yes"],
                                  capture_output=True, text=True, timeout=60,
                                  # the password through the environment, not argv (ps)
                                  env=dict(os.environ, **({"REDISCLI_AUTH": password}
                                                          if password else {})))
            if made.returncode != 0:  # what redis-cli said, which the status alone does not
                raise AssertionError("redis-cli --cluster create: exit %d: %s%s"
                                     % (made.returncode, made.stdout[-3000:], made.stderr[-2000:]))
            self.wait_ok()
        except BaseException:
            self.stop()
            raise

    def _start_new(self):
        """A node on a free port with its bus port free too. Both are found
        free, then redis-server binds them: one taken in between makes it
        exit at once, and then other ports will do."""
        for attempt in range(5):
            port = _cluster_port()
            if self._run(port):
                return
            if self.procs[port].poll() is None or attempt == 4:
                self._fail(port)  # running but silent (other ports would not help), or 5 exits
            del self.procs[port]  # exited: given up for other ports

    def _start(self, port):
        """Starts the node on `port` (again, after kill()) and waits until it
        answers PING; AssertionError, with its exit status and log, if it
        does not within 10 s."""
        if not self._run(port):
            self._fail(port)

    def _run(self, port):
        """True once the node on `port` answers PING; False if it exits first
        or 10 s pass."""
        d = os.path.join(self.dir, str(port))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "redis.log"), "ab") as log:
            self.procs[port] = subprocess.Popen(
                ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", d, "--loglevel", "warning",
                 "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                 "--cluster-node-timeout", str(self.node_timeout_ms),
                 "--repl-diskless-sync-delay", "0",
                 *(["--requirepass", self.password, "--masterauth", self.password]
                   if self.password else [])],
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.procs[port].poll() is None:
            try:
                if self.command(port, "PING", timeout=1) == "PONG":
                    self._release(port)
                    return True
            except (OSError, RuntimeError):
                pass
            time.sleep(0.05)
        return False

    def _fail(self, port):
        """AssertionError with the node's exit status and what it logged."""
        status = self.procs[port].poll()
        try:
            with open(os.path.join(self.dir, str(port), "redis.log"), errors="replace") as f:
                said = f.read()[-2000:]
        except OSError:
            said = ""
        raise AssertionError("redis-server did not start on %d (%s): %s" % (
            port, "no PONG in 10 s" if status is None else "exit status %d" % status, said))

    def _release(self, port):
        for hold in self.holds.pop(port, ()):
            hold.release()

    def command(self, port, *args, timeout=5):
        """One command to the node on `port` (authenticated with the password)."""
        return command(port, *args, timeout=timeout, password=self.password)

    def pipeline(self, port, *commands, timeout=5):
        """pipeline() to the node on `port`, authenticated."""
        return pipeline(port, commands, timeout=timeout, password=self.password)

    def ports(self):
        return list(self.procs)

    def alive(self, port):
        p = self.procs.get(port)
        return p is not None and p.poll() is None

    def seeds(self):
        return ",".join("127.0.0.1:%d" % p for p in self.procs if self.alive(p))

    def slots(self):
        """[(first, last, master port, [replica ports])] from a live node."""
        for p in self.procs:
            if not self.alive(p):
                continue
            try:
                r = self.command(p, "CLUSTER", "SLOTS", timeout=2)
            except (OSError, RuntimeError):
                continue
            return sorted((int(x[0]), int(x[1]), int(x[2][1]), [int(y[1]) for y in x[3:]])
                          for x in r)
        raise AssertionError("no live cluster node answers CLUSTER SLOTS")

    def masters(self):
        return sorted({r[2] for r in self.slots()})

    def replica_of(self, master):
        """The port of a replica the master feeds now (its INFO replication),
        or None."""
        try:
            info = self.command(master, "INFO", "replication", timeout=2)
        except (OSError, RuntimeError):
            return None
        for line in info.splitlines():
            if line.startswith("slave") and "port=" in line:
                fields = dict(kv.split("=", 1) for kv in line.split(":", 1)[1].split(","))
                return int(fields["port"])
        return None

    def owner_of_key_matching(self, pattern):
        """The master port holding a key matching `pattern` (KEYS), or None."""
        for m in self.masters():
            if self.command(m, "KEYS", pattern):
                return m
        return None

    def ok(self):
        agreed = None
        for p in self.procs:
            if not self.alive(p):
                continue
            try:
                info = self.command(p, "CLUSTER", "INFO", timeout=2)
                r = self.command(p, "CLUSTER", "SLOTS", timeout=2)
            except (OSError, RuntimeError):
                return False
            if "cluster_state:ok" not in info:
                return False
            # With each range's replicas: right after `redis-cli --cluster
            # create`, most nodes still list the replicas as empty masters
            # (until the replicas' gossip reaches them). A client that read
            # the map then would not know which node can take over, and a
            # failover test would depend on how fast gossip went.
            ranges = sorted((int(x[0]), int(x[1]), int(x[2][1]),
                             tuple(sorted(int(y[1]) for y in x[3:]))) for x in r)
            if sum(b - a + 1 for a, b, _, _ in ranges) != 16384:
                return False
            if any(not self.alive(m) for _, _, m, _ in ranges):
                return False
            if agreed is not None and agreed != ranges:
                return False
            agreed = ranges
        if agreed is None:
            return False
        # Every live node a master of the map or a replica in sync with one
        # (WAIT counts only those), and every node's map lists each of them.
        placed = 0
        for m, listed in {(r[2], r[3]) for r in agreed}:
            try:
                info = self.command(m, "INFO", "replication", timeout=2)
            except (OSError, RuntimeError):
                return False
            online = info.count("state=online")
            if online != len(listed):
                return False
            placed += 1 + online
        return placed == sum(1 for p in self.procs if self.alive(p))

    def wait_ok(self, limit=30):
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self.ok():
                return
            time.sleep(0.05)
        raise AssertionError("the cluster did not become ok within %ss" % limit)

    def kill(self, port):
        """SIGKILL, reaped; the port and its bus port held (procs.PortHold:
        connects are refused) until restart() or stop()."""
        self.procs[port].kill()
        self.procs[port].wait(timeout=10)
        self.holds[port] = [PortHold(port), PortHold(port + 10000)]

    def pause(self, port):
        """SIGSTOP: the node neither reads nor answers (its peers' data piles
        up in its socket buffers) until resume()."""
        self.procs[port].send_signal(signal.SIGSTOP)
        self.paused.add(port)

    def resume(self, port):
        """SIGCONT after pause()."""
        if port in self.paused:
            self.paused.discard(port)
            if self.procs[port].poll() is None:
                self.procs[port].send_signal(signal.SIGCONT)

    def restart(self, port):
        """The same port and nodes.conf: it rejoins (as a replica if it was replaced)."""
        self._start(port)

    def stop(self):
        for port in list(self.paused):
            self.resume(port)  # SIGCONT first: a stopped process is then killed cleanly
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
        for port in list(self.holds):
            self._release(port)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
