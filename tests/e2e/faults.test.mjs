// The relay under the faults a real network brings (issue 25), on loopback: a router that hangs,
// a link cut under a gateway that is stopped, a token revoked while its stream is open, an
// account whose tab floods its agents. Each test asserts what the agent, the tab or the person's
// page sees. (tests/faults/ runs the same promises across network namespaces, under a seeded
// schedule of faults.)
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startStack, stopProcess, waitUntil, binDir, repoRoot } from './lib/stack.mjs';
import { ScriptedTab } from './lib/tab.mjs';
import { RawAgent } from './lib/agent.mjs';
import { join } from 'node:path';
import { createServer } from 'node:http';

const stacks = [];
after(async () => { await Promise.all(stacks.map((s) => s.stop())); });

async function stackOf(options) {
  const stack = await startStack(options);
  stacks.push(stack);
  return stack;
}

async function connectAgent(url, token) {
  const client = new Client({ name: 'faults-agent', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

const textOf = (result) => result.content.map((c) => c.text).join(' ');

// promise's value, or a failure saying what did not happen within ms. The timer is cleared
// either way: a pending one would hold the test file's process open until it fired.
async function within(promise, what, ms) {
  let timer;
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms); });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// Resolves once the SSE stream has ended; fails if it is still open after ms.
async function streamEnds(stream, what, ms = 15000) {
  const ended = (async () => { while ((await stream.next()) !== null) { /* events before the end */ } })();
  await within(ended, `${what} did not end`, ms);
}
const ready = async (gateway) => (await fetch(`http://127.0.0.1:${gateway.port}/readyz`)).status === 200;

test('a router that hangs is found within seconds: the call ends with the relay\'s message, its tab is told to stop, and the gateways relink', async () => {
  // A call's own deadline is far away: what ends it must be the hung link, not the clock.
  const stack = await stackOf({ gateways: 2, gatewayArgs: ['--call_timeout=60s'] });
  const [gw1, gw2] = stack.gateways;
  const tab = new ScriptedTab(gw1.wsUrl);
  tab.handlers['tools/call'] = (params) => (params.arguments?.hang ? new Promise(() => {}) : { content: [{ type: 'text', text: 'done' }] });
  await tab.hello(await stack.ticket('alice'));
  const agent = await connectAgent(gw2.url, await stack.mintToken('alice'));

  const call = agent.callTool({ name: 'get_view', arguments: { hang: true } }, undefined, { timeout: 120000 });
  const delivered = await tab.waitFor((m) => m.method === 'tools/call');
  const router = stack.routers[0];
  try {
    await stopProcess(router.child.pid);
    // Both gateways find the router hung (it answers no ping) and give its calls up.
    const result = await call;
    assert.equal(result.isError, true);
    assert.match(textOf(result), /relay is restarting/);
    // The tab is told to stop: the agent's retry must not run beside this first run.
    const cancelled = await tab.waitFor((m) => m.method === 'notifications/cancelled' && m.params.requestId === delivered.id);
    assert.match(cancelled.params.reason, /lost its link/);
    await waitUntil(async () => !(await ready(gw2)), 'gateway 2 to say its shard is down');
  } finally {
    process.kill(router.child.pid, 'SIGCONT');
  }
  // The gateways relink and announce the tab again: the next call is answered.
  await waitUntil(async () => (await ready(gw1)) && (await ready(gw2)), 'both gateways relinked', 20000);
  await waitUntil(async () => {
    const again = await agent.callTool({ name: 'get_view', arguments: {} });
    return !again.isError && textOf(again) === 'done';
  }, 'a call answered again', 20000);
  await agent.close();
  tab.close();
});

// The local port of the gateway's link to the router (the gateway is pid, the router's link port
// is linkPort), from the kernel's table of sockets.
function linkSourcePort(pid, linkPort) {
  const lines = execFileSync('ss', ['-tnpH', 'state', 'established', `( dport = :${linkPort} )`]).toString().split('\n');
  const line = lines.find((l) => l.includes(`pid=${pid},`));
  assert.ok(line, `no link of pid ${pid} to port ${linkPort} in:\n${lines.join('\n')}`);
  return Number(/:(\d+)\s+\S+:\d+\s/.exec(line)[1]);
}

test('a tab announced again after its gateway relinks does not displace the newer tab the person opened meanwhile', async () => {
  const stack = await stackOf({ gateways: 2 });
  const [gw1, gw2] = stack.gateways;
  const router = stack.routers[0];
  const old = new ScriptedTab(gw1.wsUrl);
  old.handlers['tools/call'] = async () => ({ content: [{ type: 'text', text: 'old tab' }] });
  await old.hello(await stack.ticket('alice'));

  // Gateway 1 stops, and its link is cut under it: the router lets its tab go, and gateway 1
  // hears of nothing (any Displace would be lost with the link).
  let resumed = false;
  try {
    // Every thread stopped before its link is cut: one still running would hear the cut.
    await stopProcess(gw1.child.pid);
    const port = linkSourcePort(gw1.child.pid, router.linkPort);
    execFileSync('ss', ['-K', 'state', 'established', `( sport = :${port} and dport = :${router.linkPort} )`]);
    const tabsOf = () => JSON.parse(execFileSync(join(binDir, 'relayctl'), [`--router=127.0.0.1:${router.port}`, '--json', 'tabs']).toString());
    await waitUntil(() => tabsOf().length === 0, 'the router to let the old tab go');

    // The person opens the editor again; the new tab comes in through gateway 2.
    const newer = new ScriptedTab(gw2.wsUrl);
    newer.handlers['tools/call'] = async () => ({ content: [{ type: 'text', text: 'new tab' }] });
    assert.ok((await newer.hello(await stack.ticket('alice'))).result);

    // Gateway 1 wakes, relinks and announces its old tab again.
    process.kill(gw1.child.pid, 'SIGCONT');
    resumed = true;
    const displaced = await old.waitFor((m) => m.method === 'relay/displaced', 20000);
    assert.match(displaced.params.reason, /another tab/);
    assert.equal((await old.closed).code, 4409);
    assert.equal(newer.received.some((m) => m.method === 'relay/displaced'), false, 'the newest tab was not displaced');
    assert.equal(newer.closeCode, undefined);

    const agent = await connectAgent(gw1.url, await stack.mintToken('alice'));
    assert.equal(textOf(await agent.callTool({ name: 'get_view', arguments: {} })), 'new tab');
    await agent.close();
    newer.close();
  } finally {
    if (!resumed) process.kill(gw1.child.pid, 'SIGCONT');
  }
});

test('a revoked token\'s open stream ends at once, and a password change closes the account\'s tab with 4403 (sign in again)', async () => {
  const stack = await stackOf({ gateways: 2, forgetHook: true, gatewayArgs: ['--call_timeout=60s'] });
  const [gw1, gw2] = stack.gateways;
  const tab = new ScriptedTab(gw1.wsUrl);
  tab.handlers['tools/call'] = () => new Promise(() => {});
  await tab.hello(await stack.ticket('alice'));
  const credential = await tab.credential();

  const token = await stack.mintToken('alice');
  const agent = new RawAgent(gw2.url, token);
  await agent.initialize();
  const { res, stream } = await agent.openStream();
  assert.equal(res.status, 200);
  // The gateway closes the connection after a stream's end, and its head says so: a proxy
  // that reused the connection would lose the next request sent on it as it closes.
  assert.equal(res.headers.get('connection'), 'close');
  // Another of alice's tokens keeps its stream: only the revoked token's ends.
  const other = new RawAgent(gw2.url, await stack.mintToken('alice', 'other'));
  await other.initialize();
  const kept = await other.openStream();

  await stack.revokeToken(token);
  // The stream ends (the response's end, not a hang), and its agent hears 401 when it reconnects.
  await streamEnds(stream, "the revoked token's GET stream");
  assert.equal((await agent.openStream()).res.status, 401);
  assert.equal(kept.res.status, 200);

  // A call of the other token is in the tab when alice changes her password.
  const pending = other.callTool('get_view', {});
  const delivered = await tab.waitFor((m) => m.method === 'tools/call');
  execFileSync(join(repoRoot, 'hostapi', 'bin', 'hostapi'), ['user:passwd', 'alice', 'a-new-password'], {
    env: { ...process.env, ...stack.hostapiEnv }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  // The page is told to sign in again (not just to reconnect with a new ticket), after the tab
  // was told to stop the call it had.
  const { code } = await within(tab.closed, 'the tab was not closed', 15000);
  assert.equal(code, 4403);
  assert.ok(tab.received.some((m) => m.method === 'notifications/cancelled' && m.params.requestId === delivered.id));
  // Nor does its resume credential bring it back, on the other gateway either.
  const back = new ScriptedTab(gw2.wsUrl);
  const refused = await back.resume(credential);
  assert.match(refused.error.message, /sign in again/);
  assert.equal((await back.closed).code, 4403);
  const answer = await pending;
  assert.equal(answer.message.result.isError, true);
  // Every stream of the account ends with it.
  await streamEnds(kept.stream, "the account's other GET stream");
});

// Between authsvc and the host API: passes everything on, and while holding, keeps the host
// API's answers to agent/verify and agent/redeem until released. A kept answer is the host API's
// word as of the request, arriving late: as when it is on its way back while a revocation is
// pushed to the gateways.
async function startHoldingProxy() {
  const proxy = { target: null, held: [], holding: false };
  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !['host', 'connection', 'content-length'].includes(name)));
    const upstream = await fetch(`${proxy.target}${req.url}`, { method: req.method, headers, body: req.method === 'GET' ? undefined : Buffer.concat(chunks) });
    const body = Buffer.from(await upstream.arrayBuffer());
    const answer = () => {
      res.writeHead(upstream.status, Object.fromEntries([...upstream.headers].filter(([name]) => !['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive'].includes(name))));
      res.end(body);
    };
    if (proxy.holding && /agent\/(verify|redeem)/.test(req.url)) proxy.held.push(answer);
    else answer();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.origin = `http://127.0.0.1:${server.address().port}`;
  proxy.release = () => { proxy.holding = false; for (const answer of proxy.held.splice(0)) answer(); };
  proxy.close = () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); });
  return proxy;
}

