// The promises of MCP-SURFACE.md and TAB-PROTOCOL.md that the conformance suite does not
// cover (issue 3), through the real path: agents on gateway 2, tabs on gateway 1.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { writeFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { startStack, startProcess, waitUntil, binDir } from './lib/stack.mjs';
import { ScriptedTab } from './lib/tab.mjs';
import { RawAgent } from './lib/agent.mjs';

const execFileAsync = promisify(execFile);
let stack, gwTabs, gwAgents;
// Accounts whose tabs arrive together (the keep-alives' test).
const kSpread = Array.from({ length: 30 }, (_, i) => `spread${i}`);
before(async () => {
  stack = await startStack({
    gateways: 2,
    users: ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi', 'ivan', ...kSpread],
    // Short timeouts so that the tests take as long as the behaviour, not the defaults.
    gatewayArgs: (i) => i === 0
      ? ['--tab_ping_interval=300ms', '--tab_hello_timeout=500ms', '--max_tab_message_bytes=65536']
      : ['--call_timeout=1500ms', '--sse_keepalive=200ms', '--max_body_bytes=65536', '--catalogue_poll=100ms'],
  });
  [gwTabs, gwAgents] = stack.gateways;
});
after(async () => { await stack?.stop(); });

async function tabFor(user, gateway = gwTabs) {
  const tab = new ScriptedTab(gateway.wsUrl);
  const hello = await tab.hello(await stack.ticket(user));
  assert.equal(hello.result.account, user);
  return tab;
}

async function agentFor(user) {
  const agent = new RawAgent(gwAgents.url, await stack.mintToken(user));
  await agent.initialize();
  return agent;
}

const isCancel = (m) => m.method === 'notifications/cancelled';

test('deadline: a silent tab gives a tool error within the deadline and receives the cancellation', async () => {
  const tab = await tabFor('alice');
  tab.handlers['tools/call'] = async () => undefined;  // never answers
  const agent = await agentFor('alice');
  const started = Date.now();
  const { message } = await agent.callTool('get_view');
  const elapsed = Date.now() - started;
  assert.equal(message.result.isError, true);
  assert.match(message.result.content[0].text, /did not answer in time/);
  assert.ok(elapsed >= 1400 && elapsed < 4000, `answered after ${elapsed} ms`);
  const delivered = tab.received.find((m) => m.method === 'tools/call');
  const cancel = await tab.waitFor(isCancel);
  assert.equal(cancel.params.requestId, delivered.id);
  tab.close();
});

test('an agent that disconnects mid-call: the tab receives the cancellation', async () => {
  const tab = await tabFor('bob');
  tab.handlers['tools/call'] = async () => undefined;
  const agent = await agentFor('bob');
  const controller = new AbortController();
  const pending = agent.callTool('get_view', {}, undefined, { signal: controller.signal }).catch(() => {});
  const delivered = await tab.waitFor((m) => m.method === 'tools/call');
  controller.abort();
  const body = { jsonrpc: '2.0', id: 99, method: 'tools/call', params: { name: 'get_view' } };
  const res = agent.post(body, { signal: controller.signal }).catch(() => {});
  await res;
  await pending;
  const cancel = await tab.waitFor(isCancel);
  assert.equal(cancel.params.requestId, delivered.id);
  tab.close();
});

test('the agent\'s notifications/cancelled reaches the tab, through another gateway', async () => {
  const tab = await tabFor('carol');
  tab.handlers['tools/call'] = async () => undefined;
  const agent = await agentFor('carol');
  const call = agent.request('tools/call', { name: 'get_view' });
  const delivered = await tab.waitFor((m) => m.method === 'tools/call');
  // The cancellation goes to the tabs' gateway, not the one holding the call.
  const other = new RawAgent(gwTabs.url, agent.token);
  other.session = agent.session;
  const res = await other.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: agent.nextId - 1, reason: 'user pressed stop' } });
  assert.equal(res.status, 202);
  const cancel = await tab.waitFor(isCancel);
  assert.equal(cancel.params.requestId, delivered.id);
  const { message } = await call;
  assert.match(message.result.content[0].text, /cancelled/);
  tab.close();
});

