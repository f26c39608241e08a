// One driver per gateway host, run beside its gateway (`ip netns exec <gw ns> node driver.mjs
// CONFIG`): the agents (the real MCP SDK 1.x client, Streamable HTTP with the bearer) and the
// tabs (FaultTab) of the accounts placed on this host, all talking to the gateway on this
// host's loopback, and the host API over the network for logins, tokens and tickets.
//
// It writes one JSON line per event to stdout (the checker's input), each with `t` (ms since
// the epoch: every process of the run shares the machine's clock):
//   call       { nonce, account, gw, tag }                           an agent sent a tools/call
//   done       { nonce, account, gw, tag, outcome, ms, answer?, text?, code? }   what it got
//   tab_*      see tab.mjs
//   ready, idle, seq_done, probe_done, fatal                          answers to the runner
// outcome: result | tool_error (isError, with its text) | rpc_error (a JSON-RPC error) |
// http_error (an HTTP status the SDK surfaced) | transport_error (no HTTP answer: the
// connection failed) | agent_timeout (the SDK gave up waiting: the relay never answered).
//
// Commands, one JSON line each on stdin: {op: "load", rate} (every agent calls at random,
// `rate` calls a second on average, at most 4 of its own in flight), {op: "stop"} (no new
// calls; "idle" once none is in flight), {op: "seq", account, n, tag} (n calls one after the
// other, the tab answering at once; "seq_done" with their durations), {op: "probe", tag}
// (one call per agent at once), {op: "tab", account, password} (open a tab of that account
// here: the person reopened the editor), {op: "quit"}.
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { FaultTab } from './tab.mjs';
import { mulberry32 } from './schedule.mjs';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const { gw, url, hostapiBase, origin, agentTimeoutMs } = config;
const rng = mulberry32(config.seed);

// Events are gathered and written once per turn of the event loop: hundreds a second.
let out = [];
function emit(event) {
  out.push(JSON.stringify({ t: Date.now(), ...event }));
  if (out.length === 1) setImmediate(flush);
}
function flush() {
  if (out.length === 0) return;
  process.stdout.write(out.join('\n') + '\n');
  out = [];
}

// The host API, as the editor's page and the person's account menu use it. Bounded waits:
// a partitioned host must not leave a tab waiting minutes for a ticket.
async function hostApi(route, { cookie, body }) {
  const res = await fetch(`${hostapiBase}?r=${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}) },
    body: JSON.stringify(body ?? {}),
    signal: AbortSignal.timeout(5000),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${route}: ${res.status} ${text.slice(0, 200)}`);
  return { res, json: JSON.parse(text) };
}

