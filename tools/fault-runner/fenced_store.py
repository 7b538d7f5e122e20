#!/usr/bin/python3
"""A store that checks fencing tokens (Kleppmann, "How to do distributed
locking"): it remembers the highest token of any write it accepted and
refuses a write with a lower one. The lock-partition scenario's storage;
heartwheel-fault-lock writes to it. Runs inside a host.

    fenced_store.py HOST:PORT HISTORY.jsonl

Protocol, one line each way: "W TOKEN WRITER SEQ\\n" -> "OK\\n", or
"STALE MAX\\n" when TOKEN < MAX. Every write, in the order the store decided
it, is one `store` event in HISTORY (token, writer, seq, result accepted |
rejected, max_seen), which the checker recounts without trusting the store.
Prints "listening" once bound; SIGTERM ends it.
"""
import asyncio
import json
import signal
import sys
import time


class Store:
    def __init__(self, path):
        self.top = 0
        self.out = open(path, "a", buffering=1)

    def write(self, token, writer, seq):
        accepted = token >= self.top
        if accepted:
            self.top = token
        self.out.write(json.dumps({
            "t": round(time.monotonic() * 1000, 3), "type": "store", "proc": "store",
            "token": token, "writer": writer, "seq": seq,
            "result": "accepted" if accepted else "rejected", "max_seen": self.top}) + "\n")
        return "OK\n" if accepted else "STALE %d\n" % self.top

    async def serve(self, reader, writer):
        try:
            while line := await reader.readline():
                parts = line.decode().split()
                if len(parts) != 4 or parts[0] != "W" or not parts[1].isdigit():
                    writer.write(b"ERROR bad request\n")
                else:
                    writer.write(self.write(int(parts[1]), parts[2], int(parts[3])).encode())
                await writer.drain()
        except (ConnectionError, ValueError):
            pass
        finally:
            writer.close()


async def main(listen, path):
    host, port = listen.rsplit(":", 1)
    store = Store(path)
    server = await asyncio.start_server(store.serve, host, int(port))
    print("listening", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    server.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
