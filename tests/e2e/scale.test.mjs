// Scale out and survive (issue 5): nginx round robin over 3 gateways, 2 router shards,
// authsvc and the PHP host API; 20 accounts, each with one reconnecting tab and two agent
// sessions of the real MCP SDK client, all through nginx.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startStack, startProcess, binDir, waitUntil, tlsArgs } from './lib/stack.mjs';
import { startNginx } from './lib/nginx.mjs';
import { ReconnectingTab } from './lib/tab.mjs';

const ACCOUNTS = Array.from({ length: 20 }, (_, i) => `acct${String(i).padStart(2, '0')}`);
const execFileAsync = promisify(execFile);
let stack, nginx, url;
const tabs = new Map();  // account -> ReconnectingTab
const agents = [];       // { account, client, transport, sessionId }

before(async () => {
  stack = await startStack({
    gateways: 3,
    routers: 2,
    users: ACCOUNTS,
    gatewayArgs: ['--trusted_proxies=127.0.0.1/32', '--call_timeout=5s'],
  });
  nginx = await startNginx(stack.dir, stack.gateways.map((g) => g.port));
  url = `http://127.0.0.1:${nginx.port}/mcp`;
  const wsUrl = `ws://127.0.0.1:${nginx.port}/mcp`;
  await Promise.all(ACCOUNTS.map(async (account) => {
    const tab = new ReconnectingTab(wsUrl, () => stack.ticket(account), (params) => ({
      content: [{ type: 'text', text: 'ok' }],
      structuredContent: { account, agent: params.arguments.agent, seq: params.arguments.seq },
    }));
    tabs.set(account, tab);
    const connected = new Promise((r) => { tab.onConnected = r; });
    tab.start();
    await connected;
  }));
  for (const account of ACCOUNTS) {
    for (let k = 0; k < 2; k++) {
      const token = await stack.mintToken(account, `agent ${k}`);
      const client = new Client({ name: `agent-${account}-${k}`, version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      });
      await client.connect(transport);
      agents.push({ account, client, transport, name: `${account}/${k}`, sessionId: transport.sessionId });
    }
  }
});

after(async () => {
  for (const tab of tabs.values()) tab.stop();
  await Promise.all(agents.map((a) => a.client.close().catch(() => {})));
  await nginx?.stop();
  await stack?.stop();
});

// One call; resolves with { ok, account, error, ms } and never hangs past the guard.
async function call(agent, seq, guardMs = 15000) {
  const started = Date.now();
  let timer;
  const guard = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('hung')), guardMs); });
  try {
    const result = await Promise.race([
      agent.client.callTool({ name: 'get_view', arguments: { agent: agent.name, seq } }),
      guard,
    ]);
    const ms = Date.now() - started;
    if (result.isError) return { ok: false, error: result.content[0].text, ms };
    return { ok: true, answer: result.structuredContent, ms };
  } catch (error) {
    return { ok: false, error: error.message, ms: Date.now() - started };
  } finally {
    clearTimeout(timer);
  }
}

test('5,000 tool calls through nginx: none answered by another account, none lost, none duplicated', async () => {
  const perAgent = 5000 / agents.length;
  const before = new Map([...tabs].map(([a, t]) => [a, t.calls.length]));
  const results = await Promise.all(agents.map(async (agent) => {
    const out = [];
    for (let seq = 0; seq < perAgent; seq++) out.push(await call(agent, seq));
    return out.map((r, seq) => ({ ...r, agent, seq }));
  }));
  const all = results.flat();
  assert.equal(all.length, 5000);
  const failed = all.filter((r) => !r.ok);
  assert.equal(failed.length, 0, JSON.stringify(failed.slice(0, 3).map((f) => f.error)));
  const foreign = all.filter((r) => r.answer.account !== r.agent.account || r.answer.agent !== r.agent.name || r.answer.seq !== r.seq);
  assert.equal(foreign.length, 0);
  // The tabs saw each call exactly once.
  for (const [account, tab] of tabs) {
    const received = tab.calls.slice(before.get(account));
    assert.equal(received.length, 250, account);
    assert.equal(new Set(received.map((p) => `${p.arguments.agent}#${p.arguments.seq}`)).size, 250, account);
  }
});

test('relayctl across shards: one list of every tab, each account on the shard the gateways chose; a shard down makes the answer partial', async () => {
  const shards = stack.routers.map((r) => `127.0.0.1:${r.port}`);
  const relayctl = async (...args) => {
    try {
      const { stdout, stderr } = await execFileAsync(join(binDir, 'relayctl'), args);
      return { code: 0, stdout, stderr };
    } catch (error) {
      return { code: error.code, stdout: error.stdout, stderr: error.stderr };
    }
  };
  const all = await relayctl(`--router=${shards.join(',')}`, '--json', 'tabs');
  assert.equal(all.code, 0, all.stderr);
  const listed = JSON.parse(all.stdout);
  assert.deepEqual(listed.map((t) => t.account).sort(), [...ACCOUNTS].sort());
  // Each tab is listed by the shard that holds it, and that is the one each shard alone lists.
  for (const [i, shard] of shards.entries()) {
    const alone = JSON.parse((await relayctl(`--router=${shard}`, '--json', 'tabs')).stdout).map((t) => t.account).sort();
    assert.deepEqual(listed.filter((t) => t.shard === shard).map((t) => t.account).sort(), alone, `shard ${i}`);
  }
  // RELAY_ROUTER_ADDRS, the gateways' own list, is the default.
  const fromEnv = await execFileAsync(join(binDir, 'relayctl'), ['--json', 'stats'], { env: { ...process.env, RELAY_ROUTER_ADDRS: shards.join(',') } });
  const summed = JSON.parse(fromEnv.stdout);
  assert.equal(summed.tabs, ACCOUNTS.length);
  assert.equal(summed.links, stack.gateways.length * shards.length);
  const perShard = JSON.parse((await relayctl(`--router=${shards.join(',')}`, '--json', '--per_shard', 'stats')).stdout);
  assert.equal(Object.values(perShard.shards).reduce((n, s) => n + s.tabs, 0), summed.tabs);
  // A shard that cannot be reached is named, and the exit code says the answer is partial.
  const partial = await relayctl(`--router=${shards[0]},127.0.0.1:1`, '--json', 'tabs');
  assert.equal(partial.code, 3);
  assert.match(partial.stderr, /router 127\.0\.0\.1:1 did not answer/);
  assert.match(partial.stderr, /partial answer: 1 of 2 router shards did not answer/);
  assert.ok(JSON.parse(partial.stdout).length > 0);
  assert.equal((await relayctl('--router=127.0.0.1:1', 'tabs')).code, 1);
});

