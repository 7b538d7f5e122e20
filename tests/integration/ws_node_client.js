// Interop with Node's `ws` (Debian's node-ws, /usr/share/nodejs/ws):
// run by ws_interop_test.py against heartwheel-chat's /echo endpoint.
// Usage: NODE_PATH=/usr/share/nodejs node ws_node_client.js PORT MAX_MESSAGE
// Prints one line per check and exits 0 when all passed, 1 otherwise.
"use strict";
const WebSocket = require("ws");
const assert = require("assert");

const port = Number(process.argv[2]);
const maxMessage = Number(process.argv[3]);
const url = `ws://127.0.0.1:${port}/echo`;

function open() {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { maxPayload: 0 });
    ws.once("open", () => resolve(ws));
    ws.once("error", reject);
  });
}
function next(ws) {
  return new Promise((resolve) => ws.once("message", (data, isBinary) => resolve({ data, isBinary })));
}
function closed(ws) {
  return new Promise((resolve) => ws.once("close", (code, reason) => resolve({ code, reason: reason.toString() })));
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const checks = {
  async echo() {
    const ws = await open();
    ws.send("héllo");
    let m = await next(ws);
    assert.strictEqual(m.isBinary, false);
    assert.strictEqual(m.data.toString(), "héllo");
    const bin = Buffer.from([0, 1, 2, 255, 254]);
    ws.send(bin);
    m = await next(ws);
    assert.strictEqual(m.isBinary, true);
    assert.ok(Buffer.compare(m.data, bin) === 0);
    const big = Buffer.alloc(maxMessage, 7);  // at the limit
    ws.send(big);
    m = await next(ws);
    assert.ok(Buffer.compare(m.data, big) === 0);
    ws.close();
    await closed(ws);
  },
  async fragmented() {
    const ws = await open();
    ws.send("frag", { fin: false });
    ws.send("men", { fin: false });
    ws.send("ted", { fin: true });
    const m = await next(ws);
    assert.strictEqual(m.data.toString(), "fragmented");
    ws.close();
    await closed(ws);
  },
  async ping_pong() {
    const ws = await open();
    const pong = new Promise((resolve) => ws.once("pong", resolve));
    ws.ping(Buffer.from("heartbeat"));
    assert.strictEqual((await pong).toString(), "heartbeat");
    // The server pings every 200 ms; ws answers by itself: still open later.
    let serverPings = 0;
    ws.on("ping", () => serverPings++);
    await sleep(1000);
    assert.ok(serverPings >= 3, `server pings seen: ${serverPings}`);
    assert.strictEqual(ws.readyState, WebSocket.OPEN);
    ws.close();
    await closed(ws);
  },
  async close_codes() {
    for (const [code, reason] of [[1000, ""], [4000, "bye"], [3001, "restart"]]) {
      const ws = await open();
      const done = closed(ws);
      ws.close(code, reason);
      const c = await done;
      assert.strictEqual(c.code, code);  // the server echoes the code
    }
  },
  async message_too_big() {
    const ws = await open();
    const done = closed(ws);
    ws.on("error", () => {});
    ws.send(Buffer.alloc(maxMessage + 1, 1));
    const c = await done;
    assert.strictEqual(c.code, 1009);
  },
};

(async () => {
  let failed = 0;
  let current = "";
  // A check waiting for an event that never comes leaves nothing to run:
  // that is a failure, not a silent exit 0.
  process.on("beforeExit", () => {
    console.log(`FAILED ${current}: it waited for an event that never came`);
    process.exit(1);
  });
  for (const [name, check] of Object.entries(checks)) {
    current = name;
    try {
      await check();
      console.log(`ok ${name}`);
    } catch (e) {
      failed++;
      console.log(`FAILED ${name}: ${e.stack || e}`);
    }
  }
  process.exit(failed ? 1 : 0);
})();
