// bench.mjs --rebuild N[,N…]: a router shard rebuilt from the gateways. N tabs (real tab
// WebSockets, each of its own account, spread over as many gateways as the descriptor limit
// needs) announced to one shard; then `kill -9` of the shard and its restart on the same ports:
// the time until it routes every tab again (its relay_router_tabs gauge back at N), counted
// from the restart and from the kill, and the shard's resident memory per tab. Real sockets end
// at this machine's descriptor limit; with --rebuild-via links the tabs are announced instead by
// relay-linkload processes (bench/link_load.cc), each speaking the link as a gateway would
// (the project's own LinkEndpoint, under the gateway's certificate) and announcing its tabs
// again whenever the link comes back.
import { join } from 'node:path';
import { binDir, repoRoot, startProcess, startStack, tlsArgs, waitUntil } from '../tests/e2e/lib/stack.mjs';
import { initialize, makeAccounts, node, nodeEnv, openLoop, rssKiB, startEchoTab, stallText } from './lib.mjs';
import { heldBy, mostConnections } from './connections.mjs';

const kBarSeconds = 2;
const kBarKiB = 1;

async function routerTabs(router) {
  try {
    const text = await (await fetch(router.metricsUrl)).text();
    return Number(/^relay_router_tabs (\S+)$/m.exec(text)?.[1] ?? -1);
  } catch {
    return -1;  // not listening yet
  }
}

// Gateways the link load tool stands in for.
const kLinkGateways = 4;

// Starts the holders of n tabs: real tab sockets over as many gateways as the descriptor limit
// needs, or kLinkGateways relay-linkload processes on the shard's link port.
async function announce(n, via, stack, holders, victim) {
  if (via === 'links') {
    const per = Math.ceil(n / kLinkGateways);
    for (let g = 0; g < kLinkGateways; g++) {
      const tabs = Math.min(per, n - g * per);
      holders.push(startProcess(`linkload ${g + 1}`, join(binDir, 'relay-linkload'), [
        `--link=127.0.0.1:${stack.routers[victim].linkPort}`, `--tabs=${tabs}`, `--prefix=l${g + 1}`,
        `--gateway_id=linkload-${g + 1}`, ...tlsArgs('gateway')]));
    }
    return kLinkGateways;
  }
  const perGateway = mostConnections();
  const gateways = Math.ceil(n / perGateway);
  const accounts = makeAccounts(stack, n, 't', { tokens: false });
  for (let g = 0; g < gateways; g++) {
    const mine = accounts.slice(g * perGateway, (g + 1) * perGateway);
    holders.push(startProcess(`tabs on gateway ${g + 1}`, node, [join(repoRoot, 'bench', 'hold.mjs'), 'tab', stack.gateways[g].url, '500'], { env: nodeEnv, stdin: mine.map((a) => a.ticket).join('\n') + '\n\n' }));
  }
  await Promise.all(holders.map(heldBy));
  return gateways;
}

// With the link tool, a second shard serves one account's calls meanwhile: a trickle of
// kTrickleRate calls/s through the same gateway to that account's tab, whose p99 before the
// kill and across the rebuild says whether the storm reaches the other shards.
const kTrickleRate = 200;
const kTrickleSeconds = 4;

// The resident memory once it has settled: what a burst freed goes back to the system within
// the heap trimmer's period (2 s, common/heap_trimmer.h), so the figure is taken when two
// samples half a second apart agree within 1% (at most 5 s).
async function settledKiB(pid) {
  let last = rssKiB(pid);
  for (let i = 0; i < 10; i++) {
    await new Promise((r) => setTimeout(r, 500));
    const now = rssKiB(pid);
    if (Math.abs(now - last) <= last * 0.01 && i >= 4) return now;
    last = now;
  }
  return last;
}

