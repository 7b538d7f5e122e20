// clients/js/heartwheel.js against the real heartwheel-chat, in Debian's Node
// with its built-in test runner (node:test) and node-ws as the WebSocket:
// the token dance (getToken), subscribe / publish / presence / history, a
// refresh before the token expires, a reconnect that recovers what was
// published meanwhile, and a refused token without getToken (no retry loop).
// Tokens come from python3-jwt (a python3 child process), not from our code.
//
// Usage: HEARTWHEEL_CHAT=build/bin/heartwheel-chat NODE_PATH=/usr/share/nodejs \
//          node --test tests/integration/js_client_test.cjs
"use strict";
const { test, before, after } = require("node:test");
const assert = require("node:assert");
const { spawn, execFileSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const readline = require("node:readline");
const WebSocket = require("ws");

const BINARY = process.env.HEARTWHEEL_CHAT;
const DIR = fs.mkdtempSync(path.join(os.tmpdir(), "hw-js-"));
const SECRET = "js-client-test-secret-of-at-least-32-bytes!!";
fs.writeFileSync(path.join(DIR, "secret"), SECRET + "\n");

function token(claims) {
  return execFileSync("/usr/bin/python3", ["-c",
    "import jwt, json, sys; print(jwt.encode(json.loads(sys.argv[1]), sys.argv[2], algorithm='HS256'))",
    JSON.stringify(claims), SECRET]).toString().trim();
}
const now = () => Math.floor(Date.now() / 1000);

let server, url, lib;

before(async () => {
  assert.ok(BINARY, "HEARTWHEEL_CHAT must name the heartwheel-chat binary");
  lib = await import(path.join(__dirname, "..", "..", "clients", "js", "heartwheel.js"));
  server = spawn(BINARY, ["--listen", "127.0.0.1:0", "--token-hmac-secret-file",
                          path.join(DIR, "secret"), "--connect-timeout", "5s"],
                 { stdio: ["ignore", "pipe", "inherit"] });
  const line = await new Promise((resolve, reject) => {
    readline.createInterface({ input: server.stdout }).once("line", resolve);
    server.once("exit", (code) => reject(new Error("heartwheel-chat exited " + code)));
  });
  assert.match(line, /^listening on /);
  url = "ws://127.0.0.1:" + line.split(":").pop() + "/ws";
});

after(() => {
  server?.kill("SIGKILL");
  fs.rmSync(DIR, { recursive: true, force: true });
});

function client(options) {
  return new lib.Client(url, { WebSocket, minReconnectDelay: 50, maxReconnectDelay: 400, ...options });
}

function once(emitter, name, pred = () => true, ms = 8000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no " + name + " in " + ms + " ms")), ms);
    const fn = (v) => { if (pred(v)) { clearTimeout(timer); emitter.off(name, fn); resolve(v); } };
    emitter.on(name, fn);
  });
}

async function waitFor(pred, ms = 8000) {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error("condition not met in " + ms + " ms: " + pred);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("connects with getToken, subscribes, publishes, reads presence and history", async () => {
  const c = client({ getToken: async () => token({ sub: "alice", exp: now() + 600,
                                                    info: { name: "Alice" } }) });
  const got = [];
  const room = c.subscribe("room", { onPublication: (p) => got.push(p) });
  const connected = once(c, "connected");
  c.connect();
  const info = await connected;
  assert.strictEqual(info.user, "alice");
  assert.ok(info.expires_in_ms > 590000);
  await room.ready;
  const reply = await c.publish("room", { text: "hi" });
  assert.strictEqual(typeof reply.offset, "number");
  await waitFor(() => got.length === 1);
  assert.deepStrictEqual(got[0].data, { text: "hi" });
  assert.strictEqual(got[0].info.user, "alice");
  assert.deepStrictEqual(got[0].info.info, { name: "Alice" });
  const presence = await room.presence();
  assert.strictEqual(presence.count, 1);
  const history = await room.history({ limit: 5 });
  assert.strictEqual(history.publications.length, 1);
  await assert.rejects(c.publish("other", 1), (e) => e.code === "permission_denied");
  c.disconnect();
  assert.strictEqual(c.state, "disconnected");
});

test("refreshes the token before it expires", async () => {
  // The first token expired 2 s ago: about 3 s left of the 5 s leeway. The
  // tokens are made first (python3 takes a while on a loaded machine), the
  // short one last.
  const long = token({ sub: "bob", exp: now() + 600 });
  const tokens = [token({ sub: "bob", exp: now() - 2 }), long];
  const c = client({ getToken: async () => tokens.length > 1 ? tokens.shift() : tokens[0] });
  const connected = once(c, "connected");
  const refreshedP = once(c, "refreshed");
  c.connect();
  const info = await connected;
  assert.ok(info.expires_in_ms <= 3000 + 100, JSON.stringify(info));
  const refreshed = await refreshedP;
  assert.ok(refreshed.expiresInMs > 590000);
  await new Promise((r) => setTimeout(r, 3000));  // past the first token's end
  assert.strictEqual(c.state, "connected");
  assert.ok((await c.presence("room")).count >= 0);
  c.disconnect();
});

test("reconnects with backoff and recovers what was published meanwhile", async () => {
  const carol = token({ sub: "carol", exp: now() + 600 });
  const getToken = async () => carol;
  const listener = client({ getToken });
  const publisher = client({ getToken });
  const got = [];
  const feed = listener.subscribe("feed", { onPublication: (p) => got.push(p.data) });
  const pubFeed = publisher.subscribe("feed");
  listener.connect();
  publisher.connect();
  await feed.ready;
  await pubFeed.ready;
  await publisher.publish("feed", 1);
  await waitFor(() => got.length === 1);
  const states = [];
  listener.on("state", (s) => states.push(s.state));
  listener._ws.terminate();  // the network drops the connection
  await once(listener, "state", (s) => s.state === "disconnected");
  await publisher.publish("feed", 2);
  await publisher.publish("feed", 3);
  await once(listener, "connected");
  await feed.ready;
  await waitFor(() => got.length === 3).catch(() => {});
  assert.deepStrictEqual(got, [1, 2, 3]);
  assert.deepStrictEqual(states.slice(0, 3), ["disconnected", "connecting", "connected"]);
  await publisher.publish("feed", 4);
  await waitFor(() => got.length === 4);
  listener.disconnect();
  publisher.disconnect();
});

test("a refused token without getToken stops instead of retrying", async () => {
  const c = client({ token: token({ sub: "eve", exp: now() - 60 }) });
  const error = once(c, "error");
  const states = [];
  c.on("state", (s) => states.push(s.state));
  c.connect();
  const e = await error;
  assert.strictEqual(e.code, "unauthorized");
  await once(c, "state", (s) => s.state === "disconnected").catch(() => {});
  await new Promise((r) => setTimeout(r, 300));
  assert.strictEqual(c.state, "disconnected");
  assert.strictEqual(states.filter((s) => s === "connecting").length, 1);
});
