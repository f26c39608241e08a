// MCP 2026-07-28 beside the 2025 era on one URL (issue 11, MCP-SURFACE.md "Transport,
// 2026-07-28 era"): the real TypeScript client 2.4.0 in 'auto' mode ends on 2026-07-28, lists
// and calls a tab's tools across gateways, hears list changes and resource updates on a
// subscriptions/listen stream, and completes an elicitation whose retry lands on another
// gateway; an SDK 1.x agent works on the 2025 era at the same time; and every error of the
// modern transport, and forged, foreign and expired requestStates, get their status and code.
//
// Gateways: 0 holds the tab, 1 takes the agents' requests, 2 takes every retry that carries
// a requestState (the client's fetch sends it there), so that a call parked by gateway 1 is
// resumed by gateway 2.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startStack, stopProcess, waitUntil } from './lib/stack.mjs';
import { ScriptedTab } from './lib/tab.mjs';

const catalogue = {
  tools: [
    { name: 'echo', description: 'Echoes its text.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
    { name: 'ask_name', description: 'Asks the person for a name.', inputSchema: { type: 'object', properties: {} } },
    { name: 'ask_model', description: 'Asks the agent model.', inputSchema: { type: 'object', properties: {} } },
  ],
  resources: [{ uri: 'doc://outline', name: 'outline', description: 'The outline.' }],
};
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
};

let stack, tab, annToken, bobToken;
const served = [];  // [gateway index, body] of each request the modern client sent

before(async () => {
  stack = await startStack({
    gateways: 3,
    users: ['ann', 'bob'],
    catalogue,
    gatewayArgs: ['--catalogue_poll=100ms', '--call_timeout=3s'],
  });
  tab = new ScriptedTab(stack.gateways[0].wsUrl);
  await tab.hello(await stack.ticket('ann'));
  const callOf = (message) => ({ 'relay/requestId': message.id });
  tab.handlers['tools/call'] = async (params, message) => {
    if (params.name === 'echo') return { content: [{ type: 'text', text: `echo: ${params.arguments?.text}` }] };
    if (params.name === 'ask_model') {
      const answer = await tab.request('sampling/createMessage', { messages: [], maxTokens: 5, _meta: callOf(message) }, 'model');
      return answer.error ? { isError: true, content: [{ type: 'text', text: answer.error.message }] } : { content: [] };
    }
    const answer = await tab.request('elicitation/create', {
      message: 'What is your name?',
      requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      _meta: callOf(message),
    }, 'name');
    if (answer.error) return { isError: true, content: [{ type: 'text', text: answer.error.message }] };
    return { content: [{ type: 'text', text: `Hello, ${answer.result.content.name}` }] };
  };
  tab.handlers['resources/read'] = async ({ uri }) => ({ contents: [{ uri, text: 'outline' }] });
  annToken = await stack.mintToken('ann');
  bobToken = await stack.mintToken('bob');
});
after(async () => {
  tab?.close();
  await stack?.stop();
});

// The client's requests: those with a requestState go to gateway 2, the rest to gateway 1.
function routedFetch(url, init) {
  const body = typeof init?.body === 'string' ? init.body : '';
  const gateway = body.includes('"requestState"') ? 2 : 1;
  served.push([gateway, body]);
  const target = new URL(stack.gateways[gateway].url);
  return fetch(target, init);
}

async function modernClient(token) {
  const client = new ModernClient({ name: 'modern-agent', version: '1.0.0' }, {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: 'auto' },
  });
  const transport = new ModernTransport(new URL(stack.gateways[1].url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: routedFetch,
  });
  await client.connect(transport);
  return client;
}

async function post(gateway, body, { token = annToken, headers = {} } = {}) {
  const response = await fetch(stack.gateways[gateway].url, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${token}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': body.method,
      ...(body.params?.name ? { 'Mcp-Name': body.params.name } : {}),
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, ...body }),
  });
  const text = await response.text();
  const data = text.startsWith('event:') || text.startsWith('data:') || text.startsWith(':')
    ? JSON.parse(text.split('\n').filter((l) => l.startsWith('data:')).pop().slice(5))
    : JSON.parse(text);
  return { status: response.status, data };
}

