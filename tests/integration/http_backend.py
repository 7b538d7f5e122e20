#!/usr/bin/python3
"""An aiohttp application for http::Client's tests (http_client_test.cpp):
a real, independent HTTP/1.1 server with keep-alive, chunked responses and
handlers that misbehave on purpose.

Usage: http_backend.py [--all-503]   (binds 127.0.0.1:0, prints "listening on 127.0.0.1:PORT")

With --all-503 every request is answered 503 (a sick backend).

  GET  /hello           "hello" (Content-Length)
  GET  /chunked?n=N     N chunks of "chunk-K;" (Transfer-Encoding: chunked)
  GET  /stall           Content-Length 1000, 100 bytes, then nothing for 60 s
  GET  /slow?ms=M       "slow" after M milliseconds
  GET  /status?code=C   an empty response with status C
  POST /echo            {"method":..., "body":..., "content_type":...} (JSON)
  GET|POST /reset?key=K the first request with key K: the connection is cut
                        without an answer; later ones: "second try"
  GET  /connections     how many connections have brought requests
"""
import asyncio
import json
import sys

from aiohttp import web

peers = set()  # the (host, port) of every connection that brought a request
reset_keys = set()


@web.middleware
async def note_peer(request, handler):
    peers.add(request.transport.get_extra_info("peername"))
    if "--all-503" in sys.argv:
        return web.Response(status=503, text="sick")
    return await handler(request)


async def hello(request):
    return web.Response(text="hello")


async def chunked(request):
    n = int(request.query.get("n", "5"))
    resp = web.StreamResponse()
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    for k in range(n):
        await resp.write(("chunk-%d;" % k).encode())
        await asyncio.sleep(0.001)
    await resp.write_eof()
    return resp


async def stall(request):
    resp = web.StreamResponse(headers={"Content-Length": "1000"})
    await resp.prepare(request)
    await resp.write(b"x" * 100)
    await asyncio.sleep(60)
    return resp


async def slow(request):
    await asyncio.sleep(int(request.query.get("ms", "100")) / 1000)
    return web.Response(text="slow")


async def status(request):
    return web.Response(status=int(request.query["code"]))


async def echo(request):
    body = await request.text()
    return web.json_response({"method": request.method, "body": body,
                              "content_type": request.headers.get("Content-Type", "")})


async def reset(request):
    key = request.query["key"]
    if key not in reset_keys:
        reset_keys.add(key)
        request.transport.abort()  # no answer: the connection is cut
        await asyncio.sleep(0.1)
    return web.Response(text="second try")


async def count(request):
    return web.Response(text=str(len(peers)))


async def main():
    app = web.Application(middlewares=[note_peer])
    app.router.add_get("/hello", hello)
    app.router.add_get("/chunked", chunked)
    app.router.add_get("/stall", stall)
    app.router.add_get("/slow", slow)
    app.router.add_get("/status", status)
    app.router.add_post("/echo", echo)
    app.router.add_get("/reset", reset)
    app.router.add_post("/reset", reset)
    app.router.add_get("/connections", count)
    await serve(app)


async def serve(app):
    """Serves `app` on a free loopback port, printed as "listening on
    127.0.0.1:PORT", until the process is stopped (also the proxies' test
    backend's, centrifugo_proxy_backend.py)."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    print("listening on 127.0.0.1:%d" % port, flush=True)
    await asyncio.Event().wait()


def run(coroutine):
    try:
        asyncio.run(coroutine)
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    run(main())
