// bench.mjs --restart N[,N…]: a gateway restarted under its tabs. N tab WebSockets, each of its
// own account, reach two gateways through nginx (round robin, as a deployment's load balancer
// would deal them); then `kill -9` of the first gateway and its restart on the same port. Its
// tabs see their connection close and connect again at once through nginx with the resume
// credential the relay gave them, as the editor's page does (BENCH_RESUME=0: with a fresh ticket
// each, as the page did before, which the host API redeems one by one: with the reference host
// API, `php -S`, one process, that is where the time went). Prints the time until the router
// routes every tab again (its relay_router_tabs back at N), counted from the kill, how many
// attempts the tabs made, each gateway's resident memory per tab before and after, the CPU each
// process spent from the kill until then, and what nginx and the other gateway complained of.
import { join } from 'node:path';
import { binDir, repoRoot, startProcess, startStack, waitUntil } from '../tests/e2e/lib/stack.mjs';
import { startNginx } from '../tests/e2e/lib/nginx.mjs';
import { initialize, makeAccounts, mintTickets, node, nodeEnv, openLoop, rssKiB, stallText, startEchoTab, tcpCounters, treeCpuSeconds } from './lib.mjs';
import { heldBy, mostConnections, openFileLimit } from './connections.mjs';

const kBarSeconds = 2;  // issue 29's bar for a shard's rebuild, shown beside this one too
// --restart-watch: after the storm, the tabs' keep-alives are watched for two ping periods (the
// gateway's default, 25 s: a live tab that answers is pinged every other period) and a little more,
// with a trickle of calls through a gateway that took tabs in, and its CPU sampled meanwhile.
const kPingPeriodSeconds = 25;
const kWatchSeconds = 2 * kPingPeriodSeconds + 3;
const kWatchRate = 200;
const kWindowMs = 500;
// nginx workers: each may hold openFileLimit() descriptors, two per tab. Four, so that each holds
// under 15/16 of its worker_connections with every tab on: beyond that nginx makes room by closing
// connections that have not yet sent their request (at warn level, "worker_connections are not
// enough, reusing connections"), which a tab sees as a reset; with two workers at 19,000 tabs it
// reset about 450 tabs in each restart, which tried again 0.2-1 s later.
const kWorkers = 4;
const kHolders = 2;     // the bench's processes holding the tabs (one per core)
// The tabs are held by relay-tabholder (bench/tab_holder.cc), a load tool of C++; BENCH_HOLDER=node
// holds them with bench/hold.mjs, the Node `ws` client, as before: its 9,500 handshakes cost 2.6 s
// of CPU on the two cores the relay restarts on, more than the relay's own part.
const nodeHolder = process.env.BENCH_HOLDER === 'node';
// --restart-from all: BENCH_FIRST=direct connects the tabs first straight to the gateway killed,
// not through nginx's port pinned to it.
const firstDirect = process.env.BENCH_FIRST === 'direct';
// The kernel's TCP counters printed when they moved during the storm: resets sent and why (a
// close with unread data, with a full buffer, on a timeout), and listen queues that overflowed.
const kTcpCounters = ['TcpOutRsts', 'TcpEstabResets', 'TcpAttemptFails', 'TcpExtTCPAbortOnData', 'TcpExtTCPAbortOnClose',
  'TcpExtTCPAbortOnMemory', 'TcpExtTCPAbortOnTimeout', 'TcpExtTCPAbortOnLinger', 'TcpExtTCPAbortFailed',
  'TcpExtListenOverflows', 'TcpExtListenDrops', 'TcpExtTCPReqQFullDrop', 'TcpExtTCPBacklogDrop',
  'TcpExtTCPTimeWaitOverflow', 'TcpExtTCPSynRetrans', 'TcpExtTCPChallengeACK', 'TcpExtTCPSYNChallenge'];

async function routerTabs(router) {
  try {
    const text = await (await fetch(router.metricsUrl)).text();
    return Number(/^relay_router_tabs (\S+)$/m.exec(text)?.[1] ?? -1);
  } catch {
    return -1;
  }
}

