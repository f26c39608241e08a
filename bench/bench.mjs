// The relay beside its peers, in one run, under the same load: the relay's full path (agent ->
// gateway B -> router -> gateway A -> tab and back), the single-process Node relay of
// ../shared/bench (5 s verification cache) and the TypeScript SDK server answering directly.
// The same echo tab (../shared/bench/echo-tab.mjs) answers for the relay and the Node relay.
// Prints figures; asserts nothing.
//
//   bench/run.sh                   saturation (wrk -t1 -c32), then latency against offered
//                                  load (open loop), the ratios, CPU per call, and the chart
//   bench/run.sh --seconds 10      length of each saturation run
//   bench/run.sh --concurrency 1   wrk's connections in the saturation runs (32,1: both, in turn):
//                                  1 is an agent that calls one tool at a time
//   bench/run.sh --perf            also perf-record the relay's processes during its run
//   bench/run.sh --syscalls        also count each process's system calls per call (perf stat,
//                                  first round): all, epoll_wait and epoll_ctl (each server
//                                  process's context switches a call are printed in any case)
//   bench/run.sh --allocs          also count each server process's malloc calls per call (a
//                                  uprobe on libc's malloc, perf stat, first round): a count
//                                  this machine's wandering speed does not move (the probe
//                                  slows every process: that run's other figures mean nothing)
//   bench/run.sh --sched default   every mode: the relay's services under the default scheduling
//                                  policy (by default they run with --sched_batch, as compose.yml
//                                  runs them on one host; the peers always under the default)
//   bench/run.sh --only relay,node --no-sweep
//                                  a quick look while working: some systems, no load sweep
//   bench/run.sh --connections 2000,5000,max
//                                  idle tabs, GET and listen streams against one gateway, in
//                                  batches and all at once: memory per connection, and a trickle
//                                  of calls' p50/p99 with the gateway empty and full; then
//                                  what one agent session's end elsewhere costs it, full
//   bench/run.sh --accounts 1000   1,000 accounts calling at once, a tab and a session each,
//                                  beside the Node relay: calls/s, p50/p99, the slowest account
//   bench/run.sh --rebuild 2000,10000
//                                  N tabs announced to a router shard, kill -9 and restart: the
//                                  time until every tab is routable again, memory per tab
//   bench/run.sh --rebuild 10000,50000,100000 --rebuild-via links
//                                  the same, the tabs announced by relay-linkload processes that
//                                  speak the link as four gateways would (past the descriptor
//                                  limit that real tab sockets meet here); meanwhile a trickle
//                                  of calls to another shard through a real gateway that holds
//                                  real tabs of both shards (BENCH_GATEWAY_TABS) and re-announces
//                                  its share; three restarts (BENCH_ROUNDS), each followed by a
//                                  control (the restarted shard's CPU kept as busy by a spinner,
//                                  no kill): the calls due during the rebuild against those due
//                                  during the spinner; the restarted shard and the link tools on
//                                  CPU 1, the trickle's path on CPU 0 (BENCH_PIN=0: unpinned)
//   bench/run.sh --restart 2000,max
//                                  N tabs through nginx on two gateways, kill -9 and restart of
//                                  one: the time until every tab is routable again
//   bench/run.sh --restart max --restart-from all
//                                  the same with every tab on the gateway killed (three gateways;
//                                  the tabs reach it through an nginx port pinned to it, or
//                                  straight with BENCH_FIRST=direct, and come back through
//                                  nginx's round robin to the other two)
//   bench/run.sh --restart max --restart-from all --restart-watch
//                                  and then the tabs' keep-alives for two ping periods: a trickle's
//                                  p50/p99 through a gateway that took tabs in, its busiest CPU
//   bench/run.sh --machine         only how often this machine stops a busy core (also printed
//                                  after the sweep): the floor under any server's tail here
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import os from 'node:os';
import { binDir, repoRoot, startStack } from '../tests/e2e/lib/stack.mjs';
import { startFixedAnswer } from '../tests/e2e/lib/nginx.mjs';
import { callBody, contextSwitches, cpuSeconds, initialize, ms, nodeEnv, openLoop, run, stallText, startEchoTab, startPeer, wrkScript } from './lib.mjs';
import { accounts } from './accounts.mjs';
import { connections } from './connections.mjs';
import { rebuilds } from './rebuild.mjs';
import { restarts } from './restart.mjs';