test('displacement: the older tab is told and closed with 4409; calls reach the new tab', async () => {
  const first = await tabFor('dave');
  const second = await tabFor('dave', gwAgents);
  const displaced = await first.waitFor((m) => m.method === 'relay/displaced');
  assert.match(displaced.params.reason, /another tab/);
  assert.equal((await first.closed).code, 4409);
  second.handlers['tools/call'] = async () => ({ content: [{ type: 'text', text: 'from the new tab' }] });
  const agent = await agentFor('dave');
  const { message } = await agent.callTool('get_view');
  assert.equal(message.result.content[0].text, 'from the new tab');
  second.close();
});

test('relay/agents counts sessions from initialize to DELETE', async () => {
  const tab = await tabFor('erin');
  const count = (n) => (m) => m.method === 'relay/agents' && m.params.count === n;
  await tab.waitFor(count(0));
  const a = await agentFor('erin');
  await tab.waitFor(count(1));
  const b = await agentFor('erin');
  await tab.waitFor(count(2));
  // Counted before the DELETE: the tab may hear the new count before the
  // agent hears its 204.
  const after = tab.received.length;
  assert.equal((await b.delete()).status, 204);
  await tab.waitFor((m) => count(1)(m) && tab.received.indexOf(m) >= after);
  // An ended session is 404 on every gateway.
  assert.equal((await b.post({ jsonrpc: '2.0', id: 5, method: 'ping' })).status, 404);
  const viaOther = new RawAgent(gwTabs.url, b.token);
  viaOther.session = b.session;
  await waitUntil(async () => (await viaOther.post({ jsonrpc: '2.0', id: 6, method: 'ping' })).status === 404, 'the end reaches the other gateway');
  // DELETE also ends the session's GET stream.
  const { stream } = await a.openStream();
  assert.equal((await a.delete()).status, 204);
  for (let event = await stream.next(); event !== null; event = await stream.next()) {}
  tab.close();
});

test('the "view changed" line: once, to every session of the account, not to another account', async () => {
  const tab = await tabFor('frank');
  tab.handlers['tools/call'] = async () => ({ content: [{ type: 'text', text: 'ok' }] });
  const bobTab = await tabFor('bob');
  bobTab.handlers['tools/call'] = async () => ({ content: [{ type: 'text', text: 'ok' }] });
  const one = await agentFor('frank');
  const two = await agentFor('frank');
  const bob = await agentFor('bob');
  // Both sessions are known to the router (a fresh account counts exactly these two).
  await tab.waitFor((m) => m.method === 'relay/agents' && m.params.count === 2);
  tab.send({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'editor://view', _meta: { 'relay/line': 'The user switched to the Sound tab.' } } });
  const lines = async (agent) => (await agent.callTool('get_view')).message.result.content.map((c) => c.text);
  await waitUntil(async () => (await lines(one)).includes('The user switched to the Sound tab.'), 'the line reaches session one');
  assert.deepEqual(await lines(one), ['ok']);
  assert.deepEqual(await lines(two), ['ok', 'The user switched to the Sound tab.']);
  assert.deepEqual(await lines(two), ['ok']);
  assert.deepEqual(await lines(bob), ['ok']);
  tab.close();
  bobTab.close();
});

test('GET stream: subscribed updates with event ids, and replay after Last-Event-ID', async () => {
  const tab = await tabFor('carol');
  const agent = await agentFor('carol');
  const sub = await agent.request('resources/subscribe', { uri: 'editor://view' });
  assert.deepEqual(sub.message.result, {});
  let { res, stream, close } = await agent.openStream();
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/event-stream');
  assert.equal(res.headers.get('x-accel-buffering'), 'no');
  assert.equal(res.headers.get('cache-control'), 'no-cache');
  const update = (n) => tab.send({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'editor://view', _meta: { 'relay/line': `change ${n}` } } });
  // The subscription and the stream travel through gateway 2, the updates through gateway 1:
  // send warm-up updates until the stream is known to the router.
  const warm = setInterval(() => update(0), 50);
  await stream.collect(() => true);
  clearInterval(warm);
  update(1);
  update(2);
  const seen = (await stream.collect((e) => e.data.params?._meta?.['relay/line'] === 'change 2'))
    .filter((e) => e.data.params._meta['relay/line'] !== 'change 0');
  assert.deepEqual(seen.map((e) => e.data.method), ['notifications/resources/updated', 'notifications/resources/updated']);
  const firstId = seen[0].id;
  assert.ok(firstId, 'events carry ids');
  close();
  update(3);
  ({ res, stream, close } = await agent.openStream(firstId));
  const replayed = await stream.collect((e) => e.data.params?._meta?.['relay/line'] === 'change 3');
  assert.deepEqual(replayed.map((e) => e.data.params._meta['relay/line']), ['change 2', 'change 3']);
  close();
  tab.close();
});

