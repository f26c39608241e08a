// The README's first command, `scripts/run.sh`, as a person runs it: it starts the whole relay
// on loopback and prints what to paste. What it prints must work: the MCP URL with the agent
// token (a real SDK client), the sign-in it names, the password of the editor page (a tab comes
// on with it), the relayctl line; and Ctrl-C must stop everything it started. Its ports are
// picked by the OS and handed over (RELAY_DEMO_*_PORT); its secrets and logs go to a folder of
// this test's (RELAY_DEMO_STATE), not the checkout's .run/. Not an e2e_ suite: the sanitizer
// pass would run the same script on the same plain build again.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startProcess, repoRoot, waitUntil } from './lib/stack.mjs';
import { freePort } from './lib/nginx.mjs';
import { ScriptedTab } from './lib/tab.mjs';

const execFileAsync = promisify(execFile);
const ports = {};
let state, demo, printed, services = [];

// The process listening on a port of ours (ss -ltnp), so that each can be ended by its pid.
function listenerPid(port) {
  const out = execFileSync('ss', ['-Hltnp', `sport = :${port}`], { encoding: 'utf8' });
  return Number(/pid=(\d+)/.exec(out)?.[1] ?? NaN);
}
const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

before(async () => {
  for (const name of ['HOSTAPI', 'GATEWAY', 'ROUTER', 'ROUTER_LINK', 'AUTHSVC', 'AUTHSVC_METRICS']) {
    ports[name] = await freePort();
  }
  state = mkdtempSync(join(tmpdir(), 'relay-demo-'));
  const env = { RELAY_DEMO_STATE: state };
  for (const [name, port] of Object.entries(ports)) env[`RELAY_DEMO_${name}_PORT`] = String(port);
  // In a group of its own, as a terminal's foreground job: Ctrl-C reaches the group.
  demo = startProcess('run.sh', 'bash', [join(repoRoot, 'scripts', 'run.sh')], { env, group: true });
  // Its setup step checks the packages and the build (nothing to do after the test command's).
  await demo.waitForLine((l) => l.includes('Ctrl-C stops everything.'), 'run.sh to say the relay is running', 240000);
  const text = demo.lines.join('\n');
  printed = {
    url: /MCP URL:\s+(\S+)/.exec(text)?.[1],
    token: /Agent token:\s+(\S+)/.exec(text)?.[1],
    password: /log in as demo \/ (\S+)/.exec(text)?.[1],
    editor: /open (http:\/\/\S+\/editor\/)/.exec(text)?.[1],
    relayctl: /(RELAY_GRPC_TLS_CA=.*) \\\n\s*(.*relayctl.*)/.exec(text)?.slice(1).join(' '),
  };
  services = ['HOSTAPI', 'AUTHSVC', 'ROUTER', 'GATEWAY'].map((name) => ({ name, port: ports[name], pid: listenerPid(ports[name]) }));
});

after(async () => {
  await demo?.stop('SIGKILL');
  // Whatever run.sh failed to stop (a failed test), by its pid.
  for (const { pid } of services) if (alive(pid)) process.kill(pid, 'SIGKILL');
  if (state) rmSync(state, { recursive: true, force: true });
});

test('it prints the MCP URL, a token, the sign-in and the editor page on the ports it was given', () => {
  assert.equal(printed.url, `http://127.0.0.1:${ports.GATEWAY}/mcp`);
  assert.match(printed.token ?? '', /^fwa_\S{20,}$/);
  assert.ok(printed.password, 'the demo password is printed');
  assert.equal(printed.editor, `http://127.0.0.1:${ports.HOSTAPI}/editor/`);
  assert.match(demo.lines.join('\n'), new RegExp(`claude mcp add --transport http editor ${printed.url}$`, 'm'));
  for (const { name, pid } of services) assert.ok(pid > 0, `${name} listens on its port`);
});

