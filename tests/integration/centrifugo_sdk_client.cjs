// The real Centrifugo JavaScript SDK (npm `centrifuge`, pinned in
// tests/integration/sdk/package-lock.json; tools/install-deps installs it)
// against heartwheel-chat, from Node with `ws` (Debian's node-ws). One
// scenario per run; centrifugo_sdk_test.py starts the servers and passes
// what they are as JSON.
//
// Usage: NODE_PATH=/usr/share/nodejs node centrifugo_sdk_client.cjs SCENARIO '{"port":...}'
// Exits 0 after "ok SCENARIO", 1 with the failed assertion.
"use strict";
const assert = require("node:assert/strict");
const crypto = require("node:crypto");
const path = require("node:path");
const WebSocket = require("ws");
const { Centrifuge } = require(path.join(__dirname, "sdk", "node_modules", "centrifuge"));

const cfg = JSON.parse(process.argv[3] || "{}");
const now = () => Math.floor(Date.now() / 1000);

function b64url(s) {
  return Buffer.from(s).toString("base64url");
}
// An HS256 JWT of `claims` with the test's secret (or `secret`).
function token(claims, secret = cfg.secret) {
  const head = b64url(JSON.stringify({ alg: "HS256", typ: "JWT" }));
  const body = b64url(JSON.stringify(claims));
  const sig = crypto.createHmac("sha256", secret).update(head + "." + body).digest("base64url");
  return head + "." + body + "." + sig;
}
function url(port = cfg.port, query = "") {
  return "ws://127.0.0.1:" + port + "/connection/websocket" + query;
}
function client(options = {}, port = cfg.port) {
  return new Centrifuge(url(port), { websocket: WebSocket, debug: false, ...options });
}
// The next `event` of `emitter` (after `start()`) that `wanted` accepts, or
// a failure after `ms`.
function next(emitter, event, start = () => {}, ms = 10000, wanted = () => true) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no " + event + " within " + ms + " ms")), ms);
    const on = (ctx) => {
      if (!wanted(ctx)) return;
      emitter.removeListener(event, on);
      clearTimeout(timer);
      resolve(ctx);
    };
    emitter.on(event, on);
    start();
  });
}
// Resolves once `predicate()` holds (polled), or fails after `ms`.
async function until(predicate, what, ms = 10000) {
  const end = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > end) throw new Error("never: " + what);
    await new Promise((r) => setTimeout(r, 20));
  }
}
// POST /api/METHOD on `port` with the API key; the parsed answer.
async function api(method, body, port = cfg.port) {
  const r = await fetch("http://127.0.0.1:" + port + "/api/" + method, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-API-Key": cfg.api_key },
    body: JSON.stringify(body),
  });
  assert.equal(r.status, 200, method + " answered " + r.status);
  return r.json();
}
async function subscribed(c, channel, options = {}) {
  const sub = c.newSubscription(channel, options);
  const got = [];
  sub.on("publication", (ctx) => got.push(ctx));
  const ctx = await next(sub, "subscribed", () => sub.subscribe());
  return { sub, got, ctx };
}