async function gatewayTabs(gw) {
  try {
    const text = await (await fetch(`http://127.0.0.1:${gw.port}/metrics`)).text();
    return Number(/^relay_gateway_connections_by_kind\{kind="tab"\} (\S+)$/m.exec(text)?.[1] ?? 0);
  } catch {
    return -1;
  }
}

// The most tabs this machine lets nginx carry (two descriptors each, per worker) and one
// gateway hold (all of them, while the other restarts).
export const mostTabs = () => Math.min(mostConnections(), Math.floor(kWorkers * (openFileLimit() - 200) / 2 / 1000) * 1000);

// from: 'half' (two gateways, the tabs dealt to both by nginx, half of them on the one killed) or
// 'all' (three gateways, every tab first on the one killed, through nginx's port pinned to it;
// they come back through nginx's own port to the other two, as the tabs of a gateway holding
// 19,000 would). Through nginx, not straight to the gateway: the storm's nginx is then one whose
// workers held those tabs a moment before, as a deployment's is, not one meeting them first
// (BENCH_FIRST=direct: straight, as before).
async function restart(n, from, watch) {
  const stack = await startStack({ gateways: from === 'all' ? 3 : 2, users: [] });
  const holders = [];
  let trickleTab = null;  // --restart-watch's, apart from the holders
  let nginx = null;
  try {
    const [a, ...others] = stack.gateways;
    const sumOver = (values) => values.reduce((x, y) => x + y, 0);
    const othersTabs = async () => sumOver(await Promise.all(others.map(gatewayTabs)));
    const othersRss = () => sumOver(others.map((g) => rssKiB(g.child.pid)));
    nginx = await startNginx(stack.dir, stack.gateways.map((g) => g.port), { workers: kWorkers, workerConnections: openFileLimit() - 200, upstreamSources: 8, pinFirst: from === 'all' });
    const firstUrl = firstDirect ? a.url : `http://127.0.0.1:${nginx.pinnedPort}/mcp`;
    stack.procs.push(nginx);
    const router = stack.routers[0];
    const accounts = makeAccounts(stack, n, 'g', { tokens: false });
    const url = `http://127.0.0.1:${nginx.port}/mcp`;
    if (from === 'all' && nodeHolder) throw new Error('--restart-from all needs relay-tabholder (not BENCH_HOLDER=node)');
    // The tabs, split over kHolders processes: one Node process making 9,500 WebSocket handshakes
    // at once is a full core for 2.7 s, longer than the relay's whole part of the restart.
    const shares = Array.from({ length: kHolders }, (_, h) => accounts.filter((_, i) => i % kHolders === h));
    for (const [h, share] of shares.entries()) {
      const stdin = share.map((acc) => acc.ticket).join('\n') + '\n\n';
      holders.push(nodeHolder
        ? startProcess(`tabs ${h}`, node, [join(repoRoot, 'bench', 'hold.mjs'), 'tab', url, '500'], { env: nodeEnv, stdin, keepStdin: true })
        : startProcess(`tabs ${h}`, join(binDir, 'relay-tabholder'), [`--url=${url}`, ...(from === 'all' ? [`--first_url=${firstUrl}`] : []), '--batch=500', `--sources=${process.env.BENCH_SOURCES ?? 8}`, `--resume=${process.env.BENCH_RESUME !== '0'}`], { stdin, keepStdin: true }));
    }
    // The watch's trickle: its own account, its tab straight on a gateway that stays up.
    let trickle = null;
    if (watch) {
      const [acc] = makeAccounts(stack, 1, 'w');
      trickleTab = await startEchoTab('trickle tab', others[0].wsUrl, acc.ticket);
      trickle = { url: others[0].url, token: acc.token, sid: await initialize(others[0].url, acc.token) };
    }
    const helds = await Promise.all(holders.map((h) => heldBy(h)));
    const arrivalMs = Math.max(...helds.map((m) => Number(m[2])));
    // The watch's trickle tab is one more, on a gateway that stays up.
    const all = n + (trickle ? 1 : 0);
    await waitUntil(async () => (await routerTabs(router)) === all, `the router to count ${all} tabs`, 60000);
    const before = { a: await gatewayTabs(a), b: await othersTabs(), rssA: rssKiB(a.child.pid), rssB: othersRss() };

    // Each tab's ticket to come back with, made now: tickets live 60 s.
    const second = mintTickets(stack, 'g', n);
    const secondOf = new Map(accounts.map((acc, i) => [acc.ticket, second[i]]));
    for (const [h, share] of shares.entries()) {
      holders[h].write(share.map((acc) => `${acc.ticket} ${secondOf.get(acc.ticket)}`).join('\n') + '\n\n');
      await holders[h].waitForLine((l) => l === 'second tickets taken', 'the holder to take the second tickets');
    }

    // Who spends the CPU of the storm: every process but the killed gateway, from the kill until
    // every tab is routable (the restarted gateway: all it spent since it started).
    const spenders = { [others.length > 1 ? 'other gateways' : 'other gateway']: others, router: [router], nginx: [nginx], 'the tabs (bench)': holders, 'host API': [stack.hostapi], authsvc: [stack.authsvc] };
    const cpuOf = () => Object.fromEntries(Object.entries(spenders).map(([name, ps]) => [name, ps.reduce((sum, p) => sum + treeCpuSeconds(p.child.pid), 0)]));
    const cpuBefore = cpuOf();
    const nginxLinesBefore = nginx.lines.length;
    const otherLinesBefore = others.map((g) => g.lines.length);
    const tcpBefore = tcpCounters();
    const killedAt = Date.now();
    await a.stop('SIGKILL');
    const restarted = await stack.restartGateway(0);
    const restartedAt = Date.now();
    // Routable again: the live gateways hold every tab again and the router counts them all
    // (its count alone could still include the killed gateway's tabs, before it saw the link end).
    let lowest = all;
    await waitUntil(async () => {
      const count = await routerTabs(router);
      if (count >= 0) lowest = Math.min(lowest, count);
      return count === all && (await gatewayTabs(restarted)) + (await othersTabs()) === all;
    }, `the router to count ${all} tabs again`, 120000);
    const routableAt = Date.now();
    const cpuAfter = cpuOf();
    const tcpAfter = tcpCounters();
    const tcp = kTcpCounters.map((name) => [name, tcpAfter[name] - tcpBefore[name]]).filter(([, d]) => d > 0);
    // What nginx complained of meanwhile, by kind (its numbers and addresses left out).
    const complaints = {};
    for (const line of nginx.lines.slice(nginxLinesBefore)) {
      const upstream = Number(/upstream: "http:\/\/127\.0\.0\.1:(\d+)/.exec(line)?.[1]);
      const towards = upstream === a.port ? ' (the restarted gateway)' : others.some((g) => g.port === upstream) ? ' (another gateway)' : '';
      const kind = line.replace(/^\S+ \S+ \[\w+\] \d+#\d+: (\*\d+ )?/, '').replace(/,.*$/, '').replace(/\d+/g, 'N') + towards;
      complaints[kind] = (complaints[kind] ?? 0) + 1;
    }
    // And what the other gateways said that was not routine (their warnings and errors, by message).
    const said = {};
    for (const line of others.flatMap((g, i) => g.lines.slice(otherLinesBefore[i]))) {
      const m = /"level":"(warn|error)".*?"msg":"([^"]*)"/.exec(line);
      if (m) said[m[2]] = (said[m[2]] ?? 0) + 1;
    }
    const cpu = { 'restarted gateway': treeCpuSeconds(restarted.child.pid) };
    for (const name of Object.keys(spenders)) cpu[name] = cpuAfter[name] - cpuBefore[name];
    // Each holder's tabs that were on the killed gateway, back: summed over the holders. A holder
    // says `reheld` each time every tab it saw closed is back, which can happen before the last
    // of its tabs has seen its close: its latest line, once the lines add up to the killed tabs.
    const reheld = /^reheld (\d+) in (\d+) ms, (\d+) attempts, (\d+) given up/;
    const latest = () => holders.map((h) => h.lines.map((l) => reheld.exec(l)).filter(Boolean).at(-1));
    let backs = [];
    await waitUntil(() => {
      backs = latest();
      return backs.every(Boolean) && backs.reduce((total, m) => total + Number(m[1]) + Number(m[4]), 0) === before.a;
    }, 'the tabs to be back', 60000);
    const sum = (k) => backs.reduce((total, m) => total + Number(m[k]), 0);
    const back = { tabs: sum(1), attempts: sum(3), givenUp: sum(4), said: backs.map((m) => m.input).join('\n                  ') };
    const after = { a: await gatewayTabs(restarted), b: await othersTabs(), rssA: rssKiB(restarted.child.pid), rssB: othersRss() };
    const watched = watch ? await watchKeepAlives(trickle, [restarted, ...others], holders) : null;
    return {
      n, arrivalMs, arrivalSaid: helds.map((m) => m.input).join('\n                  '), before, after, lowest,
      fromKill: routableAt - killedAt, restartMs: restartedAt - killedAt,
      cpu, tcp, complaints, said, back: back.tabs, attempts: back.attempts, givenUp: back.givenUp, tabsSaid: back.said, watched,
    };
  } finally {
    await Promise.all([...holders, ...(trickleTab ? [trickleTab] : [])].map((h) => h.stop()));
    await stack.stop();
  }
}

