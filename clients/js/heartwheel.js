// heartwheel.js: a client of the heartwheel chat protocol (docs/chat-protocol.md,
// versions 1 and 2) for heartwheel-chat and heartwheel-push's /ws.
// One ES module, no build step, no dependencies: browsers, and Node 18+
// (pass a WebSocket class, e.g. the `ws` package, where there is no global one).
//
//   import { Client } from "./heartwheel.js";
//   const client = new Client("wss://chat.example.com/ws", {
//     getToken: async () => (await fetch("/chat-token")).text(),  // or token: "JWT"
//   });
//   client.on("state", ({ state }) => console.log(state));
//   const room = client.subscribe("room", { onPublication: (p) => show(p.data, p.info) });
//   client.connect();
//   await room.ready;                // subscribed (again after each reconnect)
//   await client.publish("room", { text: "hi" });
//
// What it does for you:
// - the token dance: with `token` or `getToken` it speaks version 2 (connect
//   first); without, version 1 (the server's hello). `getToken()` is asked
//   again at every reconnect and before the token expires: the connection is
//   refreshed (`refresh`) at half its remaining life when that is under 20 s,
//   else 10 s before the end;
// - reconnects with exponential backoff and full jitter (minReconnectDelay ..
//   maxReconnectDelay), unless the server refused the token and there is no
//   getToken to ask for another (event "error", state "disconnected");
// - subscriptions survive reconnects: each resubscribes with `since` (its
//   last offset and epoch), and the publications it missed are delivered to
//   onPublication in order before live ones (`recovered` says whether the
//   server could cover the gap; onRecoveryFailed is called if not);
// - a gap in a channel's offsets (the server skipped this client as a slow
//   consumer) is filled the same way: unsubscribe, resubscribe with `since`;
//   live publications until the reply are left to it;
// - publish, presence and history as promises (rejected with an Error whose
//   `code` is the protocol's error code, or "disconnected").
//
// Events (client.on(name, fn)): "state" {state: "disconnected" | "connecting"
// | "connected"}, "connected" (the connect reply or hello), "disconnected"
// {code, reason}, "reconnecting" {attempt, delayMs} (the next try is due in
// delayMs), "error" {code, message}, "refreshed" {expiresInMs}.
// A subscription's events (sub.on, or the same names as options): "subscribed"
// / onSubscribed(reply) after each subscribe reply (the first, after each
// reconnect, after a gap), "publication" / onPublication(p), "join" /
// onJoin(info, count), "leave" / onLeave(info, count), "error".

const STATES = ["disconnected", "connecting", "connected"];

class Emitter {
  constructor() { this._handlers = new Map(); }
  on(name, fn) {
    if (!this._handlers.has(name)) this._handlers.set(name, new Set());
    this._handlers.get(name).add(fn);
    return this;
  }
  off(name, fn) { this._handlers.get(name)?.delete(fn); return this; }
  emit(name, value) {
    for (const fn of [...(this._handlers.get(name) ?? [])]) {
      try { fn(value); } catch (e) { queueMicrotask(() => { throw e; }); }
    }
  }
}

export class ProtocolError extends Error {
  constructor(code, message) {
    super(message || code);
    this.code = code;
  }
}

export class Subscription extends Emitter {
  constructor(client, channel, options) {
    super();
    this.client = client;
    this.channel = channel;
    this.options = options;
    this.position = null;  // {offset, epoch} of the last publication seen
    this.subscribed = false;
    this._resyncing = false;  // a gap was seen: waiting for the resubscribe reply
    this._newReady();
  }
  _newReady() {
    this.ready = new Promise((resolve, reject) => { this._resolve = resolve; this._reject = reject; });
    this.ready.catch(() => {});  // a denial is reported through "error" too
  }
  publish(data) { return this.client.publish(this.channel, data); }
  presence() { return this.client.presence(this.channel); }
  history(options) { return this.client.history(this.channel, options); }
  unsubscribe() { return this.client.unsubscribe(this.channel); }

  _publication(p) {
    if (this.position && p.epoch === this.position.epoch && p.offset <= this.position.offset) return;
    this.position = { offset: p.offset, epoch: p.epoch };
    this.options.onPublication?.(p);
    this.emit("publication", p);
  }
}