test('an agent with the printed token lists the editor\'s tools and is told to open a tab', { timeout: 30000 }, async () => {
  const client = new Client({ name: 'demo-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(printed.url), {
    requestInit: { headers: { Authorization: `Bearer ${printed.token}` } },
  }));
  try {
    const { tools } = await client.listTools();
    const catalogue = JSON.parse(readFileSync(join(repoRoot, 'hostapi', 'public', 'editor', 'tools.json'), 'utf8'));
    assert.deepEqual(tools.map((t) => t.name).sort(), catalogue.tools.map((t) => t.name).sort());
    // No tab yet: a tool error that tells the person what to do (MCP-SURFACE.md).
    const result = await client.callTool({ name: 'get_view', arguments: {} });
    assert.equal(result.isError, true);
    assert.match(result.content[0].text, /Open the editor and switch the agent on/);
  } finally {
    await client.close();
  }
});

test('an agent without a token is sent to the sign-in the relay names', { timeout: 30000 }, async () => {
  const bare = await fetch(printed.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  assert.equal(bare.status, 401);
  const metadataUrl = /resource_metadata="([^"]+)"/.exec(bare.headers.get('www-authenticate') ?? '')?.[1];
  assert.ok(metadataUrl, 'WWW-Authenticate names the resource metadata');
  const metadata = await (await fetch(metadataUrl)).json();
  assert.equal(metadata.resource, printed.url);
  const issuer = `http://127.0.0.1:${ports.HOSTAPI}`;
  assert.deepEqual(metadata.authorization_servers, [issuer]);
  const server = await fetch(`${issuer}/.well-known/oauth-authorization-server`);
  assert.equal(server.status, 200);
  assert.equal((await server.json()).issuer, issuer);
});

test('a tab logged in with the printed password takes the agent\'s call; relayctl as printed sees it', { timeout: 30000 }, async () => {
  const api = `http://127.0.0.1:${ports.HOSTAPI}/api/index.php`;
  const login = await fetch(`${api}?r=login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'demo', password: printed.password }),
  });
  assert.equal(login.status, 200, 'the printed password logs in');
  const cookie = login.headers.get('set-cookie').split(';')[0];
  const issued = await fetch(`${api}?r=agent/ticket`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: '{}' });
  assert.equal(issued.status, 200);
  const { ticket } = await issued.json();
  // The editor page's origin, which run.sh allows.
  const tab = new ScriptedTab(`ws://127.0.0.1:${ports.GATEWAY}/mcp`, { origin: `http://127.0.0.1:${ports.HOSTAPI}` });
  tab.handlers['tools/call'] = async (params) => ({ content: [{ type: 'text', text: `the editor ran ${params.name}` }] });
  const client = new Client({ name: 'demo-agent', version: '1.0.0' });
  try {
    const hello = await tab.hello(ticket);
    assert.ok(hello.result, `the tab is admitted: ${JSON.stringify(hello)}`);
    await client.connect(new StreamableHTTPClientTransport(new URL(printed.url), {
      requestInit: { headers: { Authorization: `Bearer ${printed.token}` } },
    }));
    const result = await client.callTool({ name: 'get_view', arguments: {} });
    assert.deepEqual(result.content, [{ type: 'text', text: 'the editor ran get_view' }]);
    // The printed operator's line, run as printed from the checkout.
    const { stdout } = await execFileAsync('bash', ['-c', printed.relayctl], { cwd: repoRoot });
    assert.match(stdout, /\bdemo\b/);
    // Nothing the person was given, nor the relay's own secrets, is in any service's log.
    const secrets = [printed.token, ticket, printed.password,
      readFileSync(join(state, 'relay.key'), 'utf8').trim(), readFileSync(join(state, 'session.secret'), 'utf8').trim()];
    for (const log of readdirSync(state).filter((f) => f.endsWith('.log'))) {
      const text = readFileSync(join(state, log), 'utf8');
      for (const secret of secrets) assert.ok(!text.includes(secret), `${log} holds no secret`);
    }
  } finally {
    await client.close();
    tab.close();
  }
});

test('Ctrl-C stops every service it started and frees their ports', { timeout: 30000 }, async () => {
  process.kill(-demo.child.pid, 'SIGINT');
  await demo.waitForLine((l) => l === 'relay stopped', 'run.sh to say it stopped');
  await waitUntil(() => services.every(({ pid }) => !alive(pid)), 'every service to have exited');
  for (const { name, port } of services) {
    assert.ok(Number.isNaN(listenerPid(port)), `nothing listens on ${name}'s port any more`);
  }
});