test('keep-alive comments on an idle stream', async () => {
  const agent = await agentFor('dave');
  const { stream, close } = await agent.openStream();
  const event = await stream.next();
  assert.equal(event.comment, 'keep-alive');
  close();
});

test('progress from the tab reaches the agent with its own token, before the result, as SSE', async () => {
  const tab = await tabFor('erin');
  tab.handlers['tools/call'] = async (params) => {
    const token = params._meta.progressToken;
    assert.match(token, /^relay-/);
    tab.send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: 1, total: 2 } });
    return { content: [{ type: 'text', text: 'done' }] };
  };
  const agent = await agentFor('erin');
  const { events } = await agent.callTool('slow', {}, { progressToken: 'agent-token-1' });
  assert.equal(events[0].data.method, 'notifications/progress');
  assert.equal(events[0].data.params.progressToken, 'agent-token-1');
  assert.equal(events[1].data.result.content[0].text, 'done');
  tab.close();
});

test("a tab's answer written across lines reaches the agent whole, as JSON and on an SSE stream", async () => {
  const tab = await tabFor('erin');
  // JSON allows CR and LF between tokens, and the relay passes a tab's result on as
  // written: on an SSE stream each line must become a data line of its own.
  const answer = (id) => `{"jsonrpc":"2.0","id":${id},"result":{\r\n  "content": [\n    {"type": "text", "text": "two\\nlines"}\r  ]\n}\n}`;
  tab.handlers['tools/call'] = async (params, message) => {
    if (params._meta?.progressToken) {
      tab.send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: params._meta.progressToken, progress: 1 } });
    }
    tab.send(answer(message.id));
    return undefined;
  };
  const agent = await agentFor('erin');
  const { events } = await agent.callTool('slow', {}, { progressToken: 'p-1' });
  assert.equal(events[0].data.method, 'notifications/progress');
  assert.equal(events[1].data.result.content[0].text, 'two\nlines');
  const plain = await agent.callTool('slow', {});
  assert.equal(plain.message.result.content[0].text, 'two\nlines');
  tab.close();
});

test('a changed catalogue file: list_changed on the stream, the new tool listed, no restart', async () => {
  const agent = await agentFor('alice');
  const { stream, close } = await agent.openStream();
  writeFileSync(stack.catalogueFile, JSON.stringify({ tools: [{ name: 'brand_new', description: 'Added while running.', inputSchema: { type: 'object' } }] }));
  const [event] = await stream.collect((e) => e.data.method === 'notifications/tools/list_changed');
  assert.equal(event.data.method, 'notifications/tools/list_changed');
  const { message } = await agent.request('tools/list');
  assert.deepEqual(message.result.tools.map((t) => t.name), ['brand_new']);
  close();
});

test('logging/setLevel filters the tab\'s account-wide log messages', async () => {
  const tab = await tabFor('bob');
  const agent = await agentFor('bob');
  assert.deepEqual((await agent.request('logging/setLevel', { level: 'warning' })).message.result, {});
  const { stream, close } = await agent.openStream();
  const log = (level) => tab.send({ jsonrpc: '2.0', method: 'notifications/message', params: { level, data: `a ${level} message` } });
  const warm = setInterval(() => log('error'), 50);
  await stream.collect(() => true);
  clearInterval(warm);
  log('info');
  log('critical');
  const events = await stream.collect((e) => e.data.params.level === 'critical');
  assert.ok(events.every((e) => e.data.params.level !== 'info'), JSON.stringify(events));
  close();
  tab.close();
});

