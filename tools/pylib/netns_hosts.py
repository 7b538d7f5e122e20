"""Hosts on one machine: network namespaces on one bridge, for the load
harness across hosts and the fault runner (tools/hosts is its command line,
tools/faults its main user). Root only. Standard library only.

    sys.path.insert(0, os.path.join(ROOT, "tools", "pylib"))
    import netns_hosts
    with netns_hosts.HostSet.up(3, "t1234") as hosts:   # h1, h2, h3
        hosts.address("h2")                              # "198.18.4.2"
        p = hosts.popen("h2", ["redis-server", ...])     # runs inside h2
        hosts.partition(["h1"], ["h2", "h3"])            # both ways; one_way=True: h1 -> h2,h3
        hosts.heal()
    # gone: every process in the set killed, namespaces deleted, checked

What it makes, for a set NAME of N hosts (every name starts with PREFIX,
which this module owns; nothing else on the machine is touched):

    hwh-NAME-sw    a namespace holding the bridge `sw0` and one veth end `vI`
                   per host; the nftables table `bridge hwh` (partitions) and
                   the tbf qdiscs (bandwidth) live here
    hwh-NAME-hI    host I: loopback and `eth0` (the veth's other end) with its
                   addresses; no default route, so nothing leaves the set

The root namespace gets no interface, address, route or rule at all: a
packet from a host can only reach another host of its set, so traffic never
leaves the namespaces (and each namespace's loopback). Addresses come from
198.18.0.0/15 (RFC 2544's benchmarking range, routed nowhere): set slot k
(0..127) owns the /22 at 198.18.0.0 + 1024 k; host I's address j (0..3) is
that + 256 j + I, so the first is 198.18.(4k).I.

Cleanup, even after a crash:
  - down() kills every process in the set's namespaces (SIGCONT, SIGKILL),
    deletes the namespaces (that destroys their links, bridge, qdiscs and
    rules) and checks that no process is left in any of them;
  - a set made for an owner process (owner_pid) gets a reaper: a detached
    process that waits for the owner's death (pidfd) and then runs down(),
    so a SIGKILLed owner leaves nothing behind;
  - every up(), down() and list() first sweeps: sets whose owner is gone,
    and namespaces with the prefix that no state file accounts for.
State: one JSON file per set in STATE_DIR, written under a lock (flock).
"""
import contextlib
import fcntl
import ipaddress
import json
import os
import re
import select
import signal
import subprocess
import sys
import time

PREFIX = "hwh-"
STATE_DIR = "/run/heartwheel-hosts"
RANGE = ipaddress.ip_network("198.18.0.0/15")
SLOT_SIZE = 1024  # a /22 per set
SLOTS = RANGE.num_addresses // SLOT_SIZE  # 128
MAX_HOSTS = 250
MAX_ADDRESSES = 4
NAME_RE = re.compile(r"^[a-z0-9]{1,10}$")


class HostsError(Exception):
    """Something the user can act on: not root, a bad name, a command that failed."""


def require_root():
    if os.geteuid() != 0:
        raise HostsError("must run as root: network namespaces, veth links and nftables rules "
                         "need CAP_NET_ADMIN (run it with sudo)")


