// Operators (issue 13): relayctl across two router shards and two gateways, its live watch,
// authsvc's figures, one call followed through the logs of every service it crossed, and the
// metrics moving as calls go. Tabs on gateway 1, agents on gateway 2, as in production where
// they land wherever the balancer puts them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startStack, startProcess, binDir, waitUntil } from './lib/stack.mjs';
import { ScriptedTab } from './lib/tab.mjs';
import { RawAgent } from './lib/agent.mjs';

const execFileAsync = promisify(execFile);
const USERS = Array.from({ length: 20 }, (_, i) => `op${String(i).padStart(2, '0')}`);
const NO_TAB = 'zed';  // an account that never opens a tab
let stack, gwTabs, gwAgents, shards, watch;
const tabs = new Map();  // account -> ScriptedTab

before(async () => {
  stack = await startStack({
    gateways: 2,
    routers: 2,
    users: [...USERS, NO_TAB],
    // The per-call lines are at debug level: on here, so that one call can be followed.
    gatewayArgs: ['--log_level=debug', '--call_timeout=3s'],
    routerArgs: ['--log_level=debug'],
  });
  [gwTabs, gwAgents] = stack.gateways;
  shards = stack.routers.map((r) => `127.0.0.1:${r.port}`);
  // The live view of both shards, started first so that it sees everything the tests do.
  watch = startProcess('relayctl-watch', join(binDir, 'relayctl'), [`--router=${shards.join(',')}`, '--json', 'watch']);
  for (const shard of shards) {
    await watch.waitForLine((l) => l === `relayctl: watching router ${shard}`, `watching ${shard}`);
  }
});

after(async () => {
  for (const tab of tabs.values()) tab.close();
  await watch?.stop();
  await stack?.stop();
});

// Runs relayctl; resolves to { code, out, err } (a non-zero exit is an answer here).
async function relayctl(...args) {
  try {
    const { stdout, stderr } = await execFileAsync(join(binDir, 'relayctl'), args);
    return { code: 0, out: stdout, err: stderr };
  } catch (error) {
    return { code: error.code, out: error.stdout, err: error.stderr };
  }
}
const ctl = (...args) => relayctl(`--router=${shards.join(',')}`, ...args);
const ctlJson = async (...args) => {
  const { code, out, err } = await ctl('--json', ...args);
  assert.equal(code, 0, err);
  return JSON.parse(out);
};

// The watch's events so far, parsed.
const events = () => watch.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
// Waits at most 2 s (the bound) for an event that matches; returns it.
async function watched(match, what) {
  const line = await watch.waitForLine((l) => {
    if (!l.startsWith('{')) return null;
    const e = JSON.parse(l);
    return Object.entries(match).every(([k, v]) => e[k] === v) ? e : null;
  }, what, 2000);
  return line;
}

async function openTab(account, gateway = gwTabs) {
  const tab = new ScriptedTab(gateway.wsUrl);
  const hello = await tab.hello(await stack.ticket(account));
  assert.equal(hello.result.account, account);
  tab.handlers['tools/call'] = async (params) => ({ content: [{ type: 'text', text: `${account}: ${params.name}` }] });
  return tab;
}

async function agentFor(account) {
  const agent = new RawAgent(gwAgents.url, await stack.mintToken(account));
  await agent.initialize();
  return agent;
}

