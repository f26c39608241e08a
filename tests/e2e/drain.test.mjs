// SIGTERM to a gateway (STYLE.md's drain): it stops taking new work, lets the calls in flight
// finish up to --drain_timeout, closes its tabs with 1001 and exits 0; a call whose tab does
// not answer by then gets a clear error. Each test drains its own gateway, holding both the
// agent and the tab, so that the tab's answer has to pass through the gateway that drains.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startStack, waitUntil } from './lib/stack.mjs';
import { ScriptedTab } from './lib/tab.mjs';
import { RawAgent } from './lib/agent.mjs';

const drainSeconds = 3;
let stack;
before(async () => {
  stack = await startStack({
    gateways: 2,
    users: ['alice', 'bob'],
    gatewayArgs: [`--drain_timeout=${drainSeconds}s`],
  });
});
after(async () => { await stack?.stop(); });

async function tabAndAgent(gateway, user) {
  const tab = new ScriptedTab(gateway.wsUrl);
  await tab.hello(await stack.ticket(user));
  const agent = new RawAgent(gateway.url, await stack.mintToken(user));
  await agent.initialize();
  return { tab, agent };
}

// A keep-alive connection opened before the drain; request() sends one request on it and
// resolves with the status and body of the answer.
async function keepAliveConnection(port) {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise((resolve, reject) => { socket.once('connect', resolve); socket.once('error', reject); });
  socket.setEncoding('utf8');
  return {
    request(method, path, body = '') {
      return new Promise((resolve, reject) => {
        let raw = '';
        const onData = (d) => {
          raw += d;
          const head = raw.indexOf('\r\n\r\n');
          if (head < 0) return;
          const length = Number(/content-length: *(\d+)/i.exec(raw.slice(0, head))?.[1] ?? 0);
          if (Buffer.byteLength(raw) - head - 4 < length) return;
          socket.off('data', onData);
          resolve({ status: Number(raw.split(' ')[1]), body: raw.slice(head + 4) });
        };
        socket.on('data', onData);
        socket.once('error', reject);
        socket.write(`${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      });
    },
    close() { socket.destroy(); },
  };
}

test('a call in flight at SIGTERM is answered; then the tab gets 1001 and the gateway exits 0 before the deadline', async () => {
  const gateway = stack.gateways[0];
  const { tab, agent } = await tabAndAgent(gateway, 'alice');
  let answer;
  const answered = new Promise((resolve) => { answer = resolve; });
  tab.handlers['tools/call'] = async () => {
    await answered;
    return { content: [{ type: 'text', text: 'answered while draining' }] };
  };
  const call = agent.callTool('get_view');
  await tab.waitFor((m) => m.method === 'tools/call');
  const open = await keepAliveConnection(gateway.port);
  assert.equal((await open.request('GET', '/readyz')).status, 200);
  const signalled = Date.now();
  process.kill(gateway.child.pid, 'SIGTERM');
  // New work goes elsewhere while the call in flight finishes: a new connection is refused,
  // a request on an open one gets 503 (any gateway serves any session), and so does /readyz.
  await waitUntil(async () => (await open.request('GET', '/readyz')).status === 503, 'the gateway drains');
  // Operators see it drain, with the one call it waits for.
  const metrics = (await open.request('GET', '/metrics')).body;
  assert.match(metrics, /^relay_gateway_draining 1$/m);
  assert.match(metrics, /^relay_gateway_calls_in_flight 1$/m);
  const connectError = await new Promise((resolve) => {
    const socket = net.connect(gateway.port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolve(null); });
    socket.once('error', (error) => resolve(error.code));
  });
  assert.equal(connectError, 'ECONNREFUSED');
  const refused = await open.request('POST', '/mcp', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }));
  assert.equal(refused.status, 503);
  assert.match(JSON.parse(refused.body).error, /shutting down; retry/);
  open.close();
  assert.equal(tab.closeCode, undefined, 'the tab stays while its call is in flight');
  answer();
  const { message } = await call;
  assert.equal(message.result.content[0].text, 'answered while draining');
  assert.equal((await tab.closed).code, 1001);
  await gateway.exitPromise;
  assert.equal(gateway.exitCode, 0);
  assert.ok(Date.now() - signalled < drainSeconds * 1000,
    `the gateway exited ${Date.now() - signalled} ms after SIGTERM, not before the ${drainSeconds} s deadline`);
});

test('a call whose tab does not answer gets a clear error at the drain deadline; the tab hears the cancellation', async () => {
  const gateway = stack.gateways[1];
  const { tab, agent } = await tabAndAgent(gateway, 'bob');
  tab.handlers['tools/call'] = async () => undefined;  // never answers
  const call = agent.callTool('get_view');
  await tab.waitFor((m) => m.method === 'tools/call');
  const signalled = Date.now();
  process.kill(gateway.child.pid, 'SIGTERM');
  const { message } = await call;
  const waited = Date.now() - signalled;
  assert.equal(message.result.isError, true);
  assert.match(message.result.content[0].text, /gateway shut down before the editor answered\. Try again/);
  // It waited for the tab until the deadline, not less.
  assert.ok(waited >= drainSeconds * 1000 - 100, `the call was given up after ${waited} ms`);
  await tab.waitFor((m) => m.method === 'notifications/cancelled');
  assert.equal((await tab.closed).code, 1001);
  await gateway.exitPromise;
  assert.equal(gateway.exitCode, 0);
});