test('an agent request with a foreign Origin gets 403', async () => {
  const agent = await agentFor('carol');
  const res = await agent.post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { headers: { origin: 'http://evil.test' } });
  assert.equal(res.status, 403);
});

test('a tab request to an agent whose client takes only JSON gets an error, not silence', async () => {
  const tab = await tabFor('frank');
  let answer;
  tab.handlers['tools/call'] = async (params, message) => {
    answer = await tab.request('roots/list', { _meta: { 'relay/requestId': message.id } });
    return { content: [{ type: 'text', text: 'done' }] };
  };
  const agent = await agentFor('frank');
  const { message } = await agent.callTool('needs_roots', {}, undefined, { headers: { accept: 'application/json' } });
  assert.equal(message.result.content[0].text, 'done');
  assert.equal(answer.error.code, -32603);
  tab.close();
});

test('a tab request to the agent without a live call gets -32602', async () => {
  const tab = await tabFor('dave');
  const answer = await tab.request('sampling/createMessage', { messages: [], maxTokens: 1, _meta: { 'relay/requestId': 12345 } });
  assert.equal(answer.error.code, -32602);
  const bare = await tab.request('roots/list', {});
  assert.equal(bare.error.code, -32602);
  tab.close();
});

test('batches: answered together under 2025-03-26, refused under later versions', async () => {
  const tab = await tabFor('erin');
  tab.handlers['tools/call'] = async (params) => ({ content: [{ type: 'text', text: `ran ${params.name}` }] });
  const agent = await agentFor('erin');
  const batch = [
    { jsonrpc: '2.0', id: 'a', method: 'ping' },
    { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'x', progress: 1 } },
    { jsonrpc: '2.0', id: 'b', method: 'tools/call', params: { name: 'get_view' } },
    { jsonrpc: '2.0', id: 'c', method: 'no/such/method' },
  ];
  const res = await agent.post(batch, { headers: { 'mcp-protocol-version': '2025-03-26' } });
  assert.equal(res.status, 200);
  const answers = await res.json();
  assert.deepEqual(answers.map((a) => a.id), ['a', 'b', 'c']);
  assert.deepEqual(answers[0].result, {});
  assert.equal(answers[1].result.content[0].text, 'ran get_view');
  assert.equal(answers[2].error.code, -32601);
  const later = await agent.post(batch, { headers: { 'mcp-protocol-version': '2025-06-18' } });
  assert.equal(later.status, 400);
  tab.close();
});

test('relayctl: sessions, stats, end-session and kick', async () => {
  // Asynchronous: a synchronous exec would stop this process from answering the tab's pings
  // (every 300 ms here) while relayctl runs, and the gateway would drop the tab.
  const relayctl = async (...args) => (await execFileAsync(join(binDir, 'relayctl'), [`--router=127.0.0.1:${stack.routers[0].port}`, ...args])).stdout;
  const tab = await tabFor('carol');
  const agent = await agentFor('carol');
  await waitUntil(async () => JSON.parse(await relayctl('--json', 'sessions')).some((s) => s.session === agent.session), 'the session is listed');
  const stats = JSON.parse(await relayctl('--json', 'stats'));
  assert.equal(stats.links, 2);
  assert.ok(stats.forwards > 0);
  assert.match(await relayctl('end-session', agent.session), /ended/);
  await waitUntil(async () => (await agent.post({ jsonrpc: '2.0', id: 1, method: 'ping' })).status === 404, 'the ended session is refused');
  assert.match(await relayctl('kick', 'carol'), /disconnected the tab of carol/);
  await tab.waitFor((m) => m.method === 'relay/displaced');
  assert.equal((await tab.closed).code, 4409);
});

