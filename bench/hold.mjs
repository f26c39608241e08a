// Holds idle connections open against one gateway, for bench.mjs --connections.
//   node hold.mjs KIND URL BATCH < credentials
// KIND: tab (a tab WebSocket that said hello), get (a 2025-11-25 session's GET stream) or listen
// (a 2026-07-28 subscriptions/listen stream). Standard input: one credential per line, a ticket
// for tabs, a bearer token for streams; one connection each; then an empty line. Tabs only:
// lines `first-ticket second-ticket` may follow at any time, and a tab that the relay closes
// (its gateway went away) connects again at once, as the editor's page does: with the resume
// credential the relay gave it (relay/resume), or with its second ticket when BENCH_RESUME=0
// (as the page did before there were credentials); `reheld N in MS ms, A attempts, F given up`
// is printed once every tab so closed is back (MS from the first close). An empty line after
// them is answered `second tickets taken`. The bench sends them just before it kills a
// gateway: tickets live 60 s. A tab closed before its second ticket came stays closed.
import { createRequire } from 'node:module';
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';

const require = createRequire(`${process.env.BENCH_MODULES.replace(/\/$/, '')}/`);
const WebSocket = require('ws');
const [kind, url, batchText] = process.argv.slice(2);
// Standard input, line by line: the credentials up to the empty line, then second tickets.
const input = createInterface({ input: process.stdin });
const credentials = [];
const again = new Map();  // first ticket → second
await new Promise((resolve) => {
  let first = true;
  input.on('line', (line) => {
    if (first && line === '') { first = false; resolve(); return; }
    if (first) { credentials.push(line); return; }
    if (line === '') { console.log('second tickets taken'); return; }
    const [ticket, second] = line.split(' ');
    if (second) again.set(ticket, second);
  });
  input.on('close', resolve);
});
const batch = Number(batchText) || credentials.length;
const target = new URL(url);
const origin = 'http://editor.test';
const held = [];
let attempts = 0;
let givenUp = 0;
const refusals = new Map();  // what went wrong -> how often
const kMostAttempts = 20;
const useResume = process.env.BENCH_RESUME !== '0';
// Connections leave from several loopback addresses (127.0.0.2 …): the kernel looks for a free
// ephemeral port for each connect, and with ~20,000 connections from one address to one port
// that search made connect() itself the bench's bottleneck (38 % of this process's time in a
// gateway restart of 9,500 tabs, 15 s against 6 s spread over eight). Browsers connect from
// machines of their own.
let sourceCount = 0;
const sources = Number(process.env.BENCH_SOURCES ?? 8);
const nextSource = () => `127.0.0.${2 + (sourceCount++ % sources)}`;

// A request that failed says which it was and how long after it began, in steps: a connection
// the gateway closes unanswered 10 s or more after it began is one whose request did not begin
// within --header_timeout of the accept (counted in relay_gateway_request_timeouts_total).
function request(method, headers, body) {
  const began = Date.now();
  return new Promise((resolve, reject) => {
    const req = http.request({ host: target.hostname, port: target.port, path: target.pathname, method, agent: false, headers, localAddress: nextSource() }, resolve);
    req.on('error', (error) => {
      const s = (Date.now() - began) / 1000;
      reject(new Error(`${method} ${error.message} ${s < 1 ? 'within 1 s' : s < 10 ? 'after 1–10 s' : 'after 10 s or more'}`));
    });
    req.end(body);
  });
}

const jsonHeaders = (token, version) => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  authorization: `Bearer ${token}`,
  ...(version ? { 'mcp-protocol-version': version } : {}),
});

async function readAll(res) {
  let text = '';
  for await (const chunk of res) text += chunk;
  return text;
}