// The options, and for --help or a mistyped one the usage at the top of this file (its
// comment lines up to the first import), not a stack trace.
function usage() {
  const text = readFileSync(new URL(import.meta.url), 'utf8');
  return text.slice(0, text.indexOf('\nimport ')).split('\n').map((l) => l.replace(/^\/\/ ?/, '')).join('\n');
}
const { values: opts } = (() => {
  try {
    return parseArgs({ options: optionSpec() });
  } catch (error) {
    console.error(`bench: ${error.message}\n\n${usage()}`);
    process.exit(2);
  }
})();
if (opts.help) {
  console.log(usage());
  process.exit(0);
}
// Every mode runs the relay's services as compose.yml runs them on one host, with --sched_batch
// (through its environment twin, which every service started here inherits), so that they do not
// preempt one another at every wake-up (docs/performance.md). The peers (the Node relay, the TS
// SDK server), wrk and the tabs run under the default policy, as their users run them.
// --sched default runs the relay under the default policy too.
if (!['batch', 'default'].includes(opts.sched)) {
  console.error(`bench: --sched ${opts.sched}: give batch or default\n\n${usage()}`);
  process.exit(2);
}
process.env.RELAY_SCHED_BATCH = String(opts.sched === 'batch');
function optionSpec() {
  return {
    help: { type: 'boolean', default: false },
    seconds: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '32,1' },
    connections: { type: 'string' },
    accounts: { type: 'string' },
    rebuild: { type: 'string' },
    'rebuild-via': { type: 'string', default: 'tabs' },
    restart: { type: 'string' },
    'restart-from': { type: 'string', default: 'half' },
    'restart-watch': { type: 'boolean', default: false },
    'load-seconds': { type: 'string', default: '4' },
    rounds: { type: 'string', default: '2' },
    sched: { type: 'string', default: 'batch' },
    perf: { type: 'boolean', default: false },
    syscalls: { type: 'boolean', default: false },
    allocs: { type: 'boolean', default: false },
    only: { type: 'string', default: 'relay,modern,node,ts' },
    'no-sweep': { type: 'boolean', default: false },
    machine: { type: 'boolean', default: false },
    out: { type: 'string', default: join(repoRoot, 'docs', 'perf') },
  };
}
const seconds = Number(opts.seconds);
// One system under test: its URL, session, token, and the processes whose CPU it costs.
async function saturate(system, concurrency, countSyscalls = false, countAllocs = false) {
  const before = system.procs.map(([, pid]) => cpuSeconds(pid));
  const switchesBefore = system.procs.map(([, pid]) => contextSwitches(pid));
  // perf stat over all but the run's last second (the counts are divided by the calls of that
  // window, at the run's rate), one per server process (not the tab).
  const window = seconds - 1;
  const events = [...(countSyscalls ? syscallEvents : []), ...(countAllocs ? [mallocEvent] : [])];
  const counters = events.length ? system.procs.filter(([name]) => name !== 'tab' && name !== 'authsvc').map(([name, pid]) => ({ name, perf: run('perf', ['stat', '-x', ',', '-e', events.join(','), '-p', String(pid), '--', 'sleep', String(window)]) })) : [];
  const { out } = await run('wrk', ['-t1', `-c${concurrency}`, `-d${seconds}s`, '--latency', '-s', system.script ?? wrkScript, system.url], { SID: system.sid, ...(system.token ? { TOKEN: system.token } : {}) });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)[1]);
  const p50 = ms(/\n\s+50%\s+(\S+)/.exec(out)[1]);
  const p99 = ms(/\n\s+99%\s+(\S+)/.exec(out)[1]);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const errors = /Socket errors: (.*)/.exec(out)?.[1] ?? 'none';
  const calls = rps * seconds;
  const cpu = system.procs.map(([name, pid], i) => [name, ((cpuSeconds(pid) - before[i]) * 1e6) / calls]);
  // The servers' own (not the tab's, nor authsvc's, idle once verdicts are kept).
  const switches = system.procs.map(([name, pid], i) => {
    const [voluntary, involuntary] = contextSwitches(pid);
    return [name, (voluntary - switchesBefore[i][0]) / calls, (involuntary - switchesBefore[i][1]) / calls];
  }).filter(([name]) => name !== 'tab' && name !== 'authsvc');
  const syscalls = [];
  const allocs = [];
  for (const { name, perf } of counters) {
    // perf stat -x, writes "count,unit,event,..." lines to stderr.
    const { out: said } = await perf;
    const count = (event) => Number(said.split('\n').find((l) => l.split(',')[2] === event)?.split(',')[0] ?? NaN) / (rps * window);
    if (countSyscalls) {
      const [all, wait, pwait, ctl] = syscallEvents.map(count);
      syscalls.push([name, [all, wait + pwait, ctl]]);
    }
    if (countAllocs) allocs.push([name, count(mallocEvent)]);
  }
  return { name: system.name, rps, p50, p99, non2xx, errors, cpu, syscalls, allocs, switches };
}
// Asio waits with epoll_wait, libuv (Node) with epoll_pwait: the two are one column.
const syscallEvents = ['raw_syscalls:sys_enter', 'syscalls:sys_enter_epoll_wait', 'syscalls:sys_enter_epoll_pwait', 'syscalls:sys_enter_epoll_ctl'];
// A uprobe on the libc every process here links (made once by mallocProbe(), kept by the kernel).
const mallocEvent = 'probe_libc:malloc';
async function mallocProbe() {
  const { out: listed } = await run('perf', ['probe', '-l']);
  if (listed.includes(mallocEvent)) return;
  const { out: ldd } = await run('ldd', [join(binDir, 'relay-gateway')]);
  const libc = /libc\.so\.6 => (\S+)/.exec(ldd)?.[1];
  if (!libc) throw new Error('--allocs: libc.so.6 not found in ldd relay-gateway');
  await run('perf', ['probe', '-x', libc, 'malloc']);
}
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

