// bench.mjs --connections: idle connections against one gateway, with a trickle of calls
// through it. A third of them are tab WebSockets, a third 2025-11-25 GET streams, a third
// 2026-07-28 listen streams, each of its own account (a second tab of one account would
// displace the first). They arrive in batches of 100, or all at once as a restarted gateway's
// tabs do. Prints the gateway's resident memory per connection, its high-water mark during the
// arrival, and the trickle's p50/p99 with the gateway empty and full, and the p99 of the same
// trickle through a second gateway of the stack, empty (the control), with the bars beside them.
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import { repoRoot, startProcess, startStack, waitUntil } from '../tests/e2e/lib/stack.mjs';
import { initialize, makeAccounts, node, nodeEnv, openLoop, rssKiB, startEchoTab, stallText, threadsCpuMs } from './lib.mjs';

const kTrickleRate = 200;  // calls/s through the gateway while it fills
const kTrickleSeconds = 5;
// Trickles through the full gateway and through the control, in turns; the median p99 of each.
const kTurns = Number(process.env.BENCH_TURNS ?? 5);
const kBarKiB = 3;
const kBarP99 = 1.2;
// BENCH_KINDS=tab (or get, listen, or a comma-separated few) fills the gateway with those kinds
// only, to tell what each costs.
const kinds = (process.env.BENCH_KINDS ?? 'tab,get,listen').split(',');

// The most connections one gateway may hold here: its descriptor limit, less what it needs
// for itself (links, listeners, the trickle).
export const openFileLimit = () => Number(/Max open files\s+\d+\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? 1024);
export const mostConnections = () => Math.floor((openFileLimit() - 1000) / 3) * 3;

// Waits for a bench/hold.mjs process to hold its connections: [line, held, ms, attempts, given
// up]. Fails if it gave any up, unless allowed (the line says why attempts were refused).
export async function heldBy(holder, allowGivenUp = false) {
  const m = await holder.waitForLine((l) => /^held (\d+) in (\d+) ms, (\d+) attempts, (\d+) given up/.exec(l), `${holder.name} to hold its connections`, 1200000);
  if (Number(m[4]) > 0 && !allowGivenUp) throw new Error(`${holder.name}: ${m[0]}`);
  return m;
}

