"""The processes of a fault run, on hosts (netns_hosts.HostSet): each one's
output in RUN_DIR/NAME.log, started and stopped by PID; redis-server, a
Redis Cluster of one node per host, heartwheel-chat and heartwheel-push
nodes. Whatever is left at the end dies with the hosts (HostSet.down kills
every process in its namespaces)."""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from redis_cluster import command as _redis_command  # noqa: E402

REDIS_PORT = 6379


class ServiceError(Exception):
    pass


class Services:
    def __init__(self, hosts, run_dir, build_dir, binaries=None):
        self.hosts, self.dir, self.build = hosts, run_dir, build_dir
        self.binaries = binaries or {}  # program name -> path, over BUILD_DIR/bin/NAME
        self.procs = {}  # name -> (host, Popen)

    def bin(self, name):
        path = self.binaries.get(name) or os.path.join(self.build, "bin", name)
        if not os.access(path, os.X_OK):
            raise ServiceError("%s is missing: build it (cmake --build %s --target %s) or "
                               "name it (--bin %s=PATH)" % (path, self.build, name, name))
        return os.path.abspath(path)

    def log_path(self, name):
        return os.path.join(self.dir, name + ".log")

    def start(self, name, host, argv, wait_line=None, timeout=20):
        """Starts argv on host; with wait_line, returns once its output holds
        that text (ServiceError if it exits or `timeout` passes first)."""
        with open(self.log_path(name), "ab") as log:
            p = self.hosts.popen(host, argv, stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
        self.procs[name] = (host, p)
        if wait_line:
            self.wait_for(name, lambda text: wait_line in text, timeout)
        return p

    def output(self, name):
        try:
            with open(self.log_path(name), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def wait_for(self, name, cond, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.output(name)
            if cond(text):
                return text
            if self.procs[name][1].poll() is not None:
                break
            time.sleep(0.05)
        raise ServiceError("%s did not start (exit %s): %s" % (
            name, self.procs[name][1].poll(), self.output(name)[-1500:]))

    def signal(self, name, sig):
        p = self.procs[name][1]
        if p.poll() is None:
            p.send_signal(sig)

    def stop(self, name, timeout=10):
        """SIGTERM, then SIGKILL after `timeout`; the exit status."""
        p = self.procs[name][1]
        if p.poll() is None:
            p.send_signal(signal.SIGCONT)
            p.terminate()
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
        return p.returncode

    def stop_all(self):
        for name, (_, p) in self.procs.items():
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
        for _, p in self.procs.values():
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                pass

    # ------------------------------------------------------------ redis
    def redis(self, host, addr, *args, port=REDIS_PORT, timeout=2):
        """One command to the redis-server at addr:port, sent from `host`."""
        with self.hosts.inside(host):
            return _redis_command(port, *args, host=addr, timeout=timeout)

    def start_redis(self, name, host, *extra, port=REDIS_PORT):
        addr = self.hosts.address(host)
        d = os.path.join(self.dir, name)
        os.makedirs(d, exist_ok=True)
        self.start(name, host, ["redis-server", "--bind", addr, "--port", str(port),
                                "--protected-mode", "no", "--save", "", "--appendonly", "no",
                                "--dir", d, "--loglevel", "warning", *extra])
        self.wait_redis(host, addr, port, name)
        return "%s:%d" % (addr, port)

    def wait_redis(self, host, addr, port, name, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.redis(host, addr, "PING", port=port) == "PONG":
                    return
            except (OSError, RuntimeError):
                pass
            if self.procs[name][1].poll() is not None:
                break
            time.sleep(0.05)
        raise ServiceError("redis %s did not answer: %s" % (name, self.output(name)[-1000:]))

    # ------------------------------------------------------------ cluster
    def start_cluster(self, redis_hosts, node_timeout_ms=2000):
        """One cluster node per host (port 6379 on each host's address),
        made a cluster of len/2 masters with one replica each. Returns a
        Cluster."""
        for i, h in enumerate(redis_hosts):
            self.start_redis("redis-%s" % h, h, "--cluster-enabled", "yes",
                             "--cluster-config-file", "nodes.conf",
                             "--cluster-node-timeout", str(node_timeout_ms),
                             "--repl-diskless-sync-delay", "0")
        addrs = ["%s:%d" % (self.hosts.address(h), REDIS_PORT) for h in redis_hosts]
        made = self.hosts.run(redis_hosts[0], ["redis-cli", "--cluster", "create", *addrs,
                                               "--cluster-replicas", "1", "--cluster-yes"],
                              capture_output=True, text=True, timeout=60)
        if made.returncode != 0:
            raise ServiceError("redis-cli --cluster create: %s%s" % (made.stdout[-2000:],
                                                                     made.stderr[-1000:]))
        c = Cluster(self, redis_hosts)
        c.wait_ok()
        return c

    # ------------------------------------------------------------ programs
    def start_chat(self, name, host, *flags, port=8080):
        addr = self.hosts.address(host)
        self.start(name, host, [self.bin("heartwheel-chat"), "--listen", "%s:%d" % (addr, port),
                                "--stats-json", os.path.join(self.dir, name + ".stats.json"),
                                *flags], wait_line="listening on")
        return "ws://%s:%d/ws" % (addr, port)

    def start_push(self, name, host, *flags, port=8080):
        addr = self.hosts.address(host)
        self.start(name, host, [self.bin("heartwheel-push"), "--listen", "%s:%d" % (addr, port),
                                "--stats-json", os.path.join(self.dir, name + ".stats.json"),
                                *flags], wait_line="listening on")
        return "%s:%d" % (addr, port)


class Cluster:
    """A Redis Cluster whose nodes are hosts: who is master, who replicates
    whom, whether the cluster agrees and is ok."""

    def __init__(self, services, redis_hosts):
        self.s, self.hosts = services, redis_hosts
        self.by_addr = {services.hosts.address(h): h for h in redis_hosts}

    def nodes(self, asked):
        """{host: (role, master host or None, flags)} as node `asked` sees it."""
        text = self.s.redis(asked, self.s.hosts.address(asked), "CLUSTER", "NODES")
        ids, out = {}, {}
        rows = [line.split() for line in text.splitlines() if line.strip()]
        for r in rows:
            ids[r[0]] = self.by_addr.get(r[1].split(":")[0])
        for r in rows:
            host = ids[r[0]]
            role = "master" if "master" in r[2] else "replica"
            out[host] = (role, ids.get(r[3]) if r[3] != "-" else None, r[2])
        return out

    def masters(self, asked=None):
        view = self.nodes(asked or self.hosts[0])
        return sorted(h for h, (role, _, flags) in view.items()
                      if role == "master" and "fail" not in flags and self._has_slots(h, asked))

    def _has_slots(self, host, asked):
        text = self.s.redis(asked or self.hosts[0], self.s.hosts.address(asked or self.hosts[0]),
                            "CLUSTER", "NODES")
        for line in text.splitlines():
            f = line.split()
            if f and self.by_addr.get(f[1].split(":")[0]) == host:
                return len(f) > 8
        return False

    def replica_of(self, master, asked=None):
        for h, (role, of, _) in self.nodes(asked or master).items():
            if role == "replica" and of == master:
                return h
        return None

    def ok(self, among=None):
        """Every node of `among` (default: all) says cluster_state:ok and
        they agree on who the masters are."""
        seen = None
        for h in among or self.hosts:
            try:
                info = self.s.redis(h, self.s.hosts.address(h), "CLUSTER", "INFO")
                if "cluster_state:ok" not in info:
                    return False
                masters = tuple(self.masters(h))
            except (OSError, RuntimeError):
                return False
            if seen is not None and masters != seen:
                return False
            seen = masters
        return True

    def wait_ok(self, limit=30, among=None):
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self.ok(among):
                return
            time.sleep(0.1)
        raise ServiceError("the cluster did not become ok within %ss" % limit)

    def seeds(self):
        return ",".join("%s:%d" % (self.s.hosts.address(h), REDIS_PORT) for h in self.hosts)