const metric = async (url, name) => {
  const text = await (await fetch(url)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
};

test('tabs: every tab on both shards, each on the shard that owns its account, each seen coming up', async () => {
  // Accounts go to shards by rendezvous hashing over the shards' addresses (ports the OS
  // picked): tabs open until both shards hold at least one.
  for (const account of USERS) {
    tabs.set(account, await openTab(account));
    const up = await watched({ kind: 'tab_up', account }, `tab_up of ${account}`);
    assert.equal(up.client, 'scripted-tab');
    const owners = new Set([...tabs.keys()].map((a) => events().find((e) => e.kind === 'tab_up' && e.account === a).shard));
    if (owners.size === 2 && tabs.size >= 4) break;
  }
  const listed = await ctlJson('tabs');
  assert.deepEqual(listed.map((t) => t.account).sort(), [...tabs.keys()].sort());
  const perShard = await Promise.all(shards.map(async (s) => JSON.parse((await relayctl(`--router=${s}`, '--json', 'tabs')).out)));
  assert.ok(perShard.every((list) => list.length > 0), 'both shards hold tabs');
  for (const [i, list] of perShard.entries()) {
    for (const tab of list) {
      assert.equal(listed.find((t) => t.account === tab.account).shard, shards[i]);
      const up = events().find((e) => e.kind === 'tab_up' && e.account === tab.account);
      assert.equal(up.shard, shards[i], 'the watch names the same shard');
      assert.equal(up.gateway, tab.gateway);
    }
  }
  assert.equal(new Set(listed.map((t) => t.gateway)).size, 1, 'every tab is on the tabs gateway');
});

test('sessions: an agent on the other gateway is seen opening, and listed on its account\'s shard', async () => {
  const [account] = tabs.keys();
  const agent = await agentFor(account);
  const opened = await watched({ kind: 'session_opened', session: agent.session }, 'session_opened');
  assert.equal(opened.account, account);
  const all = await ctlJson('sessions');
  const mine = all.find((s) => s.session === agent.session);
  assert.equal(mine.account, account);
  assert.equal(mine.shard, opened.shard);
  const only = await ctlJson('--account', account, 'sessions');
  assert.ok(only.length >= 1 && only.every((s) => s.account === account));
});

test('one call followed through the logs of gateway 2, the router and gateway 1, and counted in the metrics', async () => {
  const [account] = tabs.keys();
  const agent = await agentFor(account);
  const gwMetrics = `http://127.0.0.1:${gwAgents.port}/metrics`;
  const series = ['relay_gateway_forward_duration_seconds_count', 'relay_gateway_mcp_messages_total{method="tools/call"}',
    'relay_gateway_http_responses_total{code="200"}', 'relay_gateway_forward_outcomes_total{outcome="result"}'];
  const before = await Promise.all(series.map((name) => metric(gwMetrics, name)));
  const routerForwards = async () => (await Promise.all(stack.routers.map((r) => metric(r.metricsUrl, 'relay_router_forwards_total')))).reduce((a, b) => a + b, 0);
  const forwardsBefore = await routerForwards();
  const { message } = await agent.callTool('get_view', {}, undefined, { headers: { 'x-request-id': 'req-e2e-42' } });
  assert.equal(message.result.content[0].text, `${account}: get_view`);
  const finished = await gwAgents.waitForLine((l) => {
    const j = JSON.parse(l);
    return j.msg === 'call finished' && j.request_id === 'req-e2e-42' ? j : null;
  }, 'the agent gateway\'s line');
  assert.equal(finished.level, 'debug');
  assert.equal(finished.outcome, 'result');
  assert.equal(finished.account, account);
  const call = finished.call;
  const routed = await Promise.any(stack.routers.map((r) => r.waitForLine((l) => {
    const j = JSON.parse(l);
    return j.msg === 'call routed to its tab' && j.call === call ? j : null;
  }, 'the router\'s line', 2000)));
  assert.equal(routed.account, account);
  const delivered = await gwTabs.waitForLine((l) => {
    const j = JSON.parse(l);
    return j.msg === 'call delivered to its tab' && j.call === call ? j : null;
  }, 'the tab gateway\'s line');
  assert.equal(delivered.tab_call, routed.tab_call);
  const after = await Promise.all(series.map((name) => metric(gwMetrics, name)));
  series.forEach((name, i) => assert.equal(after[i] - before[i], 1, name));
  assert.equal(await routerForwards() - forwardsBefore, 1);
  const tabsByKind = await metric(`http://127.0.0.1:${gwTabs.port}/metrics`, 'relay_gateway_connections_by_kind{kind="tab"}');
  assert.equal(tabsByKind, tabs.size);
});

test('a call that fails is watched with its reason and its call id', async () => {
  const agent = await agentFor(NO_TAB);
  const { message } = await agent.callTool('get_view');
  assert.equal(message.result.isError, true);
  const failed = await watched({ kind: 'call_failed', account: NO_TAB }, 'call_failed');
  assert.equal(failed.reason, 'no_tab');
  assert.match(failed.call, /^[0-9a-f]+-\d+$/);
  const finished = await gwAgents.waitForLine((l) => {
    const j = JSON.parse(l);
    return j.msg === 'call finished' && j.call === failed.call ? j : null;
  }, 'the failed call in the agent gateway\'s log');
  assert.equal(finished.outcome, 'no_tab');
});

test('a tab displaced by another tab of its account, then one kicked by an operator, then one closing', async () => {
  const [first, second, third] = tabs.keys();
  const old = tabs.get(first);
  const replacement = await openTab(first, gwAgents);
  const displaced = await watched({ kind: 'tab_displaced', account: first }, 'tab_displaced');
  assert.match(displaced.reason, /another tab/);
  assert.equal((await old.closed).code, 4409);
  tabs.set(first, replacement);
  const listed = (await ctlJson('tabs')).find((t) => t.account === first);
  assert.equal(listed.gateway, events().filter((e) => e.kind === 'tab_up' && e.account === first).at(-1).gateway);

  const kick = await ctl('kick', second);
  assert.equal(kick.code, 0, kick.err);
  assert.match(kick.out, new RegExp(`disconnected the tab of ${second}`));
  const kicked = await watched({ kind: 'tab_displaced', account: second }, 'the kick');
  assert.match(kicked.reason, /operator/);
  assert.equal((await tabs.get(second).closed).code, 4409);
  tabs.delete(second);
  assert.ok(!(await ctlJson('tabs')).some((t) => t.account === second));
  const again = await ctl('kick', second);
  assert.equal(again.code, 1);
  assert.match(again.out, /no tab here/);

  tabs.get(third).close();
  await watched({ kind: 'tab_down', account: third }, 'tab_down');
  tabs.delete(third);
});

test('end-session: the owning shard ends it everywhere; the agent then gets 404', async () => {
  const [account] = tabs.keys();
  const agent = await agentFor(account);
  await watched({ kind: 'session_opened', session: agent.session }, 'session_opened');
  const ended = await ctl('end-session', agent.session);
  assert.equal(ended.code, 0, ended.err);
  await watched({ kind: 'session_ended', session: agent.session }, 'session_ended');
  await waitUntil(async () => (await agent.post({ jsonrpc: '2.0', id: 9, method: 'ping' })).status === 404, 'the ended session is refused');
  assert.equal((await ctl('end-session', 'not-a-session')).code, 2);
});

test('stats: summed over the shards, and per shard', async () => {
  const total = await ctlJson('stats');
  const split = await ctlJson('--per_shard', 'stats');
  assert.deepEqual(Object.keys(split.shards).sort(), [...shards].sort());
  for (const key of ['links', 'tabs', 'sessions', 'forwards', 'noTab']) {
    assert.equal(Object.values(split.shards).reduce((sum, s) => sum + s[key], 0), split[key], key);
  }
  assert.equal(total.links, 4, 'two gateways linked to each of two shards');
  assert.equal(total.tabs, tabs.size);
  assert.equal(total.tabs, (await ctlJson('tabs')).length);
  assert.ok(total.noTab >= 1);
});

test('auth stats: the cache and the host API as authsvc saw them, the same as its /metrics', async () => {
  const stats = JSON.parse((await relayctl(`--authsvc=127.0.0.1:${stack.authsvcPort}`, '--json', 'auth', 'stats')).out);
  assert.equal(stats.revocationWatchers, 2, 'both gateways hold the revocation stream');
  assert.ok(stats.misses >= 1);
  assert.ok(stats.redeemRequests >= tabs.size);
  assert.equal(stats.upstreamRequests, stats.misses + stats.redeemRequests);
  assert.deepEqual(stats.errors, { unreachable: 0, badAnswer: 0, queueFull: 0 });
  assert.ok(stats.upstreamLatencyAvgMs > 0);
  const text = await (await fetch(stack.authsvc.metricsUrl)).text();
  assert.match(text, new RegExp(`relay_authsvc_cache_lookups_total\\{result="miss"\\} ${stats.misses}\\n`));
  const human = await relayctl(`--authsvc=127.0.0.1:${stack.authsvcPort}`, 'auth', 'stats');
  assert.match(human.out, /^cache +\d+ entries; \d+ hits/m);
});

test('an unreachable shard is named, and the exit code says the answer is partial', async () => {
  const partial = await relayctl(`--router=${shards[0]},127.0.0.1:1`, '--json', 'tabs');
  assert.equal(partial.code, 3);
  assert.match(partial.err, /router 127\.0\.0\.1:1 did not answer/);
  assert.ok(Array.isArray(JSON.parse(partial.out)));
  const none = await relayctl('--router=127.0.0.1:1', 'stats');
  assert.equal(none.code, 1);
});

test('the watch, for people: one aligned line per event', async () => {
  const human = startProcess('relayctl-watch-text', join(binDir, 'relayctl'), [`--router=${shards.join(',')}`, 'watch']);
  try {
    for (const shard of shards) {
      await human.waitForLine((l) => l === `relayctl: watching router ${shard}`, `watching ${shard}`);
    }
    const account = [...tabs.keys()].at(-1);
    tabs.get(account).close();
    tabs.delete(account);
    const line = await human.waitForLine((l) => l.includes(' tab_down ') && l.includes(account) ? l : null, 'a tab_down line', 2000);
    assert.match(line, /^\d\d:\d\d:\d\d\.\d{3}  tab_down {8}op\d\d {18}gateway=[0-9a-f]+ tab=\d+ \(the tab disconnected\) \[127\.0\.0\.1:\d+\]$/);
  } finally {
    await human.stop();
  }
});