test('the 2.x client in auto mode ends on 2026-07-28 and calls a tab on another gateway', async () => {
  const client = await modernClient(annToken);
  try {
    assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
    assert.equal(client.getProtocolEra(), 'modern');
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['echo', 'ask_name', 'ask_model']);
    const result = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    assert.deepEqual(result.content, [{ type: 'text', text: 'echo: hi' }]);
    assert.ok(served.some(([, body]) => body.includes('"server/discover"')), 'it probed with server/discover');
    assert.ok(!served.some(([, body]) => body.includes('"initialize"')), 'and never initialized');
  } finally {
    await client.close();
  }
});

test('an elicitation completes through input_required, the retry resumed by another gateway', async () => {
  const client = await modernClient(annToken);
  const asked = [];
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(request.params.message);
    return { action: 'accept', content: { name: 'Ann' } };
  });
  try {
    served.length = 0;
    const result = await client.callTool({ name: 'ask_name', arguments: {} });
    assert.deepEqual(result.content, [{ type: 'text', text: 'Hello, Ann' }]);
    assert.deepEqual(asked, ['What is your name?']);
    const calls = served.filter(([, body]) => body.includes('"tools/call"'));
    assert.equal(calls.length, 2, 'the call and its retry');
    assert.deepEqual(calls.map(([gateway]) => gateway), [1, 2]);
    assert.match(calls[1][1], /"inputResponses":\{"name":/, 'the answer is keyed by the tab\'s request id');
  } finally {
    await client.close();
  }
});

test('a listen stream hears list changes and resource updates from the tab and the catalogue', async () => {
  const client = await modernClient(annToken);
  const heard = [];
  client.setNotificationHandler('notifications/tools/list_changed', () => heard.push('tools'));
  client.setNotificationHandler('notifications/resources/updated', (n) => heard.push(`updated ${n.params.uri}`));
  try {
    const subscription = await client.listen({ toolsListChanged: true, resourceSubscriptions: ['doc://outline'] });
    // The tab's news reach the stream through the router, from another gateway.
    tab.send({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'doc://outline' } });
    tab.send({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'doc://other' } });
    tab.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    await waitUntil(() => heard.length >= 2, 'the tab\'s update and list change');
    assert.deepEqual(heard.sort(), ['tools', 'updated doc://outline']);
    // The catalogue changes: the gateway tells its listeners.
    writeFileSync(stack.catalogueFile, JSON.stringify({ ...catalogue, tools: [...catalogue.tools, { name: 'new_tool', inputSchema: { type: 'object' } }] }));
    await waitUntil(() => heard.length >= 3, 'the catalogue change');
    assert.equal(heard[2], 'tools');
    await subscription.close();
  } finally {
    writeFileSync(stack.catalogueFile, JSON.stringify(catalogue));
    await client.close();
  }
});

// The acknowledgement means the agent hears what its tab sends from then on: it waits for the
// router to have the stream and its subscriptions (they travel on gateway 1's link while the
// tab's news travel on gateway 0's, and either may arrive first).
test('a listen stream is acknowledged only once the router has it', async () => {
  const client = await modernClient(annToken);
  const heard = [];
  client.setNotificationHandler('notifications/resources/updated', (n) => heard.push(n.params.uri));
  const router = stack.routers[0];
  let acknowledged = false;
  let resumed = false;
  try {
    const metrics = new URL('/metrics', stack.gateways[1].url);
    const streams = async () => Number(/kind="agent_stream"\} (\d+)/.exec(await (await fetch(metrics)).text())[1]);
    const before = await streams();
    await stopProcess(router.child.pid);
    const listening = client.listen({ resourceSubscriptions: ['doc://outline'] });
    listening.then(() => { acknowledged = true; }, () => {});
    await waitUntil(async () => (await streams()) > before, 'gateway 1 to hold the stream');
    await (await fetch(metrics)).text();  // one more round trip to gateway 1 meanwhile
    assert.equal(acknowledged, false, 'acknowledged while the router could not know of it');
    process.kill(router.child.pid, 'SIGCONT');
    resumed = true;
    const subscription = await listening;
    tab.send({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'doc://outline' } });
    await waitUntil(() => heard.length >= 1, 'the update sent after the acknowledgement');
    assert.deepEqual(heard, ['doc://outline']);
    await subscription.close();
  } finally {
    if (!resumed) process.kill(router.child.pid, 'SIGCONT');
    await client.close();
  }
});