// The keep-alives after the storm: the trickle's figures over kWatchSeconds, and the CPU of the
// gateways that took the tabs in and of the tabs' holders, per kWindowMs: the busiest window and
// the median one. Keep-alives sent in step show as a busy window a ping period after the storm.
async function watchKeepAlives(trickle, gateways, holders) {
  const cpu = (ps) => ps.reduce((sum, p) => sum + treeCpuSeconds(p.child.pid), 0);
  const windows = { gateways: [], holders: [] };
  let last = { gateways: cpu(gateways), holders: cpu(holders) };
  const sampler = setInterval(() => {
    const now = { gateways: cpu(gateways), holders: cpu(holders) };
    for (const k of Object.keys(windows)) windows[k].push((now[k] - last[k]) / (kWindowMs / 1000));
    last = now;
  }, kWindowMs);
  const linesBefore = gateways.map((g) => g.lines.length);
  let figures;
  try {
    figures = await openLoop(trickle, kWatchRate, kWatchSeconds);
  } finally {
    clearInterval(sampler);
  }
  // What those gateways said meanwhile that was not routine (warnings and errors, by message).
  const said = {};
  for (const line of gateways.flatMap((g, i) => g.lines.slice(linesBefore[i]))) {
    const m = /"level":"(warn|error)".*?"msg":"([^"]*)"/.exec(line);
    if (m) said[m[2]] = (said[m[2]] ?? 0) + 1;
  }
  const shape = (xs) => {
    const sorted = [...xs].sort((a, b) => a - b);
    return { busiest: sorted.at(-1) ?? 0, median: sorted[Math.floor(sorted.length / 2)] ?? 0, busiestAt: (xs.indexOf(sorted.at(-1)) + 1) * kWindowMs / 1000 };
  };
  return { trickle: figures, gateways: shape(windows.gateways), holders: shape(windows.holders), said };
}

