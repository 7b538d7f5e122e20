// node-chat.js: the comparison server of tools/ws-compare. A Node.js
// broadcast server on `ws` (Debian's node-ws), speaking the subset of
// heartwheel-chat's protocol (docs/chat-protocol.md) that heartwheel-load
// --mode ws uses: the {"connect":...} greeting, subscribe (no history: a
// `since` is answered recovered:false), unsubscribe, publish (offsets per
// channel from 1, one epoch per process), pushes of
// {"channel","offset","epoch","data","info"} and server pings.
//
// Written the way the ws README teaches: one JSON string per publication,
// turned into a Buffer once and sent to every subscriber (ws frames it per
// socket); the heartbeat is ws's documented pattern (one setInterval: a
// client that has not answered the previous ping is terminated, then every
// client is pinged), so a dead client goes within two ping intervals.
//
// --per-message-deflate turns ws's permessage-deflate on, as its README
// shows: level 6 (zlib's default, as heartwheel-chat's), --deflate-threshold
// bytes (256, as heartwheel-chat's --ws-compression-min-size; ws's own default
// is 1024), the rest ws's defaults (concurrencyLimit 10; context takeover
// unless the client offers server_no_context_takeover, which
// heartwheel-load --ws-compression does). Each send compresses for its socket.
//
// Usage: NODE_PATH=/usr/share/nodejs node node-chat.js [--port 0] [--ping-interval-ms 25000]
//        [--per-message-deflate] [--deflate-threshold 256]
// Prints "listening on 127.0.0.1:PORT". SIGTERM/SIGINT: exit 0.
"use strict";
const http = require("http");
const WebSocket = require("ws");

const args = process.argv.slice(2);
function flag(name, def) {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : def;
}
const port = Number(flag("--port", "0"));
const pingIntervalMs = Number(flag("--ping-interval-ms", "25000"));
const perMessageDeflate = args.includes("--per-message-deflate")
  ? { threshold: Number(flag("--deflate-threshold", "256")), zlibDeflateOptions: { level: 6 } }
  : false;
const epoch = Math.floor(Math.random() * 0xffffffff).toString(16).padStart(8, "0");

const channels = new Map();  // name -> {offset, subscribers: Set<ws>}
let nextClient = 0;

function channel(name) {
  let c = channels.get(name);
  if (!c) {
    c = { offset: 0, subscribers: new Set() };
    channels.set(name, c);
  }
  return c;
}

function reply(ws, id, fields) {
  ws.send(JSON.stringify(Object.assign({ id: id === undefined ? null : id, ok: true }, fields)));
}
function error(ws, id, code, message) {
  ws.send(JSON.stringify({ id: id === undefined ? null : id, error: { code, message } }));
}

const server = http.createServer((req, res) => {
  res.writeHead(404);
  res.end();
});
const wss = new WebSocket.Server({ server, path: "/ws", perMessageDeflate,
                                   clientTracking: true, maxPayload: 65536 });

wss.on("connection", (ws) => {
  ws.isAlive = true;
  ws.client = "0-" + ++nextClient;
  ws.channels = [];
  ws.info = JSON.stringify({ client: ws.client, name: "guest-" + ws.client });
  ws.on("pong", () => { ws.isAlive = true; });
  ws.on("message", (data, isBinary) => {
    ws.isAlive = true;  // any frame is life, as in heartwheel-chat
    if (isBinary) return ws.close(1003);
    let req;
    try {
      req = JSON.parse(data.toString());
    } catch (e) {
      return error(ws, null, "bad_json", "not JSON");
    }
    const id = req.id;
    if (typeof req.channel !== "string") return error(ws, id, "bad_request", "channel");
    if (req.op === "subscribe") {
      const c = channel(req.channel);
      if (c.subscribers.has(ws)) return error(ws, id, "already_subscribed", "");
      c.subscribers.add(ws);
      ws.channels.push(req.channel);
      reply(ws, id, { offset: c.offset, epoch, recovered: false, publications: [],
                      count: c.subscribers.size });
    } else if (req.op === "unsubscribe") {
      const c = channels.get(req.channel);
      if (!c || !c.subscribers.delete(ws)) return error(ws, id, "not_subscribed", "");
      ws.channels = ws.channels.filter((n) => n !== req.channel);
      reply(ws, id, {});
    } else if (req.op === "publish") {
      if (!("data" in req)) return error(ws, id, "bad_request", "data");
      const c = channel(req.channel);
      c.offset += 1;
      const push = Buffer.from('{"channel":' + JSON.stringify(req.channel) + ',"offset":' +
                               c.offset + ',"epoch":"' + epoch + '","data":' +
                               JSON.stringify(req.data) + ',"info":' + ws.info + "}");
      for (const s of c.subscribers)
        if (s.readyState === WebSocket.OPEN) s.send(push, { binary: false });
      reply(ws, id, { offset: c.offset, epoch });
    } else {
      error(ws, id, "unknown_op", "subscribe, unsubscribe, publish");
    }
  });
  ws.on("close", () => {
    for (const name of ws.channels) {
      const c = channels.get(name);
      if (c) c.subscribers.delete(ws);
    }
  });
  ws.send(JSON.stringify({ connect: { client: ws.client, name: "guest-" + ws.client, worker: 0,
                                      ping_interval_ms: pingIntervalMs } }));
});

if (pingIntervalMs > 0) {
  setInterval(() => {
    for (const ws of wss.clients) {
      if (!ws.isAlive) {
        ws.terminate();
        continue;
      }
      ws.isAlive = false;
      ws.ping();
    }
  }, pingIntervalMs);
}

server.listen(port, "127.0.0.1", () => {
  console.log("listening on 127.0.0.1:" + server.address().port);
});
for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => process.exit(0));