test('relayctl tabs: a client name is bounded at the hello and escaped in the table', async () => {
  const relayctl = async (...args) => (await execFileAsync(join(binDir, 'relayctl'), [`--router=127.0.0.1:${stack.routers[0].port}`, ...args])).stdout;
  const tab = new ScriptedTab(gwTabs.wsUrl);
  // A name that would clear the operator's screen and forge a row of the table.
  const name = '\x1b[2J\nmallory    gw    1    evil' + 'x'.repeat(200);
  await tab.hello(await stack.ticket('grace'), { name, version: '1' });
  let table;
  await waitUntil(async () => (table = await relayctl('tabs')).includes('grace'), 'the tab is listed');
  assert.ok(!table.includes('\x1b'), 'no escape character reaches the terminal');
  const row = table.split('\n').find((line) => line.startsWith('grace'));
  assert.ok(row.includes('\\x1b[2J\\x0amallory'), row);
  assert.ok(!table.split('\n').some((line) => line.startsWith('mallory')), 'no forged row');
  const listed = JSON.parse(await relayctl('--json', 'tabs')).find((t) => t.account === 'grace');
  assert.equal(listed.client, name.slice(0, 64));
  tab.close();
});

test('a tab flooding notifications is limited, not the relay: it stays connected and useful', async () => {
  const tab = await tabFor('alice');
  tab.handlers['tools/call'] = async () => ({ content: [{ type: 'text', text: 'still here' }] });
  const agent = await agentFor('alice');
  await agent.request('logging/setLevel', { level: 'debug' });
  const { stream, close } = await agent.openStream();
  const warm = setInterval(() => tab.send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'warm' } }), 50);
  await stream.collect(() => true);
  clearInterval(warm);
  for (let i = 0; i < 6000; i++) tab.send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: i } });
  tab.send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'after' } });
  const { message } = await agent.callTool('get_view');
  assert.equal(message.result.content[0].text, 'still here');
  let received = 0;
  // Count what arrives until the stream goes quiet for a moment (keep-alives every 200 ms).
  for (let quiet = 0; quiet < 3;) {
    const event = await stream.next();
    if (event.data) { received++; quiet = 0; } else { quiet++; }
  }
  assert.ok(received > 100 && received < 6000, `received ${received} of 6001`);
  close();
  tab.close();
});

test('a missing hello closes with 4408, a first message that is not hello with 4400', async () => {
  const silent = new ScriptedTab(gwTabs.wsUrl);
  await silent.open();
  assert.equal((await silent.closed).code, 4408);
  const rude = new ScriptedTab(gwTabs.wsUrl);
  await rude.open();
  rude.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  assert.equal((await rude.closed).code, 4400);
  // A hello, then something else before its answer.
  const hasty = new ScriptedTab(gwTabs.wsUrl);
  await hasty.open();
  hasty.send({ jsonrpc: '2.0', id: 1, method: 'relay/hello', params: { ticket: await stack.ticket('alice'), client: { name: 'hasty', version: '1' } } });
  hasty.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
  const closed = await hasty.closed;
  assert.equal(closed.code, 4400);
  assert.match(closed.reason, /before the hello is answered/);
});

test('a hello whose ticket the host API is slow to redeem is answered when it is, not closed as missing (4408) with its ticket spent', async () => {
  const ticket = await stack.ticket('ivan');
  const hostApi = stack.hostapi.child.pid;
  process.kill(hostApi, 'SIGSTOP');  // the host API hangs, as behind a reconnect storm
  let tab;
  try {
    tab = new ScriptedTab(gwTabs.wsUrl);
    await tab.open();
    tab.send({ jsonrpc: '2.0', id: 1, method: 'relay/hello', params: { ticket, client: { name: 'patient', version: '1' } } });
    // A tab opened after it that says nothing is closed once the hello timeout (500 ms here)
    // has passed for both; authsvc gives the host API 2 s.
    const silent = new ScriptedTab(gwTabs.wsUrl);
    await silent.open();
    assert.equal((await silent.closed).code, 4408);
    assert.equal(tab.closeCode, undefined, `the tab whose hello waits for the host API was closed: ${tab.closeCode} ${tab.closeReason}`);
  } finally {
    process.kill(hostApi, 'SIGCONT');
  }
  const answer = await Promise.race([tab.waitFor((m) => m.id === 1 && (m.result || m.error)), tab.closed.then(({ code, reason }) => ({ closed: code, reason }))]);
  assert.equal(answer.result?.account, 'ivan', JSON.stringify(answer));
  tab.close();
});

test('an oversized tab message closes with 4413', async () => {
  const tab = await tabFor('alice');
  tab.send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x'.repeat(70000) } });
  assert.equal((await tab.closed).code, 4413);
});

