#!/usr/bin/python3
"""The application's backend for heartwheel-chat's proxies in the tests
(Centrifugo's proxy JSON; docs/centrifugo.md): aiohttp (Debian's
python3-aiohttp) on a free loopback port, printed as "listening on 127.0.0.1:PORT"
(http_backend.serve).

  POST /connect      {"result": {"user": <data.user, or the session cookie>,
                     "info": {"via": "proxy"}, "data": {"hello": user}}};
                     data.user "banned": {"disconnect": {"code": 4501, ...}}
  POST /rpc          method "echo": {"result": {"data": {method, data, user,
                     cookie}}}; "slow": answers after 3 s; "fail":
                     {"error": {"code": 1000, "message": "nope"}}
  POST /subscribe    channel "secret:*": {"error": {"code": 103, ...}};
                     else {"result": {"data": {"welcome": channel}}}
  POST /publish      {"result": {"data": {"text": data.text + " (checked)"}}}
  GET  /calls        every call so far: [{"path", "body", "cookie"}, ...]
"""
import asyncio

from aiohttp import web

from http_backend import run, serve

calls = []


async def record(request):
    body = await request.json()
    calls.append({"path": request.path, "body": body, "cookie": request.headers.get("Cookie")})
    return body


def cookie_user(request):
    c = request.headers.get("Cookie", "")
    return c.split("session=", 1)[1].split(";")[0] if "session=" in c else None


async def connect(request):
    body = await record(request)
    user = (body.get("data") or {}).get("user") or cookie_user(request) or ""
    if user == "banned":
        return web.json_response({"disconnect": {"code": 4501, "reason": "banned"}})
    return web.json_response({"result": {"user": user, "info": {"via": "proxy"},
                                         "data": {"hello": user}}})


async def rpc(request):
    body = await record(request)
    method = body.get("method")
    if method == "slow":
        await asyncio.sleep(3)
    if method == "fail":
        return web.json_response({"error": {"code": 1000, "message": "nope"}})
    return web.json_response({"result": {"data": {
        "method": method, "data": body.get("data"), "user": body.get("user"),
        "cookie": request.headers.get("Cookie")}}})


async def subscribe(request):
    body = await record(request)
    if body.get("channel", "").startswith("secret:"):
        return web.json_response({"error": {"code": 103, "message": "permission denied"}})
    return web.json_response({"result": {"data": {"welcome": body.get("channel")}}})


async def publish(request):
    body = await record(request)
    data = body.get("data") or {}
    return web.json_response({"result": {"data": {"text": str(data.get("text")) + " (checked)"}}})


async def list_calls(_):
    return web.json_response(calls)


def main():
    app = web.Application()
    app.add_routes([web.post("/connect", connect), web.post("/rpc", rpc),
                    web.post("/subscribe", subscribe), web.post("/publish", publish),
                    web.get("/calls", list_calls)])
    run(serve(app))


if __name__ == "__main__":
    main()