export class Client extends Emitter {
  constructor(url, options = {}) {
    super();
    this.url = url;
    this.options = {
      minReconnectDelay: 200,
      maxReconnectDelay: 20000,
      timeout: 10000,
      ...options,
    };
    this.WebSocket = options.WebSocket ?? globalThis.WebSocket;
    if (!this.WebSocket) throw new Error("no WebSocket: pass options.WebSocket (Node: the ws package)");
    this.state = "disconnected";
    this.subscriptions = new Map();
    this.info = null;  // the connect reply or hello: {client, user|name, ...}
    this._ws = null;
    this._nextId = 1;
    this._pending = new Map();
    this._attempt = 0;
    this._timers = new Set();
    this._wanted = false;
    this._refreshTimer = null;
  }

  get authenticating() { return Boolean(this.options.token || this.options.getToken); }

  connect() {
    this._wanted = true;
    if (this.state === "disconnected") this._open();
  }

  disconnect() {
    this._wanted = false;
    this._clearTimers();
    if (this._ws) this._ws.close(1000, "bye");
    this._closed(1000, "disconnect");
  }

  subscribe(channel, options = {}) {
    let sub = this.subscriptions.get(channel);
    if (!sub) {
      sub = new Subscription(this, channel, options);
      this.subscriptions.set(channel, sub);
      if (this.state === "connected") this._subscribe(sub);
    }
    return sub;
  }

  async unsubscribe(channel) {
    const sub = this.subscriptions.get(channel);
    this.subscriptions.delete(channel);
    if (sub && sub.subscribed && this.state === "connected")
      await this._request({ op: "unsubscribe", channel });
  }

  async publish(channel, data) {
    return this._request({ op: "publish", channel, data });
  }

  async presence(channel) {
    return this._request({ op: "presence", channel });
  }

  async history(channel, { limit } = {}) {
    return this._request(limit === undefined ? { op: "history", channel }
                                             : { op: "history", channel, limit });
  }

  // ---- internals ----

  _setState(state) {
    if (this.state === state) return;
    this.state = state;
    this.emit("state", { state });
  }

  _later(fn, ms) {
    const t = setTimeout(() => { this._timers.delete(t); fn(); }, ms);
    this._timers.add(t);
    return t;
  }

  _clearTimers() {
    for (const t of this._timers) clearTimeout(t);
    this._timers.clear();
  }

  async _token() {
    if (this.options.getToken) return this.options.getToken();
    return this.options.token;
  }

  _open() {
    this._setState("connecting");
    const ws = new this.WebSocket(this.url);
    this._ws = ws;
    ws.onopen = async () => {
      if (ws !== this._ws) return;
      if (!this.authenticating) return;  // version 1: the hello comes by itself
      let token;
      try {
        token = await this._token();
      } catch (e) {
        this.emit("error", { code: "token", message: String(e) });
        ws.close(1000, "no token");
        return;
      }
      if (ws !== this._ws) return;
      this._request({ op: "connect", token }, true).then(
        (reply) => this._connected(reply.connect),
        (e) => this.emit("error", { code: e.code, message: e.message }));
    };
    ws.onmessage = (event) => { if (ws === this._ws) this._message(String(event.data)); };
    ws.onclose = (event) => { if (ws === this._ws) this._closed(event.code, event.reason); };
    ws.onerror = () => {};  // onclose follows
  }

  _connected(info) {
    this.info = info;
    this._attempt = 0;
    this._setState("connected");
    this.emit("connected", info);
    this._scheduleRefresh(info.expires_in_ms);
    for (const sub of this.subscriptions.values()) this._subscribe(sub);
  }

  _scheduleRefresh(expiresInMs) {
    if (this._refreshTimer) { clearTimeout(this._refreshTimer); this._timers.delete(this._refreshTimer); }
    this._refreshTimer = null;
    if (expiresInMs === undefined || !this.options.getToken) return;
    const delay = expiresInMs < 20000 ? expiresInMs / 2 : expiresInMs - 10000;
    this._refreshTimer = this._later(async () => {
      try {
        const reply = await this._request({ op: "refresh", token: await this._token() });
        this.emit("refreshed", { expiresInMs: reply.expires_in_ms });
        this._scheduleRefresh(reply.expires_in_ms);
      } catch (e) {
        this.emit("error", { code: e.code ?? "refresh", message: e.message });
      }
    }, Math.max(0, delay));
  }