test('a tab that misses two pings is dropped, and the agent is told no tab is connected', async () => {
  const ticket = await stack.ticket('bob');
  const ws = new WebSocket(gwTabs.wsUrl, { origin: 'http://editor.test', autoPong: false });
  const messages = [];
  ws.on('message', (d) => messages.push(JSON.parse(d.toString())));
  await new Promise((r) => ws.on('open', r));
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'relay/hello', params: { ticket } }));
  const closed = new Promise((r) => ws.on('close', (code) => r(code)));
  const started = Date.now();
  await closed;
  assert.ok(Date.now() - started < 5000);
  assert.equal(messages[0].result.account, 'bob');
  const agent = await agentFor('bob');
  await waitUntil(async () => (await agent.callTool('get_view')).message.result.content[0].text.includes('No editor is connected'), 'the router forgets the tab');
});

test('keep-alives of connections that arrive together are spread over half a period, not sent in step', async () => {
  // A gateway of its own with a period of 1 s for pings and comments alike.
  const args = gwTabs.args.filter((a) => !/^--(tab_ping_interval|tab_hello_timeout|sse_keepalive)=/.test(a));
  const gw = startProcess('gateway-spread', join(binDir, 'relay-gateway'), [...args, '--tab_ping_interval=1s', '--sse_keepalive=1s']);
  const tabs = [];
  const closers = [];
  try {
    const port = await gw.listeningPort();
    const url = `http://127.0.0.1:${port}/mcp`;
    const tickets = await Promise.all(kSpread.map((user) => stack.ticket(user)));
    const agent = new RawAgent(url, await stack.mintToken('dave'));
    await agent.initialize();
    // 30 tabs and 30 GET streams at once; for each, the time from its start to its first
    // keep-alive, counted from when it was asked for (never too short: the lower bound) and from
    // when this process saw it answered (the spread; it may be noted late, never early).
    const within = (promise, what) => Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`no ${what} within 5 s`)), 5000).unref())]);
    const tabDelays = Promise.all(tickets.map(async (ticket) => {
      const tab = new ScriptedTab(`ws://127.0.0.1:${port}/mcp`);
      tabs.push(tab);
      const asked = Date.now();
      const hello = await tab.hello(ticket);
      assert.ok(hello.result, `hello refused: ${JSON.stringify(hello)}`);
      const live = Date.now();
      await within(new Promise((resolve, reject) => {
        tab.ws.once('ping', resolve);
        tab.closed.then(({ code }) => reject(new Error(`tab closed with ${code} before a ping`)));
      }), 'ping');
      return { sinceAsked: Date.now() - asked, sinceAnswered: Date.now() - live };
    }));
    const streamDelays = Promise.all(kSpread.map(async () => {
      const session = new RawAgent(url, agent.token);
      await session.initialize();
      const asked = Date.now();
      const { res, stream, close } = await session.openStream();
      closers.push(close);
      assert.equal(res.status, 200);
      const open = Date.now();
      const event = await within(stream.next(), 'keep-alive comment');
      assert.equal(event.comment, 'keep-alive');
      return { sinceAsked: Date.now() - asked, sinceAnswered: Date.now() - open };
    }));
    // A tab's first tick finds its hello heard, so its first ping is a period after that tick:
    // 1.5-2 s after it is live; a stream's first comment 0.5-1 s after it opens. In step, each
    // set would be one figure plus the machine's timer slop.
    const [tabsSeen, streamsSeen] = await Promise.all([tabDelays, streamDelays]);
    for (const [what, delays, earliest] of [['tabs\' first pings', tabsSeen, 1500], ['streams\' first comments', streamsSeen, 500]]) {
      const asked = delays.map((d) => d.sinceAsked).sort((x, y) => x - y);
      const answered = delays.map((d) => d.sinceAnswered).sort((x, y) => x - y);
      assert.ok(asked[0] >= earliest, `${what} too soon: ${asked.join(', ')} ms after they were asked for`);
      assert.ok(answered.at(-1) - answered[0] >= 250, `${what} in step: ${answered.join(', ')} ms`);
    }
  } finally {
    for (const close of closers) close();
    for (const tab of tabs) tab.ws?.close();
    await gw.stop();
  }
});