def _run(argv, stdin=None, check=True):
    p = subprocess.run(argv, input=stdin, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise HostsError("%s: %s" % (" ".join(argv), (p.stderr or p.stdout).strip()))
    return p


def _ns_names():
    """Every network namespace name /run/netns holds."""
    try:
        return sorted(os.listdir("/run/netns"))
    except FileNotFoundError:
        return []


def _ns_inode(ns):
    try:
        return os.stat("/run/netns/" + ns).st_ino
    except OSError:
        return None


def _pids_in(inodes):
    """Processes whose network namespace is one of `inodes`."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.stat("/proc/%s/ns/net" % d).st_ino in inodes:
                out.append(int(d))
        except OSError:
            pass
    return out


def _setns(fd):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
        raise HostsError("setns: %s" % os.strerror(ctypes.get_errno()))


def _start_time(pid):
    """The process's start time in clock ticks (tells a pid from its reuse), or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


@contextlib.contextmanager
def _locked():
    os.makedirs(STATE_DIR, exist_ok=True)
    with open(os.path.join(STATE_DIR, ".lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _state_path(name):
    return os.path.join(STATE_DIR, name + ".json")


def _read_states():
    out = {}
    try:
        files = os.listdir(STATE_DIR)
    except FileNotFoundError:
        return out
    for f in files:
        if f.endswith(".json"):
            try:
                with open(os.path.join(STATE_DIR, f)) as fh:
                    out[f[:-5]] = json.load(fh)
            except (OSError, ValueError):
                out[f[:-5]] = None  # unreadable: treated as stale
    return out


def _owner_alive(state):
    pid = state.get("owner_pid")
    if pid is None:
        return True  # a set made from the command line lives until `down`
    return _start_time(pid) == state.get("owner_start")


def _kill_and_delete(namespaces):
    """SIGCONT + SIGKILL every process in `namespaces`, delete them, and check
    that no process is left in any of them (a process would keep a deleted
    namespace, and its links, alive unseen)."""
    inodes = {i for i in (_ns_inode(ns) for ns in namespaces) if i is not None}
    deadline = time.monotonic() + 10
    while inodes:
        pids = _pids_in(inodes)
        if not pids:
            break
        for pid in pids:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        if time.monotonic() > deadline:
            raise HostsError("processes %s in namespaces %s do not die" % (pids, namespaces))
        time.sleep(0.02)
    for ns in namespaces:
        if ns in _ns_names():
            _run(["ip", "netns", "delete", ns])
    left = _pids_in(inodes)
    if left:
        raise HostsError("processes %s still in the deleted namespaces %s" % (left, namespaces))


def _sweep():
    """Under the lock: removes sets whose owner died and namespaces with our
    prefix that no state file accounts for (a crash inside up())."""
    states = _read_states()
    for name, state in states.items():
        if state is None or not _owner_alive(state):
            _teardown(name)
    known = {name for name, s in _read_states().items() if s is not None}
    orphans = [ns for ns in _ns_names()
               if ns.startswith(PREFIX) and ns[len(PREFIX):].rsplit("-", 1)[0] not in known]
    if orphans:
        _kill_and_delete(orphans)


def _teardown(name):
    _kill_and_delete([ns for ns in _ns_names() if ns.startswith("%s%s-" % (PREFIX, name))])
    try:
        os.unlink(_state_path(name))
    except FileNotFoundError:
        pass


def _spawn_reaper(name, pid):
    """A detached process (own session: a signal to the owner's group does not
    reach it) that runs down() for `name` once `pid` has died."""
    subprocess.Popen([sys.executable or "/usr/bin/python3", os.path.abspath(__file__),
                      "--reap", name, str(pid)],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)


def _reap_main(name, pid):
    try:
        fd = os.pidfd_open(pid)
        select.select([fd], [], [])
    except ProcessLookupError:
        pass
    with _locked():
        state = _read_states().get(name)
        if state is not None and state.get("owner_pid") == pid:
            _teardown(name)


class HostSet:
    """A set of hosts; see the module's comment. Made by up(), found by
    attach(); ends with down() (also on leaving a `with` block)."""

    def __init__(self, state):
        self.name = state["name"]
        self.slot = state["slot"]
        self.count = state["hosts"]
        self.addresses = state["addresses"]
        self.state = state

    # ---------------------------------------------------------- life cycle
    @classmethod
    def up(cls, count, name, addresses=1, owner_pid=None):
        """Makes hosts h1..hN. owner_pid: the set dies with that process (a
        reaper process watches it); None: it lives until down(). Raises
        HostsError: not root, a bad name or count, the name taken, no slot left,
        or a command that failed (then nothing of it is left)."""
        require_root()
        if not NAME_RE.match(name):
            raise HostsError("set name %r: 1 to 10 of a-z and 0-9" % name)
        if not 1 <= count <= MAX_HOSTS:
            raise HostsError("hosts: 1 to %d, not %d" % (MAX_HOSTS, count))
        if not 1 <= addresses <= MAX_ADDRESSES:
            raise HostsError("addresses per host: 1 to %d, not %d" % (MAX_ADDRESSES, addresses))
        with _locked():
            _sweep()
            states = _read_states()
            if name in states:
                raise HostsError("set %r is up already (tools/hosts --set %s down)" % (name, name))
            used = {s["slot"] for s in states.values() if s}
            free = [k for k in range(SLOTS) if k not in used]
            if not free:
                raise HostsError("all %d address slots of 198.18.0.0/15 are in use" % SLOTS)
            state = {"name": name, "slot": free[0], "hosts": count, "addresses": addresses,
                     "owner_pid": owner_pid,
                     "owner_start": _start_time(owner_pid) if owner_pid else None,
                     "limits": {}}
            # The state file first: a crash below leaves namespaces it accounts for.
            with open(_state_path(name), "w") as f:
                json.dump(state, f)
            hosts = cls(state)
            try:
                hosts._make()
            except BaseException:
                _teardown(name)
                raise
        if owner_pid:
            _spawn_reaper(name, owner_pid)
        return hosts

    @classmethod
    def attach(cls, name):
        """The set `name` made earlier (by this or another process)."""
        require_root()
        with _locked():
            _sweep()
            state = _read_states().get(name)
        if not state:
            raise HostsError("no set %r is up (tools/hosts --set %s up N)" % (name, name))
        return cls(state)

    def down(self):
        """Kills every process on the hosts and removes everything of the set."""
        with _locked():
            _teardown(self.name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.down()

    def _make(self):
        sw = self.switch_ns()
        _run(["ip", "netns", "add", sw])
        _run(["ip", "-n", sw, "link", "set", "dev", "lo", "up"])
        _run(["ip", "-n", sw, "link", "add", "name", "sw0", "type", "bridge"])
        _run(["ip", "-n", sw, "link", "set", "dev", "sw0", "up"])
        # The partitions' table: frames between two ports of the bridge.
        _run(["ip", "netns", "exec", sw, "nft", "-f", "-"], stdin=(
            "table bridge hwh {\n"
            "  chain forward { type filter hook forward priority 0; policy accept; }\n"
            "}\n"))
        plen = 32 - (SLOT_SIZE - 1).bit_length()
        for i in range(1, self.count + 1):
            ns, port = self.ns(i), "v%d" % i
            _run(["ip", "netns", "add", ns])
            # Made inside the switch namespace, the peer straight into the host's:
            # no link ever exists in the root namespace, not even for a moment.
            _run(["ip", "-n", sw, "link", "add", "name", port, "type", "veth", "peer", "name", "eth0",
                  "netns", ns])
            _run(["ip", "-n", sw, "link", "set", "dev", port, "master", "sw0", "up"])
            _run(["ip", "-n", ns, "link", "set", "dev", "lo", "up"])
            # IPv4 only: no router solicitations or DAD chatter on the bridge.
            _run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
            for j in range(self.addresses):
                _run(["ip", "-n", ns, "addr", "add",
                      "%s/%d" % (self.address(i, j), plen), "dev", "eth0"])
            _run(["ip", "-n", ns, "link", "set", "dev", "eth0", "up"])

    # ---------------------------------------------------------- names
    def switch_ns(self):
        return "%s%s-sw" % (PREFIX, self.name)

    def index(self, host):
        """'h3' (or 3) -> 3; HostsError for a host the set does not have."""
        m = re.fullmatch(r"h?(\d+)", str(host))
        if not m or not 1 <= int(m.group(1)) <= self.count:
            raise HostsError("no host %r in set %r (h1..h%d)" % (host, self.name, self.count))
        return int(m.group(1))

    def hosts(self):
        return ["h%d" % i for i in range(1, self.count + 1)]

    def ns(self, host):
        return "%s%s-h%d" % (PREFIX, self.name, self.index(host))

    def address(self, host, j=0):
        """Host's address j (0 .. addresses-1) as a string."""
        if not 0 <= j < self.addresses:
            raise HostsError("host addresses are 0..%d" % (self.addresses - 1))
        base = int(RANGE.network_address) + self.slot * SLOT_SIZE
        return str(ipaddress.ip_address(base + 256 * j + self.index(host)))

    def all_addresses(self, host):
        return [self.address(host, j) for j in range(self.addresses)]

    # ---------------------------------------------------------- processes
    def argv(self, host, argv):
        """`argv` to run inside `host` (ip netns exec execs it: the pid is the command's)."""
        return ["ip", "netns", "exec", self.ns(host), *argv]

    def popen(self, host, argv, **kw):
        return subprocess.Popen(self.argv(host, argv), **kw)

    def run(self, host, argv, **kw):
        return subprocess.run(self.argv(host, argv), **kw)

    @contextlib.contextmanager
    def inside(self, host):
        """This thread in `host`'s network namespace for the block: sockets
        made inside stay there (a runner in the machine's namespace has no
        route to the hosts). setns(2) moves only the calling thread."""
        back = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        there = os.open("/run/netns/" + self.ns(host), os.O_RDONLY)
        try:
            _setns(there)
            try:
                yield
            finally:
                _setns(back)
        finally:
            os.close(there)
            os.close(back)

    def pids(self, host=None):
        """Processes running on `host` (every host of the set: None)."""
        names = [self.ns(host)] if host else [self.ns(h) for h in self.hosts()]
        return _pids_in({i for i in (_ns_inode(n) for n in names) if i is not None})

    # ---------------------------------------------------------- faults
    def partition(self, side_a, side_b, one_way=False):
        """Drops every frame from each host of side_a to each host of side_b
        and, unless one_way, back. Adds to the partitions in place."""
        a = [self.index(h) for h in side_a]
        b = [self.index(h) for h in side_b]
        if set(a) & set(b):
            raise HostsError("a host cannot be partitioned from itself")
        rules = []
        for x in a:
            for y in b:
                rules.append((x, y))
                if not one_way:
                    rules.append((y, x))
        script = "".join('add rule bridge hwh forward iifname "v%d" oifname "v%d" counter drop\n'
                         % r for r in rules)
        _run(["ip", "netns", "exec", self.switch_ns(), "nft", "-f", "-"], stdin=script)

    def heal(self):
        """Removes every partition and brings every isolated host's link back up."""
        _run(["ip", "netns", "exec", self.switch_ns(), "nft", "flush", "chain", "bridge", "hwh",
              "forward"])
        for i in range(1, self.count + 1):
            _run(["ip", "-n", self.switch_ns(), "link", "set", "dev", "v%d" % i, "up"])

    def isolate(self, host):
        """Cuts `host` from every other by taking its link down (the host sees
        its eth0 carrier go; sockets stay, packets queue and are dropped)."""
        _run(["ip", "-n", self.switch_ns(), "link", "set", "dev", "v%d" % self.index(host), "down"])

    def partitions(self):
        """[(from host, to host, packets dropped)] in force now."""
        p = _run(["ip", "netns", "exec", self.switch_ns(), "nft", "list", "chain", "bridge",
                  "hwh", "forward"])
        return [("h" + m.group(1), "h" + m.group(2), int(m.group(3))) for m in re.finditer(
            r'iifname "v(\d+)" oifname "v(\d+)" counter packets (\d+)', p.stdout)]

    def limit(self, host, rate, burst="64kb"):
        """At most `rate` (tc's units: 10mbit, 1gbit) each way for `host`: a
        tbf qdisc on its eth0 (outgoing) and on its bridge port (incoming)."""
        i = self.index(host)
        for argv in (["ip", "netns", "exec", self.ns(host), "tc"], ["ip", "netns", "exec",
                                                                   self.switch_ns(), "tc"]):
            dev = "eth0" if argv[3] == self.ns(host) else "v%d" % i
            _run(argv + ["qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate,
                         "burst", burst, "latency", "100ms"])

    def unlimit(self, host):
        i = self.index(host)
        _run(["ip", "netns", "exec", self.ns(host), "tc", "qdisc", "del", "dev", "eth0", "root"],
             check=False)
        _run(["ip", "netns", "exec", self.switch_ns(), "tc", "qdisc", "del", "dev", "v%d" % i,
              "root"], check=False)

    def limits(self):
        """{host: rate} of the tbf qdiscs in force."""
        out = {}
        for h in self.hosts():
            p = _run(["ip", "netns", "exec", self.ns(h), "tc", "qdisc", "show", "dev", "eth0"],
                     check=False)
            m = re.search(r"tbf .*?rate (\S+)", p.stdout)
            if m:
                out[h] = m.group(1)
        return out


def sets():
    """{name: state} of every set up now (after a sweep)."""
    require_root()
    with _locked():
        _sweep()
        return {n: s for n, s in _read_states().items() if s}


def leftovers(name=None):
    """What of a set (or of any set: None) is still on the machine: namespace
    names, links in the root namespace, state files. Empty after down()."""
    pre = PREFIX + (name + "-" if name else "")
    out = [ns for ns in _ns_names() if ns.startswith(pre)]
    links = _run(["ip", "-o", "link", "show"]).stdout
    out += [line.split(":")[1].strip() for line in links.splitlines() if PREFIX in line]
    tables = _run(["nft", "list", "tables"], check=False).stdout
    out += ["nft " + t for t in tables.splitlines() if "hwh" in t]
    if name and os.path.exists(_state_path(name)):
        out.append(_state_path(name))
    return out


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "--reap":
    _reap_main(sys.argv[2], int(sys.argv[3]))
