"""Small process and port helpers shared by the Python tools under tools/
(slow-attack, reconnect-storm). Standard library only; Linux /proc.

    sys.path.insert(0, os.path.join(ROOT, "tools", "pylib"))
    import procs
"""
import os
import socket


def free_port():
    """A loopback TCP port nothing listens on right now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


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