  async _subscribe(sub) {
    const req = { op: "subscribe", channel: sub.channel };
    if (sub.position) req.since = sub.position;
    try {
      const token = sub.options.getToken ? await sub.options.getToken(sub.channel)
                                         : sub.options.token;
      if (token) req.token = token;
      const reply = await this._request(req);
      sub.subscribed = true;
      if (req.since && !reply.recovered) sub.options.onRecoveryFailed?.(reply);
      for (const p of reply.publications) sub._publication(p);
      if (!sub.position || sub.position.epoch !== reply.epoch)
        sub.position = { offset: reply.offset, epoch: reply.epoch };
      sub._resolve(reply);
      sub.options.onSubscribed?.(reply);
      sub.emit("subscribed", reply);
    } catch (e) {
      if (e.code === "disconnected") return;  // again after the reconnect
      sub._reject(e);
      sub.emit("error", e);
      this.emit("error", { code: e.code, message: e.message, channel: sub.channel });
    }
  }

  _request(fields, first = false) {
    if (!this._ws || (!first && this.state !== "connected"))
      return Promise.reject(new ProtocolError("disconnected", "not connected"));
    const id = this._nextId++;
    return new Promise((resolve, reject) => {
      const timer = this._later(() => {
        this._pending.delete(id);
        reject(new ProtocolError("timeout", "no reply in " + this.options.timeout + " ms"));
      }, this.options.timeout);
      this._pending.set(id, { resolve, reject, timer });
      this._ws.send(JSON.stringify({ id, ...fields }));
    });
  }

  _message(text) {
    let msg;
    try { msg = JSON.parse(text); } catch { return; }
    if (msg.id !== undefined && msg.id !== null && this._pending.has(msg.id)) {
      const p = this._pending.get(msg.id);
      this._pending.delete(msg.id);
      clearTimeout(p.timer);
      this._timers.delete(p.timer);
      if (msg.error) p.reject(new ProtocolError(msg.error.code, msg.error.message));
      else p.resolve(msg);
      return;
    }
    if (msg.connect && !this.authenticating && this.state === "connecting") {
      this._connected(msg.connect);  // version 1's hello
      return;
    }
    const sub = msg.channel !== undefined ? this.subscriptions.get(msg.channel) : undefined;
    if (!sub) return;
    if (msg.offset !== undefined) {
      if (sub._resyncing) return;  // the resubscribe reply carries it
      const last = sub.position;
      if (last && msg.epoch === last.epoch && msg.offset > last.offset + 1) this._resync(sub);
      else sub._publication(msg);
    }
    else if (msg.join) { sub.options.onJoin?.(msg.join, msg.count); sub.emit("join", msg); }
    else if (msg.leave) { sub.options.onLeave?.(msg.leave, msg.count); sub.emit("leave", msg); }
  }

  // A gap: resubscribe from the last publication seen (its reply holds the
  // missed ones). After a disconnect, the reconnect resubscribes instead.
  _resync(sub) {
    sub._resyncing = true;
    const again = () => {
      sub._resyncing = false;
      if (this.state === "connected" && this.subscriptions.get(sub.channel) === sub) this._subscribe(sub);
    };
    this._request({ op: "unsubscribe", channel: sub.channel }).then(again, again);
  }

  _closed(code, reason) {
    const was = this.state;
    this._ws = null;
    for (const p of this._pending.values()) {
      clearTimeout(p.timer);
      this._timers.delete(p.timer);
      p.reject(new ProtocolError("disconnected", "the connection closed"));
    }
    this._pending.clear();
    for (const sub of this.subscriptions.values()) {
      if (sub.subscribed) sub._newReady();
      sub.subscribed = false;
      sub._resyncing = false;
    }
    if (this._refreshTimer) { clearTimeout(this._refreshTimer); this._timers.delete(this._refreshTimer); }
    this._refreshTimer = null;
    this._setState("disconnected");
    if (was !== "disconnected") this.emit("disconnected", { code, reason });
    if (!this._wanted) return;
    // A refused or expired token with nothing to ask for a new one: stop.
    if ((code === 3000) && !this.options.getToken) {
      this._wanted = false;
      this.emit("error", { code: "unauthorized", message: reason || "token refused" });
      return;
    }
    const base = Math.min(this.options.maxReconnectDelay,
                          this.options.minReconnectDelay * 2 ** this._attempt);
    this._attempt = Math.min(this._attempt + 1, 30);
    const delay = base / 2 + Math.random() * base / 2;  // jitter: a storm spreads out
    this.emit("reconnecting", { attempt: this._attempt, delayMs: delay });
    this._later(() => { if (this._wanted && this.state === "disconnected") this._open(); }, delay);
  }
}

export { STATES };
