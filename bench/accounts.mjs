// bench.mjs --accounts N: N accounts calling at once, each with its own tab and its own agent
// session, each agent calling its next tool as soon as the last is answered (relay-loadgen
// --closed, a connection per account); the relay's full path beside the Node relay under the
// same load. Prints calls/s, p50/p99, CPU per call, and whether an account starves: the slowest
// account's calls/s against the median account's.
import { join } from 'node:path';
import { repoRoot, startProcess, startStack } from '../tests/e2e/lib/stack.mjs';
import { cpuSeconds, initialize, makeAccounts, node, nodeEnv, openLoop, startPeer } from './lib.mjs';

const kBarSlowest = 0.5;  // the slowest account gets at least half the median's calls

async function startEchoTabs(name, url, accounts) {
  const proc = startProcess(name, node, [join(repoRoot, 'bench', 'echo-tabs.mjs'), url], { env: nodeEnv, stdin: accounts.map((a) => a.ticket).join('\n') + '\n' });
  await proc.waitForLine((l) => l.startsWith('tabs on'), `${name} on`, 300000);
  return proc;
}

async function sessions(url, accounts) {
  const out = [];
  for (let i = 0; i < accounts.length; i += 50) {
    out.push(...await Promise.all(accounts.slice(i, i + 50).map(async (a) => [await initialize(url, a.token), a.token])));
  }
  return out;
}

export async function accounts(n, seconds, rounds) {
  const stack = await startStack({ gateways: 2, secondGatewayThreads: 1, users: [] });
  const extra = [];
  try {
    console.log(`${n} accounts, each with a tab and an agent session that calls again as soon as answered (${n} connections, closed loop, ${seconds} s, best of ${rounds} alternating rounds)\n`);
    // Tickets are one-time: one set for the relay's tabs, one for the Node relay's.
    const relayAccounts = makeAccounts(stack, n, 'r');
    const nodeAccounts = makeAccounts(stack, n, 'n');
    const nodeRelay = await startPeer('node relay', 'node-relay.mjs', ['0', stack.hostapi.base, stack.relayKeyFile, '5000']);
    extra.push(nodeRelay);
    extra.push(await startEchoTabs('relay tabs', stack.gateways[0].wsUrl, relayAccounts));
    extra.push(await startEchoTabs('node relay tabs', `ws://127.0.0.1:${nodeRelay.port}/`, nodeAccounts));
    const pidOf = (name) => stack.procs.find((p) => p.name === name).child.pid;
    const systems = [
      { name: 'relay (full path)', url: stack.gateways[1].url, procs: [['gateway B', pidOf('gateway2')], ['router', pidOf('router0')], ['gateway A', pidOf('gateway1')], ['authsvc', pidOf('authsvc')]], accounts: relayAccounts },
      { name: 'Node relay (5 s cache)', url: `http://127.0.0.1:${nodeRelay.port}/mcp`, procs: [['node relay', nodeRelay.child.pid]], accounts: nodeAccounts },
    ];
    for (const s of systems) {
      s.sessions = await sessions(s.url, s.accounts);
      await openLoop(s, 0, 1, { closed: true, sessions: s.sessions });  // warm every path
    }
    const best = systems.map(() => null);
    for (let round = 0; round < rounds; round++) {
      for (const [i, s] of systems.entries()) {
        const before = s.procs.map(([, pid]) => cpuSeconds(pid));
        const r = await openLoop(s, 0, seconds, { closed: true, sessions: s.sessions });
        r.cpu = s.procs.map(([name, pid], k) => [name, ((cpuSeconds(pid) - before[k]) * 1e6) / Math.max(1, r.completed)]);
        if (!best[i] || r.achieved > best[i].achieved) best[i] = r;
      }
    }
    const pad = (t, w) => String(t).padEnd(w);
    console.log(`${pad('system', 26)}${pad('calls/s', 10)}${pad('p50 ms', 9)}${pad('p99 ms', 9)}${pad('slowest/median account', 40)}CPU per call (µs)`);
    for (const [i, s] of systems.entries()) {
      const r = best[i];
      const fairness = r.connection_min_rps / r.connection_median_rps;
      const total = r.cpu.reduce((a, [, us]) => a + us, 0);
      console.log(`${pad(s.name, 26)}${pad(Math.round(r.achieved), 10)}${pad(r.p50_ms.toFixed(2), 9)}${pad(r.p99_ms.toFixed(2), 9)}${pad(`${r.connection_min_rps.toFixed(1)}/${r.connection_median_rps.toFixed(1)} = ${fairness.toFixed(2)} [bar ≥ ${kBarSlowest}: ${fairness >= kBarSlowest ? 'met' : 'NOT MET'}]`, 40)}${r.cpu.map(([name, us]) => `${name} ${us.toFixed(1)}`).join(', ')} (total ${total.toFixed(1)})${r.errors || r.non200 ? `  ERRORS ${r.errors}, non-200 ${r.non200}` : ''}`);
    }
    console.log(`\nratio relay / Node relay with ${n} accounts: ${(best[0].achieved / best[1].achieved).toFixed(2)}x calls/s, p99 ${(best[0].p99_ms / best[1].p99_ms).toFixed(2)}x`);
  } finally {
    await Promise.all(extra.map((p) => p.stop()));
    await stack.stop();
  }
}