// Resolves once the connection is open and idle; rejects with what went wrong.
const open = {
  // credential: a ticket, or { resume } (a tab coming back).
  tab: (credential) => new Promise((resolve, reject) => {
    const ticket = typeof credential === 'string' ? credential : null;
    const ws = new WebSocket(url.replace(/^http/, 'ws'), { headers: { origin }, perMessageDeflate: false, localAddress: nextSource() });
    const client = { name: 'bench-hold', version: '0' };
    ws.on('open', () => ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'relay/hello', params: ticket ? { ticket, client } : { resume: credential.resume, client } })));
    let resume = null;
    ws.on('message', (data) => {
      const m = JSON.parse(data.toString());
      if (m.method === 'relay/resume') resume = m.params.resume;
      if (m.id !== 1) return;
      if (m.result) {
        held.push(() => ws.terminate());
        resolve();
        ws.on('close', () => reconnect(ticket, useResume ? resume : null));
      } else {
        ws.terminate();
        reject(new Error(`hello: ${m.error?.message}`));
      }
    });
    ws.on('close', (code) => reject(new Error(`closed ${code}`)));
    ws.on('error', reject);
  }),
  get: async (token) => {
    const init = await request('POST', jsonHeaders(token), JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench-hold', version: '0' } } }));
    await readAll(init);
    if (init.statusCode !== 200) throw new Error(`initialize ${init.statusCode}`);
    const sid = init.headers['mcp-session-id'];
    const headers = { ...jsonHeaders(token, '2025-11-25'), 'mcp-session-id': sid };
    await readAll(await request('POST', headers, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })));
    const res = await request('GET', { ...headers, accept: 'text/event-stream' });
    if (res.statusCode !== 200) { res.destroy(); throw new Error(`GET ${res.statusCode}`); }
    held.push(() => res.destroy());
  },
  listen: async (token) => {
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: 'bench-hold', version: '0' }, 'io.modelcontextprotocol/clientCapabilities': {} };
    const res = await request('POST', { ...jsonHeaders(token, '2026-07-28'), 'mcp-method': 'subscriptions/listen' },
      JSON.stringify({ jsonrpc: '2.0', id: 'listen:1', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: meta } }));
    if (res.statusCode !== 200) { res.destroy(); throw new Error(`listen ${res.statusCode}`); }
    // Held once acknowledged: the first event.
    await new Promise((resolve, reject) => {
      let text = '';
      res.on('data', (chunk) => { text += chunk; if (text.includes('\n\n')) { res.removeAllListeners('data'); res.resume(); resolve(); } });
      res.on('error', reject);
      res.on('end', () => reject(new Error('listen stream ended')));
    });
    held.push(() => res.destroy());
  },
}[kind];
if (!open) throw new Error(`unknown kind ${kind}`);

// After a failed attempt, the editor's page waits 2 s, 4 s, 8 s … at most 30 s, each between half
// and all of it (hostapi/public/editor/editor.js): a connection the gateway refuses at once
// because the host API could not start its verification within 10 s (docs/decisions.md, "A
// verification that cannot start in time is refused at once") comes back as a page would.
const backoffMs = (tries) => Math.min(30, 2 ** tries) * 1000 * (0.5 + Math.random() / 2);

// Resolves to how many attempts it took, 0 if it gave up.
async function openWithRetry(credential) {
  for (let tries = 1; tries <= kMostAttempts; tries++) {
    attempts += 1;
    try {
      await open(credential);
      return tries;
    } catch (error) {
      const why = String(error.message ?? error);
      refusals.set(why, (refusals.get(why) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, backoffMs(tries)));
    }
  }
  givenUp += 1;
  return 0;
}

// Tabs the relay closed, connecting again with their credential or their second ticket.
const re = { closed: 0, back: 0, givenUp: 0, attempts: 0, firstClose: 0, times: [] };
let stopping = false;
function reconnect(ticket, resume) {
  const second = again.get(ticket);
  if (stopping || !second) return;
  again.delete(ticket);
  if (re.closed++ === 0) re.firstClose = Date.now();
  if (re.closed === 1) refusals.clear();
  openWithRetry(resume ? { resume } : second).then((tries) => {
    re.attempts += tries || kMostAttempts;
    re.times.push(Date.now() - re.firstClose);
    if (tries) re.back += 1; else re.givenUp += 1;
    if (re.back + re.givenUp === re.closed) {
      const at = (q) => re.times.sort((a, b) => a - b)[Math.min(re.times.length - 1, Math.floor(q * re.times.length))];
      const why = [...refusals].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([what, n]) => `${what} ×${n}`).join('; ');
      const seconds = new Map();
      for (const t of re.times) seconds.set(Math.floor(t / 1000), (seconds.get(Math.floor(t / 1000)) ?? 0) + 1);
      const bySecond = [...seconds].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}s:${n}`).join(' ');
      console.log(`reheld ${re.back} in ${Date.now() - re.firstClose} ms, ${re.attempts} attempts, ${re.givenUp} given up (back after p50 ${at(0.5)} ms, p90 ${at(0.9)} ms; by second ${bySecond}${why ? `; refusals: ${why}` : ''})`);
    }
  });
}

// How late this process's event loop ran while it connected: a holder that gets little CPU (as
// at nice 19, which bench/connections.mjs now sets only once the connections are held) writes a
// request long after its connection was accepted, and the gateway gives up a connection whose
// request does not begin within --header_timeout.
const loopDelay = monitorEventLoopDelay({ resolution: 20 });
loopDelay.enable();
const started = Date.now();
for (let i = 0; i < credentials.length; i += batch) {
  await Promise.all(credentials.slice(i, i + batch).map(openWithRetry));
}
loopDelay.disable();
console.log(`held ${held.length} in ${Date.now() - started} ms, ${attempts} attempts, ${givenUp} given up; event loop at most ${Math.round(loopDelay.max / 1e6)} ms late${attempts > held.length ? ` (refusals: ${[...refusals].map(([why, n]) => `${n}× ${why}`).join('; ')})` : ''}`);
process.on('SIGTERM', () => { stopping = true; for (const close of held) close(); process.exit(0); });
setInterval(() => {}, 1 << 30);
