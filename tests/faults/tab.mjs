// The fault suite's editor tab: the tab protocol (TAB-PROTOCOL.md) over a real WebSocket,
// reconnecting as the editor's page does (after any close but 4409: 2 s, 4 s, 8 s … at most
// 30 s, with the relay's resume credential while it holds, else with a new ticket), and
// recording everything the
// checker needs: each connection (conn, a number per account), each call it receives (the
// relay's id and the call's nonce), each notifications/cancelled, each answer, each close.
//
// Its one tool answers with its account, the call's nonce and the connection that ran it, so
// that the checker proves no answer came from another account's tab and which tab answered,
// after the time the agent asked for (arguments.ms: a few ms to ~2 s, so that calls are in
// flight when faults hit).
import WebSocket from 'ws';

export class FaultTab {
  // emit(event): records one event; getTicket(): a fresh ticket (rejects on failure).
  constructor({ account, gw, url, origin, getTicket, emit, rng }) {
    Object.assign(this, { account, gw, url, origin, getTicket, emit, rng });
    this.conn = 0;            // connections attempted so far (the current one's number)
    this.connected = null;    // the live connection's number, once its hello is answered
    this.stopped = false;
    this.displaced = false;
    this.ws = null;
    this.resume = null;       // the relay's last resume credential (relay/resume)
    this.resumeExpires = 0;
    this.place = 0;           // the ticket connection whose place in the order a resume keeps
  }

  async run() {
    let delay = 2000;
    while (!this.stopped) {
      const conn = ++this.conn;
      try {
        const resume = this.resume && Date.now() < this.resumeExpires - 5000 ? this.resume : null;
        const code = await this.connect(conn, resume ? { resume } : { ticket: await this.getTicket() }, () => { delay = 2000; });
        if (code === 4409) {
          // Displaced: a person's tab that lost to another does not come back by itself.
          this.displaced = true;
          return;
        }
      } catch (error) {
        this.emit({ ev: 'tab_fail', account: this.account, gw: this.gw, conn, error: String(error.message ?? error).slice(0, 200) });
      }
      if (this.stopped) return;
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 30000);
    }
  }

  // One connection: open, hello ({ ticket } or { resume }), serve until closed. Resolves with
  // the close code.
  connect(conn, credential, onUp) {
    return new Promise((resolve, reject) => {
      // A gateway that hangs (SIGSTOP) accepts TCP but never answers: bounded waits.
      const ws = new WebSocket(this.url, { origin: this.origin, handshakeTimeout: 5000 });
      this.ws = ws;
      const calls = new Map();  // relay id -> { nonce, timer }
      let up = false;
      const helloTimer = setTimeout(() => ws.terminate(), 12000);
      ws.on('error', () => {});
      ws.on('unexpected-response', (req, res) => {
        clearTimeout(helloTimer);
        ws.terminate();
        reject(new Error(`upgrade refused: ${res.statusCode}`));
      });
      ws.on('open', () => {
        // The checker orders tabs by this moment: the ticket is redeemed (the tab's place in
        // its account's order is fixed) between the hello and its answer.
        // A resumed connection keeps the place of the ticket connection it descends from.
        if (!credential.resume) this.place = conn;
        this.emit({ ev: 'tab_hello', account: this.account, gw: this.gw, conn, resumed: Boolean(credential.resume), place: this.place });
        ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'relay/hello', params: { ...credential, client: { name: 'fault-tab', version: '1.0.0' } } }));
      });
      ws.on('close', (code, reason) => {
        clearTimeout(helloTimer);
        for (const { timer } of calls.values()) clearTimeout(timer);
        if (this.connected === conn) this.connected = null;
        if (code === 4401 || code === 4403) this.resume = null;  // refused: a ticket next time
        if (!up && code === 4409) {
          // Came back with its credential after a newer tab took the account: it stays off.
          this.emit({ ev: 'tab_fail', account: this.account, gw: this.gw, conn, error: 'displaced before the hello was answered' });
          resolve(code);
          return;
        }
        if (!up) {
          reject(new Error(`closed before the hello was answered: ${code} ${reason}`));
          return;
        }
        this.emit({ ev: 'tab_close', account: this.account, gw: this.gw, conn, code, reason: reason.toString().slice(0, 200) });
        resolve(code);
      });
      ws.on('message', (data) => {
        let m;
        try { m = JSON.parse(data.toString()); } catch { return; }
        if (m.id === 1 && (m.result || m.error) && !up) {
          clearTimeout(helloTimer);
          if (m.error) {
            ws.close();
            reject(new Error(`hello refused: ${JSON.stringify(m.error)}`));
            return;
          }
          up = true;
          this.connected = conn;
          onUp();
          this.emit({ ev: 'tab_up', account: this.account, gw: this.gw, conn, tabId: m.result.tabId, helloAccount: m.result.account });
          return;
        }
        if (m.method === 'tools/call' && m.id !== undefined) {
          const nonce = m.params?.arguments?.nonce;
          const ms = Number(m.params?.arguments?.ms ?? 0);
          this.emit({ ev: 'tab_call', account: this.account, gw: this.gw, conn, id: m.id, nonce });
          const answer = () => {
            calls.delete(m.id);
            if (ws.readyState !== WebSocket.OPEN) return;
            this.emit({ ev: 'tab_answer', account: this.account, gw: this.gw, conn, id: m.id, nonce });
            ws.send(JSON.stringify({
              jsonrpc: '2.0',
              id: m.id,
              result: {
                content: [{ type: 'text', text: `${this.account} ${nonce}` }],
                structuredContent: { account: this.account, nonce, conn, gw: this.gw },
              },
            }));
          };
          if (ms <= 0) answer();  // the latency test: answer at once
          else calls.set(m.id, { nonce, timer: setTimeout(answer, ms) });
          return;
        }
        if (m.method === 'notifications/cancelled') {
          const id = m.params?.requestId;
          const call = calls.get(id);
          this.emit({ ev: 'tab_cancel', account: this.account, gw: this.gw, conn, id, nonce: call?.nonce, reason: String(m.params?.reason ?? '').slice(0, 200) });
          // A tab "should stop and may still answer; that answer is dropped": half the time
          // stop, half the time answer anyway, so that both paths run.
          if (call && this.rng() < 0.5) {
            clearTimeout(call.timer);
            calls.delete(id);
          }
          return;
        }
        if (m.method === 'relay/resume') {
          this.resume = m.params?.resume ?? null;
          this.resumeExpires = Date.now() + Number(m.params?.expiresIn ?? 0) * 1000;
          return;
        }
        if (m.method === 'relay/displaced') {
          this.emit({ ev: 'tab_displaced', account: this.account, gw: this.gw, conn, reason: String(m.params?.reason ?? '') });
          return;
        }
        if (m.method && m.id !== undefined) {
          ws.send(JSON.stringify({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no such method in the fault tab' } }));
        }
      });
    });
  }

  stop() {
    this.stopped = true;
    this.ws?.close(1000);
  }
}