// How often this machine stops a busy core: with every core spinning, the gaps in which one
// did not run. Any call in flight there waits out the gap, so these bound any server's tail.
async function machine(probeSeconds = 5) {
  const { out } = await run(join(binDir, 'relay-stallprobe'), [`--seconds=${probeSeconds}`]);
  const cores = out.trim().split('\n').map((line) => JSON.parse(line));
  console.log(`\nthis machine with every core busy for ${probeSeconds} s (relay-stallprobe): ${cores.map((c) => `core ${c.cpu} stopped ${c.gaps_2ms}× for ≥ 2 ms and ${c.gaps_1ms}× for ≥ 1 ms, longest ${c.longest_ms.toFixed(1)} ms, ${(c.lost_ms / (probeSeconds * 10)).toFixed(2)} % of the time lost`).join('; ')}`);
}

function chart(series, file) {
  // Latency (p50 and p99, log scale) against offered load, one colour per system.
  const W = 760, H = 420, L = 70, R = 20, T = 40, B = 60;
  const all = series.flatMap((s) => s.points);
  const maxX = Math.max(...all.map((p) => p.offered)) * 1.05;
  const ys = all.flatMap((p) => [p.p50_ms, p.p99_ms]).filter((v) => v > 0);
  const minY = Math.max(0.05, Math.min(...ys) / 1.5), maxY = Math.max(...ys) * 1.5;
  const x = (v) => L + ((W - L - R) * v) / maxX;
  const y = (v) => T + (H - T - B) * (1 - (Math.log10(v) - Math.log10(minY)) / (Math.log10(maxY) - Math.log10(minY)));
  const colours = ['#1f6feb', '#d9480f', '#2f9e44'];
  let svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">\n`;
  svg += `<rect width="${W}" height="${H}" fill="white"/>\n<text x="${W / 2}" y="22" text-anchor="middle" font-size="15">Latency against offered load (tools/call, open loop, ${os.cpus().length} cores)</text>\n`;
  svg += `<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="black"/><line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="black"/>\n`;
  for (let i = 0; i <= 5; i++) {
    const v = (maxX / 5) * i;
    svg += `<text x="${x(v)}" y="${H - B + 18}" text-anchor="middle">${Math.round(v / 1000)}k</text>\n`;
  }
  for (let e = Math.floor(Math.log10(minY)); e <= Math.floor(Math.log10(maxY)); e++) {
    for (const m of [1, 2, 5]) {
      const v = Number((m * 10 ** e).toPrecision(2));
      if (v < minY || v > maxY) continue;
      svg += `<line x1="${L}" y1="${y(v)}" x2="${W - R}" y2="${y(v)}" stroke="#eee"/><text x="${L - 6}" y="${y(v) + 4}" text-anchor="end">${v} ms</text>\n`;
    }
  }
  svg += `<text x="${(L + W - R) / 2}" y="${H - 18}" text-anchor="middle">offered load (calls/s)</text>\n`;
  series.forEach((s, i) => {
    for (const [key, dash] of [['p50_ms', ''], ['p99_ms', ' stroke-dasharray="6 4"']]) {
      const pts = s.points.filter((p) => p[key] > 0).map((p) => `${x(p.offered).toFixed(1)},${y(p[key]).toFixed(1)}`).join(' ');
      svg += `<polyline points="${pts}" fill="none" stroke="${colours[i]}" stroke-width="2"${dash}/>\n`;
      for (const p of s.points) svg += `<circle cx="${x(p.offered).toFixed(1)}" cy="${y(p[key]).toFixed(1)}" r="3" fill="${colours[i]}"/>\n`;
    }
    svg += `<text x="${L + 12}" y="${T + 16 + 16 * i}" fill="${colours[i]}">${s.name}: p50 solid, p99 dashed</text>\n`;
  });
  svg += '</svg>\n';
  mkdirSync(resolve(file, '..'), { recursive: true });
  writeFileSync(file, svg);
}

