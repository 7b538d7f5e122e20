// Runs the chat page's own script (served at GET /) with the client library
// it imports (served at GET /heartwheel.js) in Node, twice (two "tabs"),
// against a running heartwheel-chat, with a minimal DOM made here and Node's
// `ws` as the browser's WebSocket. The page is an ES module importing the
// library: both run here as one script in the tab's context (the import
// line and the library's `export`s taken out), so the library sees the
// tab's WebSocket as its global one. Not a browser test (that is
// headless Chromium's job); it checks the page's protocol logic: join from
// URL parameters, who is online, sending and showing messages, and after a
// lost connection: reconnect with backoff and recovery of what was missed.
// Usage: NODE_PATH=/usr/share/nodejs node chat_page_test.js PORT
// Prints one line per step; exits 0 when all passed, 1 otherwise.
"use strict";
const http = require("http");
const vm = require("vm");
const assert = require("assert");
const WebSocket = require("ws");

const port = Number(process.argv[2]);

// ---- a DOM just large enough for the page ---------------------------------
class Element {
  constructor(tag, id) {
    this.tagName = tag.toUpperCase();
    this.id = id || "";
    this.children = [];
    this.parent = null;
    this.dataset = {};
    this.className = "";
    this.value = "";
    this.disabled = false;
    this.scrollTop = 0;
    this.scrollHeight = 0;
    this.listeners = {};
    this._text = "";
  }
  get textContent() { return this._text + this.children.map((c) => c.textContent).join(""); }
  set textContent(t) { this._text = String(t); this.children = []; }
  appendChild(c) { c.parent = this; this.children.push(c); return c; }
  append(...cs) { for (const c of cs) this.appendChild(c); }
  insertBefore(c, before) {
    if (!before) return this.appendChild(c);
    c.parent = this;
    this.children.splice(this.children.indexOf(before), 0, c);
    return c;
  }
  addEventListener(type, fn) { (this.listeners[type] = this.listeners[type] || []).push(fn); }
  fire(type) { for (const fn of this.listeners[type] || []) fn({ preventDefault() {} }); }
  // Only the selectors the page uses: "li.msg" and "#messages li.msg[data-offset=...][data-epoch=...]".
  querySelectorAll(sel) {
    const m = /li\.(\w+)((?:\[data-\w+="[^"]*"\])*)$/.exec(sel);
    assert.ok(m, "selector not supported by the test DOM: " + sel);
    const attrs = [...m[2].matchAll(/\[data-(\w+)="([^"]*)"\]/g)];
    return this.children.filter((c) => c.tagName === "LI" && c.className === m[1] &&
                                       attrs.every(([, k, v]) => c.dataset[k] === v));
  }
}

// The page's module and the library, as one classic script.
function pageScript(html, library) {
  const module = html.split('<script type="module">')[1].split("</script>")[0];
  const page = module.replace(/^import \{ Client \} from "\/heartwheel\.js";$/m, "");
  assert.notStrictEqual(page, module, "the page no longer imports Client from /heartwheel.js");
  const lib = library.replace(/^export \{[^}]*\};?$/gm, "").replace(/^export (?=class |function |const )/gm, "");
  assert.ok(!/^export /m.test(lib), "an export form this test does not handle");
  return '"use strict";\n' + lib + "\n" + page;
}

function makeTab(script, search) {
  const ids = ["status", "name", "room", "join", "leave", "notice", "messages", "text", "send",
               "online", "online-count", "join-form", "send-form"];
  const byId = Object.fromEntries(ids.map((id) => [id, new Element("div", id)]));
  byId.room.value = "lobby";
  const document = {
    getElementById: (id) => byId[id] || null,
    createElement: (tag) => new Element(tag),
    querySelector: (sel) => byId.messages.querySelectorAll(sel.replace(/^#messages /, ""))[0] || null,
  };
  const sockets = [];
  class TrackedWebSocket extends WebSocket {
    constructor(url) { super(url); sockets.push(this); }
  }
  const context = vm.createContext({
    document, WebSocket: TrackedWebSocket, URLSearchParams, setTimeout, clearTimeout, console,
    JSON, Math, Map, Number, String, queueMicrotask,
    CSS: { escape: (s) => String(s).replace(/["\\]/g, "\\$&") },
    location: { protocol: "http:", host: `127.0.0.1:${port}`, search },
  });
  vm.runInContext(script, context);
  const messages = () => byId.messages.querySelectorAll("li.msg").map((li) => ({
    who: li.children[0].textContent, text: li.children[1].textContent,
    offset: Number(li.dataset.offset) }));
  return { byId, sockets, messages, state: () => byId.status.dataset.state,
           online: () => byId.online.children.map((li) => li.textContent) };
}

function get(path) {
  return new Promise((resolve, reject) => {
    http.get({ host: "127.0.0.1", port, path }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve(body));
    }).on("error", reject);
  });
}

async function until(what, cond, ms = 10000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out waiting for: " + what);
    await new Promise((r) => setTimeout(r, 20));
  }
  console.log("ok " + what);
}

function say(tab, text) {
  tab.byId.text.value = text;
  tab.byId["send-form"].fire("submit");
}

(async () => {
  const script = pageScript(await get("/"), await get("/heartwheel.js"));
  const alice = makeTab(script, "?name=alice&room=r1&autojoin=1");
  await until("alice is connected", () => alice.state() === "connected");
  const bob = makeTab(script, "?name=bob&room=r1&autojoin=1");
  await until("bob is connected", () => bob.state() === "connected");
  await until("alice sees both online", () => alice.online().length === 2);
  assert.ok(bob.online().some((n) => n.startsWith("bob") && n.endsWith("(you)")));

  say(alice, "hello");
  await until("both show alice's message", () =>
    [alice, bob].every((t) => t.messages().some((m) => m.who === "alice" && m.text === "hello")));
  assert.strictEqual(alice.byId.text.value, "");

  // Bob's connection drops (as if the network did); alice talks meanwhile.
  bob.sockets[bob.sockets.length - 1].terminate();
  await until("bob reconnects with backoff", () => bob.state() === "reconnecting");
  await until("alice sees bob leave", () => alice.online().length === 1);
  say(alice, "while you were away");
  say(alice, "and this too");
  await until("bob is back", () => bob.state() === "connected", 15000);
  await until("bob recovered the missed messages, in order", () => {
    const texts = bob.messages().map((m) => m.text);
    return texts.join("|") === "hello|while you were away|and this too";
  });
  const offsets = bob.messages().map((m) => m.offset);
  assert.deepStrictEqual(offsets, [...offsets].sort((a, b) => a - b));
  assert.ok(bob.byId.messages.children.some((li) => li.className === "system" &&
                                             /recovered 2 missed/.test(li.textContent)));
  assert.strictEqual(bob.byId.status.dataset.attempt, "0");

  // Leaving stops reconnecting.
  bob.byId.leave.fire("click");
  await until("bob is idle after leaving", () => bob.state() === "idle");
  alice.byId.leave.fire("click");
  await until("alice is idle after leaving", () => alice.state() === "idle");
  process.exit(0);
})().catch((e) => {
  console.log("FAILED: " + (e.stack || e));
  process.exit(1);
});