test('the view-changed line reaches a 2026-07-28 agent once, on its next tool result', async () => {
  const client = await modernClient(annToken);
  const heard = [];
  client.setNotificationHandler('notifications/resources/updated', (n) => heard.push(n.params.uri));
  try {
    await client.callTool({ name: 'echo', arguments: { text: 'first' } });  // the router knows the agent
    const subscription = await client.listen({ resourceSubscriptions: ['doc://outline'] });
    tab.send({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'doc://outline', _meta: { 'relay/line': 'The person renamed the document.' } } });
    await waitUntil(() => heard.length >= 1, 'the update');  // the router has the line now
    const next = await client.callTool({ name: 'echo', arguments: { text: 'second' } });
    assert.deepEqual(next.content.map((c) => c.text), ['echo: second', 'The person renamed the document.']);
    const after = await client.callTool({ name: 'echo', arguments: { text: 'third' } });
    assert.deepEqual(after.content.map((c) => c.text), ['echo: third']);
    await subscription.close();
  } finally {
    await client.close();
  }
});

test('an SDK 1.x agent works on the 2025 era on the same URL at the same time', async () => {
  const modern = await modernClient(annToken);
  const legacy = new Client({ name: 'legacy-agent', version: '1.0.0' });
  await legacy.connect(new StreamableHTTPClientTransport(new URL(stack.gateways[1].url), {
    requestInit: { headers: { Authorization: `Bearer ${annToken}` } },
  }));
  try {
    assert.equal(legacy.transport.protocolVersion, '2025-11-25');
    const [a, b] = await Promise.all([
      legacy.callTool({ name: 'echo', arguments: { text: 'old' } }),
      modern.callTool({ name: 'echo', arguments: { text: 'new' } }),
    ]);
    assert.equal(a.content[0].text, 'echo: old');
    assert.equal(b.content[0].text, 'echo: new');
  } finally {
    await legacy.close();
    await modern.close();
  }
});