async function compare() {
  console.log(`scheduling: the relay's services ${opts.sched === 'batch' ? 'under SCHED_BATCH (--sched_batch, as compose.yml runs them)' : 'under the default policy (--sched default)'}; the peers, wrk and the tabs under the default policy\n`);
  const stack = await startStack({ gateways: 2, secondGatewayThreads: 1, users: ['bench'], gatewayArgs: (process.env.BENCH_GATEWAY_ARGS ?? '').split(' ').filter(Boolean), authsvcArgs: (process.env.BENCH_AUTHSVC_ARGS ?? '').split(' ').filter(Boolean) });
  const extra = [];
  try {
    const token = await stack.mintToken('bench');
    const relayTab = await startEchoTab('relay echo tab', stack.gateways[0].wsUrl, await stack.ticket('bench'));
    extra.push(relayTab);
    const nodeRelay = await startPeer('node relay', 'node-relay.mjs', ['0', stack.hostapi.base, stack.relayKeyFile, '5000']);
    extra.push(nodeRelay);
    const nodeTab = await startEchoTab('node relay echo tab', `ws://127.0.0.1:${nodeRelay.port}/`, await stack.ticket('bench'));
    extra.push(nodeTab);
    const direct = await startPeer('ts sdk server', 'ts-direct-server.mjs', ['0']);
    extra.push(direct);

    const pidOf = (name) => stack.procs.find((p) => p.name === name).child.pid;
    const allSystems = [
      { key: 'relay', name: 'relay (full path)', url: stack.gateways[1].url, token, procs: [['gateway B', pidOf('gateway2')], ['router', pidOf('router0')], ['gateway A', pidOf('gateway1')], ['authsvc', pidOf('authsvc')], ['tab', relayTab.child.pid]] },
      // The same path and load as 2026-07-28 agents send it: stateless, no session.
      { key: 'modern', name: 'relay, 2026-07-28', url: stack.gateways[1].url, token, stateless: true, script: join(repoRoot, 'bench', 'modern-call.lua'), procs: [['gateway B', pidOf('gateway2')], ['router', pidOf('router0')], ['gateway A', pidOf('gateway1')], ['authsvc', pidOf('authsvc')], ['tab', relayTab.child.pid]] },
      { key: 'node', name: 'Node relay (5 s cache)', url: `http://127.0.0.1:${nodeRelay.port}/mcp`, token, procs: [['node relay', nodeRelay.child.pid], ['tab', nodeTab.child.pid]] },
      { key: 'ts', name: 'TS SDK server (direct)', url: `http://127.0.0.1:${direct.port}/mcp`, token: null, procs: [['ts server', direct.child.pid]] },
    ];
    const wanted = opts.only.split(',');
    const systems = allSystems.filter((s) => wanted.includes(s.key));
    for (const s of systems) s.sid = s.stateless ? '' : await initialize(s.url, s.token);
    // Warm up every path (verification caches, JIT) before measuring.
    for (const s of systems.filter((x) => !x.stateless)) await openLoop(s, 500, 1);

    const pad = (t, n) => String(t).padEnd(n);
    // The relay's own processes (not authsvc, idle once verdicts are kept, nor the tab).
    const relayCpu = (r) => r.cpu.filter(([n]) => /^(gateway|router)/.test(n)).reduce((a, [, us]) => a + us, 0);
    const nodeCpu = (r) => r.cpu.filter(([n]) => n === 'node relay').reduce((a, [, us]) => a + us, 0);
    let first = null;
    for (const concurrency of opts.concurrency.split(',').map(Number)) {
      console.log(`benchmark: wrk -t1 -c${concurrency} -d${seconds}s, ${wrkScript.replace(repoRoot + '/', '')}, one session each, ${os.cpus().length} cores shared by everything (wrk and the tabs included); best of ${opts.rounds} alternating rounds\n`);
      // Rounds alternate the systems, so that a slow minute of this shared machine hits all
      // of them; each system's best round is reported.
      const results = systems.map(() => null);
      const rounds = Array.from({ length: Number(opts.rounds) }, () => ({}));
      const syscallsOf = {};
      const allocsOf = {};
      const switchesOf = {};
      if (opts.allocs) await mallocProbe();
      for (let round = 0; round < Number(opts.rounds); round++) {
        for (const [i, s] of systems.entries()) {
          let perf = null;
          if (opts.perf && i === 0 && round === 0 && !first) {
            mkdirSync(opts.out, { recursive: true });
            perf = spawn('perf', ['record', '-F', '999', '-g', '-o', join(opts.out, 'relay.perf.data'), '-p', s.procs.slice(0, 3).map(([, pid]) => pid).join(','), '--', 'sleep', String(seconds - 1)], { stdio: 'ignore' });
          }
          const r = await saturate(s, concurrency, opts.syscalls && round === 0, opts.allocs && round === 0);
          if (perf) await new Promise((done) => perf.on('exit', done));
          rounds[round][s.key] = r;
          if (r.syscalls.length) syscallsOf[s.key] = r.syscalls;
          if (r.allocs.length) allocsOf[s.key] = r.allocs;
          if (round === 0) switchesOf[s.key] = r.switches;
          if (results[i] === null || r.rps > results[i].rps) results[i] = r;
        }
      }
      const byKey = Object.fromEntries(systems.map((s, i) => [s.key, results[i]]));
      first = first ?? byKey;
      const { relay, node: nodeR, ts } = byKey;
      const metric = (text, name) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
      const routerMetrics = await (await fetch(stack.routers[0].metricsUrl)).text();
      const batches = metric(routerMetrics, 'relay_router_link_batches_received_total');
      const events = metric(routerMetrics, 'relay_router_link_events_received_total');
      console.log(`${pad('system', 26)}${pad('calls/s', 10)}${pad('p50 ms', 9)}${pad('p99 ms', 9)}CPU per call (µs)`);
      for (const r of results) {
        const cpu = r.cpu.map(([n, us]) => `${n} ${us.toFixed(1)}`).join(', ');
        const total = r.cpu.reduce((a, [, us]) => a + us, 0);
        console.log(`${pad(r.name, 26)}${pad(Math.round(r.rps), 10)}${pad(r.p50.toFixed(2), 9)}${pad(r.p99.toFixed(2), 9)}${cpu} (total ${total.toFixed(1)})${r.non2xx ? `  NON-2xx: ${r.non2xx}` : ''}${r.errors !== 'none' ? `  socket errors: ${r.errors}` : ''}`);
      }
      for (const [key, counted] of Object.entries(syscallsOf)) {
        const line = counted.map(([name, [all, waits, ctls]]) => `${name} ${all.toFixed(1)} (epoll_wait ${waits.toFixed(1)}, epoll_ctl ${ctls.toFixed(1)})`).join(', ');
        const total = counted.reduce((a, [, [all]]) => a + all, 0);
        console.log(`system calls per call, ${key} (first round): ${line}; all ${total.toFixed(1)}`);
      }
      for (const [key, counted] of Object.entries(allocsOf)) {
        const line = counted.map(([name, n]) => `${name} ${n.toFixed(1)}`).join(', ');
        console.log(`malloc calls per call, ${key} (first round): ${line}; all ${counted.reduce((a, [, n]) => a + n, 0).toFixed(1)}`);
      }
      for (const [key, counted] of Object.entries(switchesOf)) {
        const line = counted.map(([name, voluntary, involuntary]) => `${name} ${voluntary.toFixed(2)} + ${involuntary.toFixed(2)}`).join(', ');
        const total = counted.reduce((a, [, v, i]) => a + v + i, 0);
        console.log(`context switches per call, ${key} (first round; slept + put off its core): ${line}; all ${total.toFixed(2)}`);
      }
      console.log(`\nlinks into the router: ${(events / batches).toFixed(1)} events per batch on average (whole run so far)`);
      console.log(`\nratio relay / Node relay: ${(relay?.rps / nodeR?.rps).toFixed(2)}x   relay / TS SDK server: ${(relay?.rps / ts?.rps).toFixed(1)}x${byKey.modern ? `   relay 2026-07-28 / Node relay: ${(byKey.modern.rps / nodeR?.rps).toFixed(2)}x` : ''}`);
      if (relay && nodeR) {
        // Each round's own ratio too: how far this machine's noise moves it.
        const perRound = rounds.map((r) => (r.relay.rps / r.node.rps).toFixed(2));
        console.log(`relay / Node relay in each round: ${perRound.join(', ')} (calls/s ${rounds.map((r) => `${Math.round(r.relay.rps)}/${Math.round(r.node.rps)}`).join(', ')})`);
        // Issue 29's bars: CPU per call at half the Node process's under load, at most its own
        // for one call at a time, and there a p50 within 1.15x. Judged on the median of the
        // rounds' own ratios (each round's relay against the Node relay of the same round): the
        // best rounds by calls/s need not be the same minute of the machine, and this machine's
        // minutes move the Node process's CPU per call by half (63-98 µs at -c32 in one hour).
        const cpuRatios = rounds.map((r) => relayCpu(r.relay) / nodeCpu(r.node));
        const p50Ratios = rounds.map((r) => r.relay.p50 / r.node.p50);
        const cpuBar = concurrency === 1 ? 1 : 0.5;
        const cpuRatio = median(cpuRatios);
        const p50Ratio = median(p50Ratios);
        const verdict = (v, bar) => `[bar ≤ ${bar}: ${v <= bar ? 'met' : 'NOT MET'}]`;
        console.log(`CPU per call, gateways and router / Node relay process, in each round: ${rounds.map((r, i) => `${relayCpu(r.relay).toFixed(1)} / ${nodeCpu(r.node).toFixed(1)} µs = ${cpuRatios[i].toFixed(2)}x`).join(', ')}; median ${cpuRatio.toFixed(2)}x ${verdict(cpuRatio, cpuBar)}`);
        console.log(`p50 relay / Node relay, in each round: ${p50Ratios.map((v) => `${v.toFixed(2)}x`).join(', ')}; median ${p50Ratio.toFixed(2)}x${concurrency === 1 ? ` ${verdict(p50Ratio, 1.15)}` : ''}`);
      }
      console.log('');
    }
    const { relay, node: nodeR } = first;
    if (opts['no-sweep'] || !relay || !nodeR) return;

    // Latency against offered load, open loop, for the relay and the Node relay.
    const loadSeconds = Number(opts['load-seconds']);
    const fractions = [0.1, 0.25, 0.5, 0.75, 0.9];
    const series = [];
    for (const [s, r] of [[systems.find((x) => x.key === 'relay'), relay], [systems.find((x) => x.key === 'node'), nodeR]]) {
      const points = [];
      for (const f of fractions) {
        // CPU per call at this rate too: below saturation each call pays its own wake-ups.
        const before = s.procs.map(([, pid]) => cpuSeconds(pid));
        const p = await openLoop(s, r.rps * f, loadSeconds);
        const cpuUs = s.procs.reduce((sum, [, pid], i) => sum + (cpuSeconds(pid) - before[i]), 0) * 1e6 / Math.max(1, p.achieved * loadSeconds);
        points.push(p);
        console.log(`${pad(s.name, 26)} offered ${pad(Math.round(p.offered), 7)} (${Math.round(f * 100)}% of its saturation): achieved ${pad(p.achieved, 7)} p50 ${p.p50_ms.toFixed(2)} ms, p99 ${p.p99_ms.toFixed(2)} ms, p99.9 ${p.p999_ms.toFixed(2)} ms, CPU per call ${cpuUs.toFixed(0)} µs, ${stallText(p)}${p.errors || p.non200 ? `, errors ${p.errors}, non-200 ${p.non200}` : ''}`);
        // A point that failed: say which process stopped, with its last words.
        if (p.errors) for (const proc of [...stack.procs, ...extra].filter((x) => x.exited)) console.log(`  ${proc.name} exited (${proc.exitCode ?? proc.exitSignal}): ${proc.tail()}`);
      }
      series.push({ name: s.name, points });
    }
    console.log('');
    for (const s of series) {
      const half = s.points[fractions.indexOf(0.5)];
      console.log(`${s.name} at half its saturation (${Math.round(half.offered)} calls/s): p50 ${half.p50_ms.toFixed(2)} ms, p99 ${half.p99_ms.toFixed(2)} ms (${stallText(half)})`);
    }
    // The floor: nginx answering a fixed 200 at the relay's half-saturation rate, with the same
    // generator. The relay's p99 there against this one's says what the relay adds to what the
    // machine's stops and loopback HTTP cost anyway.
    const floorProc = await startFixedAnswer(stack.dir);
    extra.push(floorProc);
    const relayHalf = series[0].points[fractions.indexOf(0.5)];
    const floor = await openLoop({ url: floorProc.url, sid: '', token: null }, relayHalf.offered, loadSeconds);
    const floorRatio = relayHalf.p99_ms / floor.p99_ms;
    console.log(`floor: nginx answering a fixed 200 at ${Math.round(floor.offered)} calls/s: p50 ${floor.p50_ms.toFixed(2)} ms, p99 ${floor.p99_ms.toFixed(2)} ms (${stallText(floor)}); relay's p99 there / floor's: ${floorRatio.toFixed(2)}x [bar ≤ 1.5: ${floorRatio <= 1.5 ? 'met' : 'NOT MET'}]`);
    series.push({ name: 'nginx fixed 200 (floor)', points: [floor] });
    await machine();
    const svg = join(opts.out, 'latency-vs-load.svg');
    chart(series, svg);
    console.log(`chart: ${svg.replace(repoRoot + '/', '')}`);
    if (opts.perf) console.log(`perf data: ${join(opts.out, 'relay.perf.data').replace(repoRoot + '/', '')} (perf report -i …)`);
  } finally {
    await Promise.all(extra.map((p) => p.stop()));
    await stack.stop();
  }
}

if (opts.accounts) {
  await accounts(Number(opts.accounts), seconds, Number(opts.rounds));
} else if (opts.rebuild) {
  await rebuilds(opts.rebuild.split(','), opts['rebuild-via']);
} else if (opts.connections) {
  await connections(opts.connections.split(','));
} else if (opts.restart) {
  await restarts(opts.restart.split(','), opts['restart-from'], opts['restart-watch']);
} else if (opts.machine) {
  await machine();
} else {
  await compare();
}