async function gatewayCounts(gw) {
  const text = await (await fetch(`http://127.0.0.1:${gw.port}/metrics`)).text();
  const kind = (k) => Number(new RegExp(`^relay_gateway_connections_by_kind\\{kind="${k}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  const counter = (name) => Number(new RegExp(`^relay_gateway_${name}_total (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  return {
    tabs: kind('tab'), streams: kind('agent_stream'),
    // How the gateway turned connections away during the arrival, when it did.
    turnedAway: { 'answered 503 over --max_connections': counter('connections_refused'), 'closed unanswered, request not in within --header_timeout': counter('request_timeouts'), 'failed accepts (out of descriptors)': counter('accept_errors') },
  };
}

// Of several trickles' figures, the one with the median p99.
const medianByP99 = (runs) => [...runs].sort((a, b) => a.p99_ms - b.p99_ms)[Math.floor(runs.length / 2)];

// One gateway, filled with total idle connections arriving in batches (batch 100) or at once
// (batch 0). Returns the figures.
export async function fill(total, batch) {
  const per = Math.floor(total / 3);
  // The second gateway is the control: the same binary and options, empty, on the same machine
  // at the same moment, with a trickle of its own (docs/decisions.md, "The trickle's control").
  const stack = await startStack({ gateways: 2, users: ['bench', 'control'], secondGatewayThreads: 1 });
  const holders = [];
  try {
    const [gw, controlGw] = stack.gateways;
    const pid = gw.child.pid;
    const trickleTo = async (g, user) => {
      const token = await stack.mintToken(user);
      holders.push(await startEchoTab(`${user} echo tab`, g.wsUrl, await stack.ticket(user)));
      return { url: g.url, token, sid: await initialize(g.url, token) };
    };
    const system = await trickleTo(gw, 'bench');
    const control = await trickleTo(controlGw, 'control');
    const echoTabs = holders.length;
    const accounts = makeAccounts(stack, per, 'c');
    await openLoop(system, kTrickleRate, 1);  // warm the paths
    await openLoop(control, kTrickleRate, 1);
    const empty = await openLoop(system, kTrickleRate, kTrickleSeconds);
    const rssEmpty = rssKiB(pid);

    // The arrival, with the gateway's resident memory sampled for its high-water mark.
    let peak = rssEmpty;
    const sampler = setInterval(() => { try { peak = Math.max(peak, rssKiB(pid)); } catch {} }, 50);  // gone: `died` says
    // The gateway must live through the arrival: if it does not, say how it ended.
    let arriving = true;
    const died = gw.exitPromise.then(() => { if (arriving) throw new Error(`the gateway exited (${gw.exitCode ?? gw.exitSignal}) during the arrival:\n${gw.tail()}`); });
    const started = Date.now();
    for (const kind of kinds) {
      const credentials = accounts.map((a) => (kind === 'tab' ? a.ticket : a.token)).join('\n') + '\n';
      holders.push(startProcess(`hold ${kind}`, node, [join(repoRoot, 'bench', 'hold.mjs'), kind, gw.url, String(batch)], { env: nodeEnv, stdin: credentials }));
    }
    // All at once, a connection may be refused 20 times (or a tab's ticket outlive its 60 s
    // while the host API redeems the others; the page would fetch a new one): counted as given
    // up, with the refusals printed.
    const held = await Promise.race([Promise.all(holders.slice(echoTabs).map((h) => heldBy(h, batch === 0))), died]);
    arriving = false;
    // Once they hold their connections, the holders stand for browsers on other machines: they
    // get what the cores leave, and a keep-alive that wakes one does not preempt the trickle's
    // processes (docs/decisions.md, "The trickle's control"). Not while they connect: a starved
    // holder wrote its requests seconds after the gateway accepted their connections, later
    // than a browser on its own machine would, and past --header_timeout ("The connection cap
    // follows the descriptor limit").
    for (const h of holders.slice(echoTabs)) setPriority(h.child.pid, 19);
    const arrivalMs = Date.now() - started;
    const [tabs, gets, listens] = ['tab', 'get', 'listen'].map((k) => (kinds.includes(k) ? Number(held[kinds.indexOf(k)][1]) : 0));
    let turnedAway = {};
    await waitUntil(async () => {
      const c = await gatewayCounts(gw);
      turnedAway = c.turnedAway;
      return c.tabs === tabs + 1 && c.streams === gets + listens;
    }, 'the gateway to count every connection', 60000);
    clearInterval(sampler);
    peak = Math.max(peak, rssKiB(pid));
    // The full gateway and the control in turns, so that both meet the machine as it is.
    const fulls = [];
    const controls = [];
    for (let i = 0; i < kTurns; i++) {
      fulls.push(await openLoop(system, kTrickleRate, kTrickleSeconds));
      controls.push(await openLoop(control, kTrickleRate, kTrickleSeconds));
    }
    const rssFull = rssKiB(pid);
    const total = tabs + gets + listens;
    const ends = await sessionEnds(pid, controlGw.url, control.token);
    return {
      total, batch, arrivalMs, attempts: held.reduce((a, m) => a + Number(m[3]), 0),
      givenUp: held.reduce((a, m) => a + Number(m[4]), 0),
      rssEmpty, rssFull, peak, empty, full: medianByP99(fulls), control: medianByP99(controls),
      turns: fulls.map((f, i) => `${f.p99_ms.toFixed(1)}/${controls[i].p99_ms.toFixed(1)}`).join(', '),
      perConnection: (rssFull - rssEmpty) / total,
      ends,
      // Why attempts failed, by kind (the holders' refusals), when any did.
      refusals: held.map((m, i) => [kinds[i], /\(refusals: (.*)\)$/.exec(m.input)?.[1]]).filter(([, r]) => r).map(([k, r]) => `${k}: ${r}`).join('; '),
      // How late each holder's event loop ran while it connected (bench/hold.mjs).
      lateMs: held.map((m, i) => `${kinds[i]} ${/event loop at most (\d+) ms late/.exec(m.input)?.[1]} ms`).join(', '),
      turnedAway: Object.entries(turnedAway).filter(([, n]) => n > 0).map(([what, n]) => `${n} ${what}`).join('; '),
    };
  } finally {
    await Promise.all(holders.map((h) => h.stop()));
    await stack.stop();
  }
}

// Every gateway hears of every agent session's end (the router tells each: any may hold the
// session's streams). What one costs the full gateway, its streams open: kEnds sessions opened
// and ended through the control gateway, the full one's CPU from the first end until a second
// after the last (its work for them comes after the answers), against its CPU over as long
// with nothing to do (its keep-alives).
const kEnds = 300;
async function sessionEnds(pid, url, token) {
  const sids = [];
  for (let i = 0; i < kEnds; i++) sids.push(await initialize(url, token));
  const headers = (sid) => ({ authorization: `Bearer ${token}`, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' });
  const settle = () => new Promise((done) => setTimeout(done, 1000));
  let cpu = threadsCpuMs(pid);
  const started = Date.now();
  for (const sid of sids) {
    const res = await fetch(url, { method: 'DELETE', headers: headers(sid) });
    await res.text();
    if (res.status !== 200 && res.status !== 204) throw new Error(`DELETE of a session answered ${res.status}`);
  }
  await settle();
  const span = Date.now() - started;
  const endsMs = threadsCpuMs(pid) - cpu;
  cpu = threadsCpuMs(pid);
  await new Promise((done) => setTimeout(done, span));  // as long, idle
  const idleMs = threadsCpuMs(pid) - cpu;
  return { perEndUs: Math.max(0, endsMs - idleMs) * 1000 / kEnds, endsMs, idleMs, span };
}

// The gateway's resident memory against its connections, both ways of arriving, as text: one
// bar per run, to scale, with the 3 KiB-per-connection bar's line for the same count beside it.
export function memoryChart(rows) {
  const most = Math.max(...rows.map((r) => Math.max(r.rssFull, r.rssEmpty + kBarKiB * r.total)));
  const width = 50;
  const lines = ['gateway memory against idle connections (MiB; # batches of 100, = all at once, | the 3 KiB bar)'];
  for (const r of rows) {
    const bar = Math.round((r.rssFull / most) * width);
    const limit = Math.round(((r.rssEmpty + kBarKiB * r.total) / most) * width);
    const cells = Array.from({ length: width + 1 }, (_, i) => (i === limit ? '|' : i < bar ? (r.batch ? '#' : '=') : ' ')).join('');
    lines.push(`${String(r.total).padStart(6)} ${r.batch ? 'batches' : 'at once'} ${cells} ${(r.rssFull / 1024).toFixed(1)}`);
  }
  return lines.join('\n');
}

export async function connections(levels) {
  const most = mostConnections();
  console.log(`connections per gateway: a third tabs, a third GET streams, a third listen streams, each of its own account; a trickle of ${kTrickleRate} calls/s through the same gateway to a tab on it (${kTrickleSeconds} s empty; full, ${kTurns} times in turn with the same trickle through a second, empty gateway of the same stack: the control, which meets the same machine). A process here may hold ${openFileLimit()} descriptors, so one gateway is filled to ${most} at most.\n`);
  const rows = [];
  for (const level of levels.map((l) => (l === 'max' ? most : Math.min(most, Number(l))))) {
    for (const batch of [100, 0]) {
      const r = await fill(level, batch);
      if (r.control.errors || r.control.non200) throw new Error(`the control's trickle failed: ${JSON.stringify(r.control)}`);
      rows.push(r);
      const how = batch ? 'in batches of 100' : 'all at once';
      console.log(`${String(r.total).padStart(6)} connections ${how.padEnd(17)} arrived in ${(r.arrivalMs / 1000).toFixed(1)} s (${r.attempts} attempts${r.givenUp ? `, ${r.givenUp} given up after 20 attempts` : ''}): gateway ${(r.rssEmpty / 1024).toFixed(1)} → ${(r.rssFull / 1024).toFixed(1)} MiB (high-water ${(r.peak / 1024).toFixed(1)} MiB), ${r.perConnection.toFixed(2)} KiB per connection [bar ≤ ${kBarKiB}: ${r.perConnection <= kBarKiB ? 'met' : 'NOT MET'}]; trickle p50 ${r.empty.p50_ms.toFixed(2)} → ${r.full.p50_ms.toFixed(2)} ms, p99 ${r.empty.p99_ms.toFixed(2)} → ${r.full.p99_ms.toFixed(2)} ms (${(r.full.p99_ms / r.empty.p99_ms).toFixed(2)}× the gateway before it filled; full: ${stallText(r.full)}); the empty control gateway meanwhile p99 ${r.control.p99_ms.toFixed(2)} ms: full ${(r.full.p99_ms / r.control.p99_ms).toFixed(2)}× the control (medians of ${kTurns} turns, full/control ms: ${r.turns}) [bar ≤ ${kBarP99}: ${r.full.p99_ms / r.control.p99_ms <= kBarP99 ? 'met' : 'NOT MET'}]${r.full.errors || r.full.non200 ? `, ERRORS ${r.full.errors}, non-200 ${r.full.non200}` : ''}\n        ${kEnds} agent sessions ended elsewhere: ${r.ends.perEndUs.toFixed(1)} µs of the full gateway's CPU each (${r.ends.endsMs.toFixed(0)} ms over the ends and a second, ${r.ends.idleMs.toFixed(0)} ms over as long idle: ${(r.ends.span / 1000).toFixed(1)} s)${r.refusals ? `\n        refused attempts, ${r.refusals}` : ''}${r.turnedAway ? `\n        the gateway: ${r.turnedAway}; the holders' event loops at most late by ${r.lateMs}` : ''}`);
    }
  }
  console.log(`\n${memoryChart(rows)}`);
  const worst = Math.max(...rows.map((r) => r.perConnection));
  console.log(`\n100,000 connections at the worst figure measured (${worst.toFixed(2)} KiB each): ${(worst * 100000 / 1024).toFixed(0)} MiB of gateway memory beyond its base; at ${most} connections per gateway (this machine's descriptor limit) that is ${Math.ceil(100000 / most)} gateways.`);
  return rows;
}
