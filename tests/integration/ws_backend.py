#!/usr/bin/python3
"""A python3-websockets server for ws::Client's tests (ws_client_test.cpp):
an independent WebSocket implementation to talk to.

Usage: ws_backend.py   (binds 127.0.0.1:0, prints "listening on 127.0.0.1:PORT")

  any path        echoes every message; "close-me" is answered with close
                  4001 "asked"; subprotocols chat.v2 and chat.v1
  /forbidden      refuses the handshake with 403
  /connections    (a message on any path) "N": handshakes accepted so far
"""
import asyncio
import http

import websockets

accepted = 0


async def handler(ws, path=None):
    global accepted
    accepted += 1
    try:
        async for msg in ws:
            if msg == "close-me":
                await ws.close(4001, "asked")
                return
            if msg == "connections":
                await ws.send(str(accepted))
                continue
            await ws.send(msg)
    except websockets.ConnectionClosed:
        pass  # the tests cut connections on purpose


def process_request(path, headers):
    if path == "/forbidden":
        return (http.HTTPStatus.FORBIDDEN, [("Content-Type", "text/plain")], b"forbidden\n")
    return None


async def main():
    async with websockets.serve(handler, "127.0.0.1", 0, subprotocols=["chat.v2", "chat.v1"],
                                process_request=process_request, ping_interval=None,
                                max_size=None) as server:
        port = server.sockets[0].getsockname()[1]
        print("listening on 127.0.0.1:%d" % port, flush=True)
        await asyncio.Future()


if __name__ == "__main__":
    asyncio.run(main())
