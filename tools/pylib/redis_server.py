"""One redis-server for the Python tests and tools, optionally with a
password (requirepass, or an ACL user allowed everything with the default
user switched off) and TLS (mutual: redis-server's tls-auth-clients is on by
default), on a free loopback port, no persistence, stopped by PID. The TLS
certificates are made by the `openssl` command (a CA, a server certificate
for IP 127.0.0.1, a client certificate). Standard library only.

    sys.path.insert(0, os.path.join(ROOT, "tools", "pylib"))
    from redis_server import RedisServer, TlsFiles
    tls = TlsFiles(tmpdir)                       # ca.crt, server.*, client.*
    with RedisServer(password="pw", user="chat", tls=tls) as r:
        r.address()                              # "127.0.0.1:PORT" for --redis
        r.command("PUBLISH", "ch", "x")          # authenticated, over TLS
"""
import os
import shutil
import ssl
import subprocess
import tempfile
import time

from procs import PortHold, free_port
from tls_files import TlsFiles  # noqa: F401 (the tests import it from here)
from redis_cluster import command as _command


class RedisServer:
    """redis-server on a free port: kill(), restart() on the same port,
    freeze()/thaw() (SIGSTOP/SIGCONT), command(), stop() by PID."""

    def __init__(self, password=None, user=None, tls=None, loglevel="warning"):
        if not shutil.which("redis-server"):
            raise SystemExit("redis-server is missing: run tools/install-deps")
        self.password, self.user, self.tls = password, user, tls
        self.loglevel = loglevel
        self.dir = tempfile.mkdtemp(prefix="hw-redis-")
        self.proc = None
        self._hold = None  # the port between kill() and restart()
        self._client_tls = tls.client_context() if tls else None
        # The port is found free, then redis-server binds it: one taken in
        # between makes it exit at once, and then another port will do (as
        # tests/integration/redis_server.cpp does).
        for _ in range(5):
            self.port = free_port()
            if self._run():
                return
            if self.proc.poll() is None:
                break  # running but silent: another port would not help
        self._fail()

    def argv(self):
        a = ["/usr/bin/redis-server", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.dir, "--loglevel", self.loglevel]
        if self.tls:
            a += ["--port", "0", "--tls-port", str(self.port),
                  "--tls-cert-file", self.tls.server_cert, "--tls-key-file", self.tls.server_key,
                  "--tls-ca-cert-file", self.tls.ca]
        else:
            a += ["--port", str(self.port)]
        if self.password and self.user:
            a += ["--user", "default", "off",
                  "--user", self.user, "on", ">" + self.password, "~*", "&*", "+@all"]
        elif self.password:
            a += ["--requirepass", self.password]
        return a

    def start(self):
        """Starts redis-server on self.port (again, after kill()) and waits
        until it answers PING; AssertionError, with its exit status and log,
        if it does not within 10 s."""
        if not self._run():
            self._fail()

    def _log(self):
        return os.path.join(self.dir, "redis.log")

    def _run(self):
        """True once redis-server on self.port answers PING; False if it
        exits first or 10 s pass."""
        with open(self._log(), "ab") as log:
            self.proc = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if self.command("PING", timeout=1) == "PONG":
                    self._release()
                    return True
            except (OSError, RuntimeError, ssl.SSLError):
                pass
            time.sleep(0.05)
        return False

    def _fail(self):
        status = self.proc.poll()
        try:
            with open(self._log(), errors="replace") as f:
                said = f.read()[-2000:]
        except OSError:
            said = ""
        self.stop()
        raise AssertionError("redis-server did not start on %d (%s): %s" % (
            self.port, "no PONG in 10 s" if status is None else "exit status %d" % status, said))

    def address(self):
        return "127.0.0.1:%d" % self.port

    def command(self, *args, timeout=5):
        return _command(self.port, *args, timeout=timeout, password=self.password,
                        user=self.user, tls=self._client_tls)

    def kill(self):
        """SIGKILL, reaped; the port held (procs.PortHold: connects are
        refused) until restart() has Redis answering on it again."""
        self.proc.kill()
        self.proc.wait(timeout=10)
        self._hold = PortHold(self.port)

    def _release(self):
        if self._hold:
            self._hold.release()
            self._hold = None

    def restart(self):
        self.start()

    def freeze(self):
        self.proc.send_signal(19)  # SIGSTOP

    def thaw(self):
        self.proc.send_signal(18)  # SIGCONT

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(18)
            self.proc.kill()
        if self.proc:
            self.proc.wait(timeout=10)
        self._release()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