test('HTTP errors: 400 without a session, 404 for a bad one, 413 over the body limit, 400 for an unknown protocol version', async () => {
  const agent = await agentFor('carol');
  const session = agent.session;
  agent.session = undefined;
  assert.equal((await agent.post({ jsonrpc: '2.0', id: 1, method: 'ping' })).status, 400);
  agent.session = session.slice(0, -2) + 'xx';
  assert.equal((await agent.post({ jsonrpc: '2.0', id: 1, method: 'ping' })).status, 404);
  agent.session = session;
  const big = await agent.post({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(70000) } });
  assert.equal(big.status, 413);
  const res = await agent.post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { headers: { 'mcp-protocol-version': '2024-01-01' } });
  assert.equal(res.status, 400);
  assert.equal((await agent.post({ jsonrpc: '2.0', id: 0, method: 'ping' })).status, 200);
});

test('a tab comes back on any gateway with its resume credential instead of a ticket, and keeps its place in its account\'s order', async () => {
  const first = await tabFor('heidi');
  const hint = await first.waitFor((m) => m.method === 'relay/resume');
  assert.match(hint.params.resume, /^tr1\./);
  assert.equal(hint.params.expiresIn, 300);
  first.close();
  await first.closed;

  // Its gateway is gone (here: it closed); the other gateway takes it back, no ticket asked.
  const resumes = async (gw, outcome) => {
    const text = await (await fetch(`http://127.0.0.1:${gw.port}/metrics`)).text();
    return Number(new RegExp(`relay_gateway_tab_resumes_total\\{outcome="${outcome}"\\} (\\d+)`).exec(text)[1]);
  };
  const acceptedBefore = await resumes(gwAgents, 'accepted');
  const refusedBefore = await resumes(gwTabs, 'refused');
  const back = new ScriptedTab(gwAgents.wsUrl);
  back.handlers['tools/call'] = async () => ({ content: [{ type: 'text', text: 'from the resumed tab' }] });
  const hello = await back.resume(hint.params.resume);
  assert.equal(hello.result.account, 'heidi');
  assert.equal(hello.result.role, 'user');
  const agent = await agentFor('heidi');
  assert.equal((await agent.callTool('get_view')).message.result.content[0].text, 'from the resumed tab');
  const again = await back.credential();
  assert.notEqual(again, hint.params.resume);

  // The person opens a newer tab (a new ticket): it takes over. The resumed one, displaced,
  // may not take the account back with its credential: its place is its first ticket's.
  const newer = await tabFor('heidi');
  newer.handlers['tools/call'] = async () => ({ content: [{ type: 'text', text: 'from the newer tab' }] });
  assert.equal((await back.closed).code, 4409);
  const stale = new ScriptedTab(gwAgents.wsUrl);
  await stale.open();
  stale.send({ jsonrpc: '2.0', id: 1, method: 'relay/hello', params: { resume: again } });
  assert.equal((await stale.closed).code, 4409);
  assert.ok(stale.received.some((m) => m.method === 'relay/displaced'));
  assert.ok(!stale.received.some((m) => m.id === 1 && m.result), 'the displaced tab is not welcomed');
  assert.equal((await agent.callTool('get_view')).message.result.content[0].text, 'from the newer tab');

  // A credential changed by one character is refused as a bad ticket is.
  const forged = new ScriptedTab(gwTabs.wsUrl);
  const i = again.length - 5;
  const refused = await forged.resume(again.slice(0, i) + (again[i] === 'A' ? 'B' : 'A') + again.slice(i + 1));
  assert.equal(refused.error.code, -32001);
  assert.match(refused.error.message, /new ticket/);
  assert.equal((await forged.closed).code, 4401);
  assert.equal(await resumes(gwAgents, 'accepted') - acceptedBefore, 2);  // back, and the stale one
  assert.equal(await resumes(gwTabs, 'refused') - refusedBefore, 1);
  newer.close();
});

test('a tab of a gateway that shuts down is closed with 1001', async () => {
  // Last: it stops gateway 1.
  const tab = await tabFor('erin');
  await gwTabs.stop('SIGTERM');
  assert.equal((await tab.closed).code, 1001);
});