test('a stream or a tab whose verdict was on its way while the sign-in ended does not stay open', async () => {
  const proxy = await startHoldingProxy();
  after(proxy.close);
  const stack = await stackOf({
    gateways: 1, forgetHook: true,
    authsvcArgs: (s) => {
      const base = new URL(s.hostapi.base);
      proxy.target = base.origin;
      // authsvc's default 2 s upstream timeout would end the held answers on a busy machine
      // (a sanitizer build) and refuse both with "unavailable" instead of what is asserted.
      return [`--api_base=${proxy.origin}${base.pathname}`, '--upstream_timeout=30s'];
    },
  });
  const [gw] = stack.gateways;
  // alice's tab: when it is closed with 4403, the revocation has reached the gateway.
  const witness = new ScriptedTab(gw.wsUrl);
  assert.ok((await witness.hello(await stack.ticket('alice'))).result);
  const agent = new RawAgent(gw.url, await stack.mintToken('alice'));
  await agent.initialize();
  // Another token of alice's, which the gateway has not seen: its stream's verdict is asked of
  // authsvc, and the host API's answer ("good") is kept on its way.
  const late = new RawAgent(gw.url, await stack.mintToken('alice', 'late'));
  late.session = agent.session;
  const ticket = await stack.ticket('alice');
  proxy.holding = true;
  const opening = late.openStream();
  const tab = new ScriptedTab(gw.wsUrl);
  const hello = tab.hello(ticket);
  await waitUntil(() => proxy.held.length === 2, 'the verification and the redemption to be held');

  execFileSync(join(repoRoot, 'hostapi', 'bin', 'hostapi'), ['user:passwd', 'alice', 'a-new-password'], {
    env: { ...process.env, ...stack.hostapiEnv }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  const { code } = await within(witness.closed, 'the open tab was not closed', 8000);
  assert.equal(code, 4403);
  const metrics = await (await fetch(`http://127.0.0.1:${gw.port}/metrics`)).text();
  assert.match(metrics, /^relay_gateway_revocations_total 1$/m);

  // The answers from before the revocation arrive now.
  proxy.release();
  const { res, stream } = await opening;
  assert.equal(res.status, 200);
  await streamEnds(stream, 'the stream opened on a verdict from before the revocation', 5000);
  const answered = await hello;
  assert.match(answered.error?.message ?? '', /sign in again/, JSON.stringify(answered));
  assert.equal((await tab.closed).code, 4403);
});

test("one account's tab flooding its agents with list changes loses its own streams, and another account on the same links notices nothing", async () => {
  const stack = await stackOf({ gateways: 2, users: ['alice', 'bob', 'flood'] });
  const [gw1, gw2] = stack.gateways;
  const floodTab = new ScriptedTab(gw1.wsUrl);
  await floodTab.hello(await stack.ticket('flood'));
  const bobTab = new ScriptedTab(gw1.wsUrl);
  let answered = 0;
  bobTab.handlers['tools/call'] = async () => ({ content: [{ type: 'text', text: `bob ${++answered}` }] });
  await bobTab.hello(await stack.ticket('bob'));
  const bob = await connectAgent(gw2.url, await stack.mintToken('bob'));

  // Many sessions of the flooding account, each with its GET stream open on gateway 2.
  const token = await stack.mintToken('flood');
  const streams = [];
  for (let i = 0; i < 48; i++) {
    const agent = new RawAgent(gw2.url, token);
    await agent.initialize();
    const opened = await agent.openStream();
    assert.equal(opened.res.status, 200);
    streams.push(opened);
  }
  await waitUntil(() => floodTab.received.some((m) => m.method === 'relay/agents' && m.params.count === 48), 'the tab to count 48 agents');

  // 1,000 list changes of 32 KiB each: ~1.5 GB for the router to fan out to gateway 2, far
  // beyond any queue, on the link bob's calls use too.
  const pad = 'x'.repeat(32 * 1024);
  const flood = (async () => {
    for (let i = 0; i < 1000; i++) {
      floodTab.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { pad, i } });
      if (i % 50 === 49) await new Promise((r) => setImmediate(r));
    }
  })();
  // Bob calls all the while, and every call is answered by his tab.
  const results = [];
  const deadline = Date.now() + 3000;
  while (Date.now() < deadline || results.length < 20) {
    results.push(await bob.callTool({ name: 'get_view', arguments: {} }));
  }
  await flood;
  assert.deepEqual(results.filter((r) => r.isError), [], 'bob saw no error');
  assert.ok(results.every((r, i) => textOf(r) === `bob ${i + 1}`));

  // The flooding account's own streams were ended (its agents resume by replay).
  await Promise.all(streams.map(({ stream }, i) => streamEnds(stream, `the flooding account's stream ${i}`)));
  const metrics = await (await fetch(stack.routers[0].metricsUrl)).text();
  assert.match(metrics, /relay_router_streams_cut_total [1-9]/);
  assert.doesNotMatch(stack.routers[0].lines.join('\n'), /gateway unlinked/, 'no link ended');
  await bob.close();
});