test('kill -9 of a gateway under load: its tabs are back within 5 s, sessions keep their ids, nothing hangs', async () => {
  const victim = stack.gateways[0];
  let stop = false;
  let completed = 0;
  const load = Promise.all(agents.map(async (agent) => {
    const out = [];
    for (let seq = 0; !stop; seq++) {
      out.push(await call(agent, 100000 + seq));
      completed++;
    }
    return out;
  }));
  // The kill lands under load: once every agent has had a few calls answered.
  await waitUntil(async () => completed >= agents.length * 3, 'the load is running');
  // The tabs on the victim, by the gateway id the routers list for them.
  const victimId = JSON.parse(await victim.waitForLine((l) => l.includes('gateway started') && l, 'gateway id')).gateway;
  const listed = stack.routers.flatMap((r) => JSON.parse(execFileSync(join(binDir, 'relayctl'), [`--router=127.0.0.1:${r.port}`, '--json', 'tabs']).toString()));
  const victimAccounts = listed.filter((t) => t.gateway === victimId).map((t) => t.account);
  assert.ok(victimAccounts.length > 0, 'some tabs are on the victim');
  const killedAt = Date.now();
  await victim.stop('SIGKILL');
  // Its tabs reconnect through nginx to the other gateways.
  const back = await Promise.all(victimAccounts.map((a) => tabs.get(a).connectedSince(killedAt)));
  const slowest = Math.max(...back) - killedAt;
  assert.ok(slowest < 5000, `the last tab was back after ${slowest} ms`);
  // The load goes on until calls have completed after the tabs came back.
  const afterBack = completed;
  await waitUntil(async () => completed >= afterBack + agents.length, 'calls after the reconnection');
  stop = true;
  const during = (await load).flat();
  const hung = during.filter((r) => r.error === 'hung');
  assert.equal(hung.length, 0, `${hung.length} calls hung; failures: ${JSON.stringify([...new Set(during.filter((r) => !r.ok).map((r) => r.error))])}`);
  const failures = during.filter((r) => !r.ok);
  for (const f of failures) assert.ok(f.ms < 6000, `a failure took ${f.ms} ms: ${f.error}`);
  // Afterwards every session answers, with the session id it had from the start.
  for (const agent of agents) {
    const r = await call(agent, 999999);
    assert.ok(r.ok, `${agent.name}: ${r.error}`);
    assert.equal(r.answer.account, agent.account);
    assert.equal(agent.transport.sessionId, agent.sessionId);
  }
});

test('kill -9 of a router shard: its accounts fail fast, the others do not notice; back within 3 s of the restart', async () => {
  const [router0, router1] = stack.routers;
  const tabsOn = (router) => JSON.parse(execFileSync(join(binDir, 'relayctl'), [`--router=127.0.0.1:${router.port}`, '--json', 'tabs']).toString()).map((t) => t.account);
  await waitUntil(async () => tabsOn(router0).length + tabsOn(router1).length === ACCOUNTS.length, 'all tabs announced');
  const onOne = new Set(tabsOn(router1));
  assert.ok(onOne.size > 0 && onOne.size < ACCOUNTS.length, `shard 1 holds ${onOne.size} accounts`);
  const port = router1.port;
  await router1.stop('SIGKILL');

  for (const agent of agents) {
    const r = await call(agent, 200000);
    if (onOne.has(agent.account)) {
      assert.equal(r.ok, false);
      assert.match(r.error, /relay is restarting/);
      assert.ok(r.ms < 1000, `failed after ${r.ms} ms`);
    } else {
      assert.ok(r.ok, `${agent.name} on the live shard: ${r.error}`);
    }
  }

  const restarted = startProcess('router1b', join(binDir, 'relay-router'), [`--listen=127.0.0.1:${port}`, '--link_listen=127.0.0.1:0', ...tlsArgs('router')]);
  stack.procs.push(restarted);
  await restarted.listeningPort();
  const restartedAt = Date.now();
  const shardAgents = agents.filter((a) => onOne.has(a.account));
  await Promise.all(shardAgents.map((agent) => waitUntil(async () => (await call(agent, 300000)).ok, `${agent.name} reachable`, 10000)));
  const back = Date.now() - restartedAt;
  assert.ok(back < 3000, `reachable again after ${back} ms`);
  for (const agent of agents) {
    const r = await call(agent, 400000);
    assert.ok(r.ok, `${agent.name}: ${r.error}`);
    assert.equal(r.answer.account, agent.account);
  }
});
