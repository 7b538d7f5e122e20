"""What the Redis link's credential and TLS tests share (chat and push):
the password file (mode 600), the test's own redis-server with a password,
an ACL user or mutual TLS (tools/pylib/redis_server.py), and the checks that
a password never shows: not in the process's command line (what ps shows),
not in its stderr. Standard library only."""
import os
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                                "pylib"))
from redis_server import RedisServer, TlsFiles  # noqa: E402,F401

PASSWORD = "s3cret-redis-pw-4711"
WRONG = "not-the-redis-pw-0815"


def secret_file(text, mode=0o600):
    """A file holding `text` and a newline, with `mode`; its path."""
    fd, path = tempfile.mkstemp(prefix="hw-redis-pw-")
    os.write(fd, (text + "\n").encode())
    os.close(fd)
    os.chmod(path, mode)
    return path


def tls_files():
    return TlsFiles(tempfile.mkdtemp(prefix="hw-redis-tls-"))


def tls_flags(tls):
    return ("--redis-tls-ca", tls.ca, "--redis-tls-cert", tls.client_cert,
            "--redis-tls-key", tls.client_key)


def assert_not_shown(server, *secrets):
    """None of `secrets` is on the running process's command line (what ps
    shows); returns its stderr after it stopped, checked too."""
    with open("/proc/%d/cmdline" % server.proc.pid, "rb") as f:
        cmdline = f.read().decode(errors="replace")
    for s in secrets:
        assert s not in cmdline, "the password is on the command line"
    server.stop()
    err = server.proc.stderr.read()
    for s in secrets:
        assert s not in err, "the password is in the log: %s" % err
    return err


class CountingForwarder:
    """A loopback TCP forwarder to 127.0.0.1:`port` that counts the
    connections it accepts: how often a link tried, where Redis cannot tell
    (it does not count TLS connections whose handshake failed). Threads, all
    daemons; close() stops accepting."""

    def __init__(self, port):
        self.lst = socket.create_server(("127.0.0.1", 0))
        self.port = self.lst.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._accept, args=(port,), daemon=True).start()

    def address(self):
        return "127.0.0.1:%d" % self.port

    def wait_accepted(self, n, timeout=20):
        deadline = time.monotonic() + timeout
        while self.accepted < n:
            assert time.monotonic() < deadline, "only %d connections came" % self.accepted
            time.sleep(0.05)

    def _accept(self, port):
        while True:
            try:
                down, _ = self.lst.accept()
                up = socket.create_connection(("127.0.0.1", port), timeout=5)
            except OSError:
                return
            self.accepted += 1
            for a, b in ((down, up), (up, down)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        for sk in (a, b):
            try:
                sk.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.lst.close()


def check_refused_tls_is_one_warning(program, start_node, while_refused):
    """A Redis certificate the node cannot verify (another CA): one warning
    line naming the address and OpenSSL's reason, however often its links
    retry. `start_node(redis_address, *flags)` starts the node (a Server);
    `while_refused(node)` checks what the program does meanwhile."""
    tls, other = tls_files(), tls_files()
    with RedisServer(tls=tls) as r:
        fwd = CountingForwarder(r.port)  # counts the attempts Redis does not
        node = start_node(fwd.address(), "--redis-tls-ca", other.ca, "--redis-tls-cert",
                          tls.client_cert, "--redis-tls-key", tls.client_key)
        try:
            # Backoff 100 ms doubling: six attempts are retries of each link.
            fwd.wait_accepted(6)
            while_refused(node)
        finally:  # stopped by PID whatever failed
            node.stop()
            fwd.close()
        err = node.proc.stderr.read()
    line = ("%s: warning: redis link %s: tls handshake failed: certificate verify failed"
            % (program, fwd.address()))
    assert err.count(line) == 1, err
    assert err.count("tls handshake failed") == 1, err