const scenarios = {
  // A valid HS256 token connects; a token signed with another secret is
  // refused with 3500 (invalid token: no reconnect).
  async connect_tokens() {
    const good = client({ token: token({ sub: "alice", exp: now() + 60 }) });
    const ctx = await next(good, "connected", () => good.connect());
    assert.match(ctx.client, /^\d+-\d+$/);
    good.disconnect();
    const bad = client({ token: token({ sub: "alice" }, "another-secret-of-32-bytes-at-least!") });
    const d = await next(bad, "disconnected", () => bad.connect());
    assert.equal(d.code, 3500);
    assert.equal(bad.state, "disconnected");
  },

  // A server-API publish and a client publish reach two clients; the
  // client's carries info.user. Then history, presence and presence stats.
  async publish_history_presence() {
    const alice = client({ token: token({ sub: "alice", info: { name: "Alice" } }) });
    const bob = client({ token: token({ sub: "bob" }) });
    await next(alice, "connected", () => alice.connect());
    await next(bob, "connected", () => bob.connect());
    const a = await subscribed(alice, "room");
    const b = await subscribed(bob, "room");
    assert.equal(a.ctx.recoverable, true);
    const answer = await api("publish", { channel: "room", data: { from: "api" } });
    assert.ok(answer.result.offset >= 1, JSON.stringify(answer));
    await a.sub.publish({ from: "alice" });
    for (const x of [a, b]) {
      await until(() => x.got.length === 2, "two publications");
      assert.deepEqual(x.got[0].data, { from: "api" });
      assert.deepEqual(x.got[1].data, { from: "alice" });
      assert.equal(x.got[1].info.user, "alice");
      assert.deepEqual(x.got[1].info.connInfo, { name: "Alice" });
      assert.equal(x.got[1].offset, x.got[0].offset + 1);
    }
    const h = await b.sub.history({ limit: 10 });
    assert.deepEqual(h.publications.map((p) => p.data), [{ from: "api" }, { from: "alice" }]);
    assert.equal(h.offset, b.got[1].offset);
    const newest = await b.sub.history({ limit: 1, reverse: true });
    assert.deepEqual(newest.publications.map((p) => p.data), [{ from: "alice" }]);
    const p = await b.sub.presence();
    assert.deepEqual(Object.values(p.clients).map((c) => c.user).sort(), ["alice", "bob"]);
    const s = await b.sub.presenceStats();
    assert.equal(s.numClients, 2);
    assert.equal(s.numUsers, 2);
    alice.disconnect();
    bob.disconnect();
  },

  // The server drops the connection (the API's disconnect with a code that
  // says "reconnect"); what was published meanwhile comes back on the
  // resubscribe, with recovered: true.
  async recovery() {
    const c = client({
      token: token({ sub: "carol" }),
      minReconnectDelay: 800,
      maxReconnectDelay: 1200,
    });
    await next(c, "connected", () => c.connect());
    const s = await subscribed(c, "news");
    await api("publish", { channel: "news", data: 1 });
    await until(() => s.got.length === 1, "the first publication");
    const dropped = await next(
      c,
      "connecting",
      () => api("disconnect", { user: "carol", disconnect: { code: 3001, reason: "test" } }),
      10000,
      (ctx) => ctx.code !== 0,  // not the connect() itself
    );
    assert.equal(dropped.code, 3001);
    await api("publish", { channel: "news", data: 2 });
    await api("publish", { channel: "news", data: 3 });
    const again = await next(s.sub, "subscribed");
    assert.equal(again.wasRecovering, true);
    assert.equal(again.recovered, true);
    await until(() => s.got.length === 3, "the missed publications");
    assert.deepEqual(s.got.map((p) => p.data), [1, 2, 3]);
    c.disconnect();
  },

  // A token that expires in 2 s is refreshed through getToken while the
  // connection stays up past the server's close (exp + 5 s leeway).
  async token_refresh() {
    let refreshes = 0;
    const events = [];
    const c = client({
      token: token({ sub: "dave", exp: now() + 2 }),
      getToken: async () => {
        refreshes++;
        return token({ sub: "dave", exp: now() + 60 });
      },
    });
    await next(c, "connected", () => c.connect());
    c.on("connecting", (ctx) => events.push("connecting " + ctx.code));
    c.on("disconnected", (ctx) => events.push("disconnected " + ctx.code));
    await new Promise((r) => setTimeout(r, 8500));
    assert.ok(refreshes >= 1, "getToken was never asked");
    assert.deepEqual(events, []);
    assert.equal(c.state, "connected");
    c.disconnect();
  },

  // A private channel takes a channel token (getToken); without one: 103.
  async channel_token() {
    const c = client({ token: token({ sub: "erin" }) });
    await next(c, "connected", () => c.connect());
    let asked = 0;
    const ok = await subscribed(c, "private:ceo", {
      getToken: async (ctx) => {
        asked++;
        return token({ sub: "erin", channel: ctx.channel, exp: now() + 60 });
      },
    });
    assert.equal(asked, 1);
    assert.equal(ok.ctx.channel, "private:ceo");
    const refused = c.newSubscription("private:other");
    const u = await next(refused, "unsubscribed", () => refused.subscribe());
    assert.equal(u.code, 103);
    c.disconnect();
  },

  // Connect and RPC through the proxies (aiohttp backend); a backend slower
  // than --proxy-timeout is error 100 within it.
  async proxies() {
    class CookieWebSocket extends WebSocket {
      constructor(address, protocols) {
        super(address, protocols, { headers: { Cookie: "session=frank" } });
      }
    }
    const c = client({ websocket: CookieWebSocket });
    const ctx = await next(c, "connected", () => c.connect());
    assert.deepEqual(ctx.data, { hello: "frank" });
    const echo = await c.rpc("echo", { x: 1 });
    assert.deepEqual(echo.data, { method: "echo", data: { x: 1 }, user: "frank", cookie: "session=frank" });
    await assert.rejects(c.rpc("fail", {}), (e) => e.code === 1000 && e.message === "nope");
    const t0 = Date.now();
    await assert.rejects(c.rpc("slow", {}), (e) => e.code === 100);
    const took = Date.now() - t0;
    assert.ok(took >= 400 && took < 2500, "the slow call failed after " + took + " ms");
    const s = await subscribed(c, "room");
    assert.deepEqual(s.ctx.data, { welcome: "room" });
    await s.sub.publish({ text: "hi" });
    await until(() => s.got.length === 1, "the checked publication");
    assert.deepEqual(s.got[0].data, { text: "hi (checked)" });
    assert.equal(s.got[0].info.user, "frank");
    const secret = c.newSubscription("secret:x");
    const u = await next(secret, "unsubscribed", () => secret.subscribe());
    assert.equal(u.code, 103);
    c.disconnect();
    // The backend says who may not connect.
    const banned = client({ data: { user: "banned" } });
    const d = await next(banned, "disconnected", () => banned.connect());
    assert.equal(d.code, 4501);
    // A backend that is down: the connect is closed with 3004, which the SDK
    // takes as "reconnect" (it stays connecting, without an event; the code
    // itself is chat_centrifugo_test.py's).
    const down = client({ minReconnectDelay: 300, maxReconnectDelay: 600 }, cfg.down_port);
    const events = [];
    down.on("connected", () => events.push("connected"));
    down.on("disconnected", (ctx) => events.push("disconnected " + ctx.code));
    down.connect();
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(down.state, "connecting");
    assert.deepEqual(events, []);
    down.disconnect();
  },

  // Two nodes on one Redis: publishes cross, an idempotent publish retried
  // on the other node is delivered once, the API on one node reaches a
  // client of the other, info lists both, channels merges them.
  async two_nodes() {
    const a = client({ token: token({ sub: "gina" }) }, cfg.port);
    const b = client({ token: token({ sub: "hank" }) }, cfg.port2);
    await next(a, "connected", () => a.connect());
    await next(b, "connected", () => b.connect());
    const sa = await subscribed(a, "global");
    const sb = await subscribed(b, "global");
    await api("publish", { channel: "global", data: "from the api" }, cfg.port);
    await sa.sub.publish("from gina");
    for (const s of [sa, sb]) await until(() => s.got.length === 2, "both publications");
    assert.equal(sb.got[1].info.user, "gina");
    // A publish retried on the other node with its idempotency_key: the
    // first's offset, delivered once (the marker after it shows nothing else came).
    const keyed = { channel: "global", data: "once", idempotency_key: "k-1" };
    const first = await api("publish", keyed, cfg.port);
    const retry = await api("publish", { ...keyed, data: "twice" }, cfg.port2);
    assert.deepEqual(retry.result, first.result);
    await api("publish", { channel: "global", data: "marker" }, cfg.port2);
    for (const s of [sa, sb]) {
      await until(() => s.got.length === 4, "the keyed publication and the marker");
      assert.deepEqual(s.got.slice(2).map((p) => p.data), ["once", "marker"]);
    }
    const info = await api("info", {}, cfg.port2);
    assert.equal(info.result.nodes.length, 2, JSON.stringify(info));
    // Each node: one client, one subscription (its own control channels not counted).
    for (const n of info.result.nodes) {
      assert.equal(n.num_clients, 1, JSON.stringify(info));
      assert.equal(n.num_subs, 1, JSON.stringify(info));
    }
    const channels = await api("channels", {}, cfg.port);
    assert.equal(channels.result.channels.global.num_clients, 2, JSON.stringify(channels));
    const d = await next(b, "disconnected", () =>
      api("disconnect", { user: "hank", disconnect: { code: 4502, reason: "banned" } }, cfg.port),
    );
    assert.equal(d.code, 4502);
    a.disconnect();
  },
};

const name = process.argv[2];
if (!scenarios[name]) {
  console.error("unknown scenario " + name + "; one of " + Object.keys(scenarios).join(", "));
  process.exit(2);
}
scenarios[name]().then(
  () => {
    console.log("ok " + name);
    process.exit(0);
  },
  (e) => {
    console.error("FAIL " + name + ": " + (e && e.stack ? e.stack : e));
    process.exit(1);
  },
);