async function rebuild(n, via) {
  const links = via === 'links';
  const stack = await startStack({ gateways: links ? 1 : Math.ceil(n / mostConnections()), routers: links ? 2 : 1, users: links ? ['bench'] : [] });
  const holders = [];
  try {
    let victim = 0;
    let system = null;
    if (links) {
      const gw = stack.gateways[0];
      holders.push(await startEchoTab('echo tab', gw.wsUrl, await stack.ticket('bench')));
      const token = await stack.mintToken('bench');
      system = { url: gw.url, token, sid: await initialize(gw.url, token) };
      // The shard that does not hold bench's tab is the one rebuilt.
      await waitUntil(async () => (await routerTabs(stack.routers[0])) + (await routerTabs(stack.routers[1])) === 1, "bench's tab to be announced");
      victim = (await routerTabs(stack.routers[0])) === 1 ? 1 : 0;
    }
    const router = stack.routers[victim];
    const rest = rssKiB(router.child.pid);
    const started = Date.now();
    const gateways = await announce(n, via, stack, holders, victim);
    await waitUntil(async () => (await routerTabs(router)) === n, `the router to count ${n} tabs`, 120000);
    const arrivedMs = Date.now() - started;
    const full = await settledKiB(router.child.pid);

    let before = null;
    let during = null;
    if (system) {
      await openLoop(system, kTrickleRate, 1);  // warm the path
      before = await openLoop(system, kTrickleRate, kTrickleSeconds);
      during = openLoop(system, kTrickleRate, kTrickleSeconds);
      await new Promise((r) => setTimeout(r, 500));  // the trickle runs before the kill too
    }
    const killedAt = Date.now();
    await router.stop('SIGKILL');
    const restarted = await stack.restartRouter(victim);
    const restartedAt = Date.now();
    let polls = 0;
    await waitUntil(async () => { polls++; return (await routerTabs(restarted)) === n; }, `the restarted router to count ${n} tabs`, 120000);
    const routableAt = Date.now();
    const rebuilt = await settledKiB(restarted.child.pid);
    return { n, gateways, arrivedMs, rest, full, rebuilt, fromKill: routableAt - killedAt, fromRestart: routableAt - restartedAt, polls, before, during: await during };
  } finally {
    await Promise.all(holders.map((h) => h.stop()));
    await stack.stop();
  }
}

export async function rebuilds(levels, via = 'tabs') {
  if (via !== 'tabs' && via !== 'links') throw new Error('--rebuild-via is tabs or links');
  console.log(`a shard rebuilt from the gateways: N tabs, each of its own account, announced to one router ${via === 'links' ? 'by relay-linkload processes speaking the link as gateways would' : 'by real tab sockets through gateways'}; kill -9 of the router and its restart on the same ports\n`);
  for (const n of levels.map(Number)) {
    const r = await rebuild(n, via);
    const perTab = (r.full - r.rest) / n;
    console.log(`${String(n).padStart(6)} tabs on ${r.gateways} ${via === 'links' ? 'link load process(es)' : 'gateway(s)'} (arrived in ${(r.arrivedMs / 1000).toFixed(1)} s): every tab routable again ${(r.fromRestart / 1000).toFixed(2)} s after the restart [bar ≤ ${kBarSeconds}: ${r.fromRestart / 1000 <= kBarSeconds ? 'met' : 'NOT MET'}] (${(r.fromKill / 1000).toFixed(2)} s after the kill); router ${(r.rest / 1024).toFixed(1)} → ${(r.full / 1024).toFixed(1)} MiB, ${perTab.toFixed(2)} KiB per tab [bar ≤ ${kBarKiB}: ${perTab <= kBarKiB ? 'met' : 'NOT MET'}], ${(r.rebuilt / 1024).toFixed(1)} MiB once rebuilt`);
    if (r.before) {
      const ratio = r.during.p99_ms / r.before.p99_ms;
      console.log(`        the other shard's calls (${kTrickleRate}/s, ${kTrickleSeconds} s each): p50 ${r.before.p50_ms.toFixed(2)} → ${r.during.p50_ms.toFixed(2)} ms, p99 ${r.before.p99_ms.toFixed(2)} → ${r.during.p99_ms.toFixed(2)} ms across the kill and rebuild (${ratio.toFixed(2)}×; during: ${stallText(r.during)})${r.during.errors || r.during.non200 ? `, ERRORS ${r.during.errors}, non-200 ${r.during.non200}` : ''}`);
    }
  }
}