test('each error of the modern transport has its status and code', async () => {
  const call = { method: 'tools/call', params: { name: 'echo', arguments: {}, _meta: META } };
  const cases = [
    ['no _meta', { method: 'tools/list', params: {} }, {}, 400, -32602],
    ['_meta without clientCapabilities', { method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } }, {}, 400, -32602],
    ['version header differs from _meta', call, { 'MCP-Protocol-Version': '2025-11-25' }, 400, -32020],
    ['Mcp-Method differs', call, { 'Mcp-Method': 'tools/list' }, 400, -32020],
    ['Mcp-Name differs', call, { 'Mcp-Name': 'other' }, 400, -32020],
    ['unknown method', { method: 'no/such', params: { _meta: META } }, {}, 404, -32601],
    ['a method of the 2025 era only', { method: 'initialize', params: { _meta: META } }, {}, 404, -32601],
  ];
  for (const [what, body, headers, status, code] of cases) {
    const answer = await post(1, body, { headers });
    assert.equal(answer.status, status, what);
    assert.equal(answer.data.error?.code, code, what);
    assert.equal(answer.data.id, 1, what);
  }
  const v999 = { ...META, 'io.modelcontextprotocol/protocolVersion': 'v999' };
  const unsupported = await post(1, { method: 'server/discover', params: { _meta: v999 } }, { headers: { 'MCP-Protocol-Version': 'v999' } });
  assert.equal(unsupported.status, 400);
  assert.equal(unsupported.data.error.code, -32022);
  assert.deepEqual(unsupported.data.error.data, { supported: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'], requested: 'v999' });
  // The era has no sessions and no GET stream.
  for (const method of ['GET', 'DELETE']) {
    const refused = await fetch(stack.gateways[1].url, { method, headers: { Authorization: `Bearer ${annToken}`, Accept: 'text/event-stream', 'MCP-Protocol-Version': '2026-07-28' } });
    assert.equal(refused.status, 405, method);
    assert.equal(refused.headers.get('allow'), 'POST', method);
  }
  // The tool asks for sampling, which this agent did not declare.
  const missing = await post(1, { method: 'tools/call', params: { name: 'ask_model', arguments: {}, _meta: META } });
  assert.equal(missing.status, 400);
  assert.equal(missing.data.error.code, -32021);
  assert.deepEqual(missing.data.error.data, { requiredCapabilities: { sampling: {} } });
});

test('forged, foreign and expired requestStates are refused; a retry without answers is asked again', async () => {
  const ask = { method: 'tools/call', params: { name: 'ask_name', arguments: {}, _meta: META } };
  const first = await post(1, ask);
  assert.equal(first.data.result.resultType, 'input_required');
  assert.deepEqual(Object.keys(first.data.result.inputRequests), ['name']);
  const state = first.data.result.requestState;
  const retry = (requestState, token = annToken) => post(2, { method: 'tools/call', params: { ...ask.params, requestState, inputResponses: {} } }, { token });

  for (const [what, forged, token] of [
    ['altered', `${state}-TAMPERED`, annToken],
    ['made up', 'rs1.eyJhIjoiYW5uIn0.AAAA', annToken],
    ['another account\'s', state, bobToken],
  ]) {
    const refused = await retry(forged, token);
    assert.equal(refused.status, 400, what);
    assert.equal(refused.data.error.code, -32602, what);
    assert.match(refused.data.error.message, /without requestState/, what);
  }
  // Without the answer: the same question again, with a fresh requestState.
  const again = await retry(state);
  assert.equal(again.data.result.resultType, 'input_required');
  assert.deepEqual(Object.keys(again.data.result.inputRequests), ['name']);
  assert.notEqual(again.data.result.requestState, state);
  // A state past its call's deadline (the gateways' --call_timeout is 3 s): its expiry is
  // readable in the payload; wait until then.
  const payload = JSON.parse(Buffer.from(again.data.result.requestState.split('.')[1], 'base64url'));
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, payload.e - Date.now()) + 50));
  const expired = await retry(again.data.result.requestState);
  assert.equal(expired.status, 400);
  assert.equal(expired.data.error.code, -32602);
});

test('a listen stream ends cleanly with its result when its gateway shuts down', async () => {
  const gateway = stack.gateways[2];
  const response = await fetch(gateway.url, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${annToken}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': 'subscriptions/listen',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 'listen:7', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: META } }),
  });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type'), /text\/event-stream/);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const events = () => text.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)));
  const readUntil = async (done) => {
    while (!done()) {
      const { value, done: ended } = await reader.read();
      if (ended) return;
      text += decoder.decode(value, { stream: true });
    }
  };
  await readUntil(() => events().length >= 1);
  assert.equal(events()[0].method, 'notifications/subscriptions/acknowledged');
  assert.equal(events()[0].params._meta['io.modelcontextprotocol/subscriptionId'], 'listen:7');
  process.kill(gateway.child.pid, 'SIGTERM');
  await readUntil(() => false);  // to the end of the response
  const last = events().at(-1);
  assert.equal(last.id, 'listen:7');
  assert.deepEqual(last.result, { _meta: { 'io.modelcontextprotocol/subscriptionId': 'listen:7' }, resultType: 'complete' });
  await gateway.exitPromise;
  assert.equal(gateway.exitCode, 0);
});