async function login(account) {
  for (let attempt = 0; ; attempt++) {
    try {
      const { res } = await hostApi('login', { body: { username: account.name, password: account.password } });
      return res.headers.get('set-cookie').split(';')[0];
    } catch (error) {
      // Only at start-up, before any fault: the host API may still be busy with others.
      if (attempt >= 5) throw error;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

// A bounded number of promises at once.
async function inParallel(items, limit, fn) {
  const queue = [...items];
  await Promise.all(Array.from({ length: Math.min(limit, queue.length) }, async () => {
    while (queue.length) await fn(queue.shift());
  }));
}

const agents = new Map();  // account -> { client, inFlight, loadTimer }
const tabs = new Map();    // account -> FaultTab
let seq = 0;
let outstanding = 0;
let loadOn = false;
let idleWaiter = null;

async function waitReady() {
  const deadline = Date.now() + 30000;
  for (;;) {
    try {
      const res = await fetch(url.replace(/\/mcp$/, '/readyz'), { signal: AbortSignal.timeout(2000) });
      if (res.status === 200) return;
    } catch {}
    if (Date.now() > deadline) throw new Error(`gateway ${gw} not ready after 30 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function connectAgent(account, token) {
  const client = new Client({ name: `fault-agent-${account}`, version: '1.0.0' });
  client.onerror = () => {};  // the GET stream's reconnects after a fault: not a call's outcome
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  agents.set(account, { client, inFlight: 0 });
}

// One tools/call, recorded from the agent's side; resolves with the duration (ms).
async function call(account, { tag, ms }) {
  const agent = agents.get(account);
  const nonce = `${gw}.${++seq}`;
  agent.inFlight++;
  outstanding++;
  emit({ ev: 'call', nonce, account, gw, tag, ms });
  const started = performance.now();
  let done;
  try {
    const result = await agent.client.callTool({ name: 'work', arguments: { nonce, ms } }, undefined, { timeout: agentTimeoutMs });
    if (result.isError) {
      done = { outcome: 'tool_error', text: String(result.content?.[0]?.text ?? '') };
    } else {
      done = { outcome: 'result', answer: result.structuredContent ?? null, text: String(result.content?.[0]?.text ?? '') };
    }
  } catch (error) {
    if (error instanceof McpError && error.code === ErrorCode.RequestTimeout && /timed out/i.test(error.message)) {
      done = { outcome: 'agent_timeout', text: error.message };
    } else if (error instanceof McpError) {
      done = { outcome: 'rpc_error', code: error.code, text: error.message };
    } else if (error instanceof StreamableHTTPError) {
      done = { outcome: 'http_error', code: error.code, text: error.message };
    } else {
      const cause = error.cause?.code ?? error.cause?.message ?? '';
      done = { outcome: 'transport_error', text: `${error.message}${cause ? ` (${cause})` : ''}` };
    }
  }
  const duration = performance.now() - started;
  if (done.text?.length > 300) done.text = done.text.slice(0, 300);
  emit({ ev: 'done', nonce, account, gw, tag, duration: Math.round(duration * 1000) / 1000, ...done });
  agent.inFlight--;
  outstanding--;
  if (outstanding === 0 && idleWaiter) idleWaiter();
  return duration;
}

// The tab's time for a call: log-uniform, 3 ms … 2 s (many short, some long).
const tabTime = () => Math.round(rng.logUniform(3, 2000));

function startLoad(rate) {
  loadOn = true;
  for (const [account, agent] of agents) {
    if (config.noLoad?.includes(account)) continue;
    const next = () => {
      if (!loadOn) return;
      // Exponential gaps: a Poisson stream of calls per account.
      agent.loadTimer = setTimeout(() => {
        if (!loadOn) return;
        if (agent.inFlight < 4) call(account, { tag: 'load', ms: tabTime() });
        next();
      }, -Math.log(1 - rng()) * 1000 / rate);
    };
    // Spread the first calls over a second, not all at the same instant.
    agent.loadTimer = setTimeout(next, rng() * 1000);
  }
}

// A tab of the account on this host; resolves once its first connection is up.
function startTab(name, cookie) {
  return new Promise((resolve) => {
    const tab = new FaultTab({
      account: name,
      gw,
      url: url.replace(/^http/, 'ws'),
      origin,
      rng: rng.fork(),
      getTicket: async () => (await hostApi('agent/ticket', { cookie })).json.ticket,
      emit: (event) => {
        emit(event);
        if (event.ev === 'tab_up') resolve();
      },
    });
    tabs.set(name, tab);
    tab.run();
  });
}

async function main() {
  await waitReady();
  const cookies = new Map();
  await inParallel(config.accounts, 4, async (account) => {
    cookies.set(account.name, await login(account));
  });
  const tokens = new Map();
  await inParallel(config.accounts.filter((a) => a.agent), 4, async (account) => {
    const { json } = await hostApi('agent-tokens', { cookie: cookies.get(account.name), body: { name: `fault agent on ${gw}` } });
    tokens.set(account.name, json.token);
  });
  // Tabs first (their first connection), so that the agents' first calls find them.
  await Promise.all(config.accounts.filter((a) => a.tab).map((account) => startTab(account.name, cookies.get(account.name))));
  await inParallel(config.accounts.filter((a) => a.agent), 8, (account) => connectAgent(account.name, tokens.get(account.name)));
  emit({ ev: 'ready', gw, agents: agents.size, tabs: tabs.size });
}

createInterface({ input: process.stdin }).on('line', async (line) => {
  if (!line.trim()) return;
  const cmd = JSON.parse(line);
  switch (cmd.op) {
    case 'load':
      startLoad(cmd.rate);
      break;
    case 'stop':
      loadOn = false;
      for (const agent of agents.values()) clearTimeout(agent.loadTimer);
      if (outstanding > 0) await new Promise((r) => { idleWaiter = r; });
      idleWaiter = null;
      emit({ ev: 'idle', gw });
      break;
    case 'seq': {
      const durations = [];
      for (let i = 0; i < cmd.n; i++) durations.push(await call(cmd.account, { tag: cmd.tag, ms: 0 }));
      emit({ ev: 'seq_done', gw, tag: cmd.tag, durations });
      break;
    }
    case 'tab':
      // The person opens the editor of this account here (its older tab is elsewhere).
      try {
        await startTab(cmd.account, await login({ name: cmd.account, password: cmd.password }));
      } catch (error) {
        emit({ ev: 'tab_fail', account: cmd.account, gw, conn: 0, error: String(error.message ?? error) });
      }
      break;
    case 'probe':
      await Promise.all([...agents.keys()].map((account) => call(account, { tag: cmd.tag, ms: 5 })));
      emit({ ev: 'probe_done', gw, tag: cmd.tag });
      break;
    case 'quit':
      for (const tab of tabs.values()) tab.stop();
      await Promise.all([...agents.values()].map((a) => a.client.close().catch(() => {})));
      flush();
      process.exit(0);
  }
  flush();
});

main().catch((error) => {
  emit({ ev: 'fatal', gw, error: String(error.stack ?? error) });
  flush();
  process.exit(1);
});
