// The whole path, end to end (issue 2): the real MCP SDK client on gateway 2, a scripted
// tab on gateway 1, the router between them, authsvc and the PHP host API behind.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { startStack, defaultCatalogue, binDir } from './lib/stack.mjs';
import { ScriptedTab } from './lib/tab.mjs';

let stack;
before(async () => { stack = await startStack({ gateways: 2 }); });
after(async () => { await stack?.stop(); });

async function connectAgent(url, token) {
  const client = new Client({ name: 'e2e-agent', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return { client, transport };
}

function post(url, { token, body, headers = {} } = {}) {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
    body: JSON.stringify(body ?? { jsonrpc: '2.0', id: 1, method: 'ping' }),
  });
}

test('a tool call from an agent on gateway 2 is answered by the tab on gateway 1, unchanged', async () => {
  const [gw1, gw2] = stack.gateways;
  const tab = new ScriptedTab(gw1.wsUrl);
  const answer = {
    content: [{ type: 'text', text: 'The document "Plan" is open; 3 paragraphs, caret in the 2nd. ünïcødé ✓' }],
    structuredContent: { title: 'Plan', paragraphs: 3 },
  };
  let seen;
  tab.handlers['tools/call'] = async (params) => { seen = params; return answer; };
  const hello = await tab.hello(await stack.ticket('alice'));
  assert.equal(hello.result.account, 'alice');
  assert.equal(hello.result.protocol, '1');
  assert.match(hello.result.tabId, /^t-/);

  const { client } = await connectAgent(gw2.url, await stack.mintToken('alice'));
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name), defaultCatalogue.tools.map((t) => t.name));

  const result = await client.callTool({ name: 'get_view', arguments: { detail: 'full' } });
  assert.deepEqual(result, answer);
  assert.deepEqual(seen, { name: 'get_view', arguments: { detail: 'full' } });

  // The operator sees the tab, on the gateway it came through.
  const tabs = JSON.parse(execFileSync(join(binDir, 'relayctl'), [`--router=127.0.0.1:${stack.routers[0].port}`, '--json', 'tabs']).toString());
  assert.deepEqual(tabs.map((t) => [t.account, t.client]), [['alice', 'scripted-tab']]);
  const metrics = await (await fetch(`http://127.0.0.1:${gw2.port}/metrics`)).text();
  assert.match(metrics, /relay_gateway_forward_outcomes_total\{outcome="result"\} 1\n/);
  await client.close();
  tab.close();
  await tab.closed;
});

test("a tab's ping is answered, many calls at once reach it whole, and its close is returned", async () => {
  const [gw1, gw2] = stack.gateways;
  const tab = new ScriptedTab(gw1.wsUrl);
  tab.handlers['tools/call'] = async (params) => ({ content: [{ type: 'text', text: `n=${params.arguments.n} ${'x'.repeat(params.arguments.n)}` }] });
  await tab.hello(await stack.ticket('bob'));
  // Beast answers pings; its pong shares the tab's one output queue with the messages.
  const pong = new Promise((resolve) => tab.ws.once('pong', (data) => resolve(data.toString())));
  tab.ws.ping('are you there');
  assert.equal(await pong, 'are you there');

  // Calls of every size at once: the gateway writes what it has queued in one go,
  // and each message must still arrive as a frame of its own.
  const { client } = await connectAgent(gw2.url, await stack.mintToken('bob'));
  const sizes = [0, 1, 125, 126, 127, 65535, 65536, 200000, 3, 70000];
  const results = await Promise.all(sizes.map((n) => client.callTool({ name: 'get_view', arguments: { n } })));
  assert.deepEqual(results.map((r) => r.content[0].text), sizes.map((n) => `n=${n} ${'x'.repeat(n)}`));
  await client.close();

  // The tab closes: the gateway returns its code in a close frame of its own (without a
  // connection that just drops, the tab would see 1006), then the connection ends.
  tab.ws.close(4000, 'leaving');
  assert.equal((await tab.closed).code, 4000);
});

test('health and readiness answer without a bearer', async () => {
  const gw = stack.gateways[0];
  assert.equal((await fetch(`http://127.0.0.1:${gw.port}/healthz`)).status, 200);
  assert.equal((await fetch(`http://127.0.0.1:${gw.port}/readyz`)).status, 200);
});

test('OAuth discovery probes get a plain 404', async () => {
  const res = await fetch(`http://127.0.0.1:${stack.gateways[0].port}/.well-known/oauth-authorization-server`);
  assert.equal(res.status, 404);
});

test('no bearer and a wrong bearer get 401 with WWW-Authenticate', async () => {
  const url = stack.gateways[1].url;
  for (const token of [undefined, 'fwa_' + '0'.repeat(64)]) {
    const res = await post(url, { token });
    assert.equal(res.status, 401);
    assert.match(res.headers.get('www-authenticate'), /^Bearer realm="mcp-relay", error="invalid_token"/);
  }
});

test('a call while no tab is connected gets a tool error that says how to connect', async () => {
  const { client } = await connectAgent(stack.gateways[1].url, await stack.mintToken('bob'));
  const result = await client.callTool({ name: 'get_view', arguments: {} });
  assert.equal(result.isError, true);
  assert.match(result.content[0].text, /Open the editor and switch the agent on/);
  await client.close();
});

test('a tab with a wrong Origin gets 403', async () => {
  const tab = new ScriptedTab(stack.gateways[0].wsUrl, { origin: 'http://evil.test' });
  await assert.rejects(tab.open(), (error) => error.status === 403);
});

test('a bad ticket gets -32001 and close code 4401', async () => {
  const tab = new ScriptedTab(stack.gateways[0].wsUrl);
  const hello = await tab.hello('not-a-ticket');
  assert.equal(hello.error.code, -32001);
  const { code } = await tab.closed;
  assert.equal(code, 4401);
});

test('a used ticket is refused the second time', async () => {
  const ticket = await stack.ticket('bob');
  const first = new ScriptedTab(stack.gateways[0].wsUrl);
  assert.equal((await first.hello(ticket)).result.account, 'bob');
  const second = new ScriptedTab(stack.gateways[1].wsUrl);
  assert.equal((await second.hello(ticket)).error.code, -32001);
  assert.equal((await second.closed).code, 4401);
  first.close();
  await first.closed;
});

test("every service's /metrics is valid Prometheus text: promtool check metrics is clean", async () => {
  const endpoints = [
    ...stack.gateways.map((g) => [g.name, `http://127.0.0.1:${g.port}/metrics`]),
    ...stack.routers.map((r) => [r.name, r.metricsUrl]),
    ['authsvc', stack.authsvc.metricsUrl],
  ];
  for (const [name, url] of endpoints) {
    const res = await fetch(url);
    assert.equal(res.status, 200, name);
    assert.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/, name);
    const text = await res.text();
    // promtool prints nothing and exits 0 for clean text; a lint problem or a parse error is
    // printed and fails.
    let out = '';
    try {
      out = execFileSync('promtool', ['check', 'metrics'], { input: text, stdio: ['pipe', 'pipe', 'pipe'] }).toString();
    } catch (error) {
      assert.fail(`${name}: promtool check metrics: ${error.stdout}${error.stderr}`);
    }
    assert.equal(out.trim(), '', `${name}: ${out}`);
  }
});