export async function restarts(levels, from = 'half', watch = false) {
  const most = mostTabs();
  const layout = from === 'all'
    ? (firstDirect
      ? 'every tab first straight on the first of three gateways, nginx (round robin) in front of all three'
      : 'every tab first through nginx on a port of its own pinned to the first of three gateways, then on its round robin over all three')
    : 'through nginx (round robin) to two gateways';
  console.log(`a gateway restarted under its tabs: N tabs, each of its own account, held by ${kHolders} bench processes (${nodeHolder ? 'bench/hold.mjs, BENCH_HOLDER=node' : 'relay-tabholder'}), ${layout} (nginx: ${kWorkers} workers, connecting from 8 addresses); kill -9 of the first and its restart on the same port; its tabs connect again at once through nginx with ${process.env.BENCH_RESUME === '0' ? 'a fresh ticket (BENCH_RESUME=0)' : 'the resume credential the relay gave them'}. At most ${most} tabs here (two descriptors each in nginx, all of them on one gateway meanwhile).\n`);
  for (const n of levels.map((l) => (l === 'max' ? most : Math.min(most, Number(l))))) {
    const r = await restart(n, from, watch);
    const kib = (rss, tabs) => (tabs > 0 ? `${(rss / 1024).toFixed(1)} MiB, ${tabs} tabs` : `${(rss / 1024).toFixed(1)} MiB`);
    console.log(`${String(n).padStart(6)} tabs (arrived in ${(r.arrivalMs / 1000).toFixed(1)} s): ${r.before.a} on the killed gateway; every tab routable again ${(r.fromKill / 1000).toFixed(2)} s after the kill [a shard's bar ≤ ${kBarSeconds}: ${r.fromKill / 1000 <= kBarSeconds ? 'met' : 'NOT MET'}] (the gateway was up again after ${(r.restartMs / 1000).toFixed(2)} s; the lowest router count polled: ${r.lowest}); ${r.back} tabs came back in ${r.attempts} attempts${r.givenUp ? `, ${r.givenUp} GIVEN UP` : ''}`);
    console.log(`        the tabs' arrival: ${r.arrivalSaid}`);
    console.log(`        gateways before: killed ${kib(r.before.rssA, r.before.a)}, others ${kib(r.before.rssB, r.before.b)}; after: restarted ${kib(r.after.rssA, r.after.a)}, others ${kib(r.after.rssB, r.after.b)}`);
    console.log(`        the tabs: ${r.tabsSaid}`);
    const complaints = Object.entries(r.complaints).sort((x, y) => y[1] - x[1]).slice(0, 4);
    if (complaints.length) console.log(`        nginx meanwhile: ${complaints.map(([kind, count]) => `${kind} ×${count}`).join('; ')}`);
    const said = Object.entries(r.said).sort((x, y) => y[1] - x[1]).slice(0, 4);
    if (said.length) console.log(`        the other gateways meanwhile: ${said.map(([msg, count]) => `${msg} ×${count}`).join('; ')}`);
    if (r.tcp.length) console.log(`        the kernel's TCP counters meanwhile (the whole machine's): ${r.tcp.map(([name, d]) => `${name} +${d}`).join(', ')}`);
    const relay = r.cpu['restarted gateway'] + (r.cpu['other gateway'] ?? r.cpu['other gateways']) + r.cpu.router;
    if (r.watched) {
      const w = r.watched;
      const pct = (x) => `${(x * 100).toFixed(0)} %`;
      console.log(`        the keep-alives after the storm (${kWatchSeconds} s, ${kWatchRate} calls/s through a gateway that took tabs in): trickle p50 ${w.trickle.p50_ms.toFixed(2)} ms, p99 ${w.trickle.p99_ms.toFixed(2)} ms (${stallText(w.trickle)})${w.trickle.errors || w.trickle.non200 ? `, ERRORS ${w.trickle.errors} ${JSON.stringify(w.trickle.error_kinds)} (the first at ${w.trickle.error_times_s.join(', ')} s), non-200 ${w.trickle.non200}` : ''}; CPU per ${kWindowMs} ms, of one core: those gateways busiest ${pct(w.gateways.busiest)} (at ${w.gateways.busiestAt} s), median ${pct(w.gateways.median)}; the tabs' holders busiest ${pct(w.holders.busiest)} (at ${w.holders.busiestAt} s), median ${pct(w.holders.median)}`);
      const said = Object.entries(w.said).sort((x, y) => y[1] - x[1]).slice(0, 4);
      if (said.length) console.log(`        those gateways meanwhile: ${said.map(([msg, count]) => `${msg} ×${count}`).join('; ')}`);
    }
    console.log(`        CPU from the kill until routable (s, of ${(r.fromKill / 1000).toFixed(2)} s on 2 cores): ${Object.entries(r.cpu).map(([name, s]) => `${name} ${s.toFixed(2)}`).join(', ')}; the relay's own (gateways and router) ${relay.toFixed(2)}`);
  }
}
