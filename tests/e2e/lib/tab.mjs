// A scripted editor tab speaking the tab protocol (TAB-PROTOCOL.md) over a real WebSocket.
import WebSocket from 'ws';

export class ScriptedTab {
  constructor(url, { origin = 'http://editor.test' } = {}) {
    this.url = url;
    this.origin = origin;
    this.received = [];   // every message from the relay, parsed
    this.handlers = {};   // method -> async (params, message) => result
    this.waiters = [];
    this.requestCount = 0;
  }

  // Resolves once the socket is open; rejects with the HTTP status when the upgrade is refused.
  open() {
    return new Promise((resolve, reject) => {
      this.ws = new WebSocket(this.url, { origin: this.origin });
      this.closed = new Promise((resolveClosed) => {
        this.ws.on('close', (code, reason) => {
          this.closeCode = code;
          this.closeReason = reason.toString();
          resolveClosed({ code, reason: this.closeReason });
        });
      });
      this.ws.on('unexpected-response', (req, res) => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode })));
      this.ws.on('error', (error) => reject(error));
      this.ws.on('open', () => resolve());
      this.ws.on('message', (data) => this.onMessage(JSON.parse(data.toString())));
    });
  }

  send(message) {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  // A request of the tab's own (to the agent, through the relay); resolves with the answer.
  // id: the tab's own JSON-RPC id; a 2026-07-28 agent sees it as the key of
  // the request in inputRequests.
  request(method, params, id = `tab-${++this.requestCount}`) {
    this.send({ jsonrpc: '2.0', id, method, params });
    // Only an answer that comes after this request: a tab may reuse its ids.
    return this.waitFor((m) => m.id === id && (m.result !== undefined || m.error !== undefined), 60000, { fresh: true });
  }

  async onMessage(message) {
    this.received.push(message);
    if (message.method === 'relay/resume') this.resumeAt = Date.now();  // its lifetime counts from here
    this.waiters = this.waiters.filter((w) => !(w.test(message) && (w.resolve(message), true)));
    if (message.method && message.id !== undefined) {
      const handler = this.handlers[message.method];
      if (!handler) {
        this.send({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'no handler' } });
        return;
      }
      let result;
      try {
        result = await handler(message.params, message);
      } catch (e) {
        // A handler's error is the request's JSON-RPC error, as a real tab would answer.
        const error = { code: e.code ?? -32603, message: e.message };
        if (e.data !== undefined) error.data = e.data;
        this.send({ jsonrpc: '2.0', id: message.id, error });
        return;
      }
      if (result !== undefined) this.send({ jsonrpc: '2.0', id: message.id, result });
    }
  }

  waitFor(test, timeoutMs = 10000, { fresh = false } = {}) {
    const found = fresh ? undefined : this.received.find(test);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('tab: timed out waiting for a message')), timeoutMs);
      timer.unref();  // a request the relay never answers (a parked call) does not hold the test
      this.waiters.push({ test, resolve: (m) => { clearTimeout(timer); resolve(m); } });
    });
  }

  // Connects and says hello; resolves with the hello's answer (result or error).
  async hello(ticket, client = { name: 'scripted-tab', version: '1.0.0' }) {
    return this.helloWith({ ticket, client });
  }

  // The same with the resume credential of an earlier connection instead of a ticket.
  async resume(credential, client = { name: 'scripted-tab', version: '1.0.0' }) {
    return this.helloWith({ resume: credential, client });
  }

  // Resolves with the answer, or with { closed: code } when the socket closes first (a tab
  // that came back with its credential after a newer one took over is displaced unanswered).
  async helloWith(params) {
    await this.open();
    this.send({ jsonrpc: '2.0', id: 1, method: 'relay/hello', params });
    return Promise.race([
      this.waitFor((m) => m.id === 1 && (m.result || m.error)),
      this.closed.then(({ code }) => ({ closed: code })),
    ]);
  }

  // The latest relay/resume credential the relay gave this connection (waits for the first).
  async credential() {
    await this.waitFor((m) => m.method === 'relay/resume');
    return this.received.filter((m) => m.method === 'relay/resume').at(-1).params.resume;
  }

  close() {
    this.ws?.close();
  }
}

// A tab that reconnects as the editor's page does: after a close (not 4409), wait 2 s, 4 s,
// 8 s … at most 30 s, and connect again with the relay's resume credential while it holds,
// else with a new ticket. Counts every tools/call it gets.
export class ReconnectingTab {
  constructor(url, getTicket, handler) {
    this.url = url;
    this.getTicket = getTicket;
    this.handler = handler;
    this.stopped = false;
    this.connections = 0;
    this.calls = [];  // params of every tools/call received
    this.onConnected = () => {};
  }

  async start() {
    let delay = 2000;
    while (!this.stopped) {
      try {
        const tab = new ScriptedTab(this.url);
        tab.handlers['tools/call'] = async (params) => {
          this.calls.push(params);
          return this.handler(params);
        };
        const resume = this.resume && Date.now() < this.resumeExpires - 5000 ? this.resume : null;
        const hello = resume ? await tab.resume(resume) : await tab.hello(await this.getTicket());
        if (hello.closed === 4409) return;
        if (!hello.result) {
          this.resume = null;
          throw new Error(JSON.stringify(hello.error ?? hello));
        }
        this.current = tab;
        this.connections++;
        this.connectedAt = Date.now();
        delay = 2000;
        this.onConnected();
        const { code } = await tab.closed;
        this.current = undefined;
        const latest = tab.received.filter((m) => m.method === 'relay/resume').at(-1);
        if (latest) {
          this.resume = latest.params.resume;
          this.resumeExpires = tab.resumeAt + latest.params.expiresIn * 1000;
        }
        if (code === 4409) return;
      } catch {
        // refused or dropped: try again after the backoff
      }
      if (this.stopped) return;
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 30000);
    }
  }

  // Resolves once connected (again) after the given time.
  connectedSince(time) {
    return new Promise((resolve) => {
      const check = () => {
        if (this.current && this.connectedAt >= time) resolve(this.connectedAt);
        else setTimeout(check, 20);
      };
      check();
    });
  }

  stop() {
    this.stopped = true;
    this.current?.close();
  }
}
