// The fault run's checker: from the recorded events (the drivers' JSON lines and the
// runner's), the figures of the run and every violation of the five invariants. A pure
// function of its input, so it is unit-tested on made-up lines (checker.test.mjs) and a
// failed run's file can be checked again: `node tests/faults/checker.mjs EVENTS.jsonl`.
//
// The invariants (0 violations allowed):
// 1. No answer from another account's tab: every result names the call's account and nonce,
//    and every call a tab received was sent by an agent of the tab's account.
// 2. Every call ended exactly once (the tab received it at most once too), with the tab's
//    answer or the relay's clear error (a tool result with isError and a text, a JSON-RPC
//    error, an HTTP error the SDK surfaced), within its deadline:
//      call_timeout + liveness (5 s) + agent-side slack (2 s: the drivers' event loops, on
//      a 2-core machine running everything) + the time the agent's own gateway was stopped
//      (SIGSTOP) during the call (a stopped process answers nobody).
//    A transport error (no HTTP answer) is the relay's only possible answer when the
//    agent's own gateway was killed: accepted when that gateway was down between 2 s before
//    the call was sent (a pooled connection to the dead process) and its end; else a
//    violation. The SDK's own timeout (agent_timeout) is always a violation: no answer.
// 3. Every call that ended with an error after its tab received it was cancelled in that
//    tab (notifications/cancelled for the relay's id of the call on that connection), or that
//    tab's WebSocket closed while the call ran (by its end + the liveness bound), or the tab
//    answered it before a cancel could have reached it (before the agent's error, or within
//    250 ms of it plus the delay injected on the paths, or before a fault holding the path
//    ended: see cancelCouldArriveBy). Then nothing was left running in the tab (counted).
// 4. The newest tab holds each account: no tab is closed with 4409 unless another connection
//    of its account may be newer, that is, may have had its ticket redeemed later (each
//    account has one tab at a time, except when a takeover opens a newer one on another
//    gateway), and after the heal each account's probe call is answered by its latest tab.
//    A ticket is redeemed between the connection's hello and its answer, so the other one
//    qualifies when it sent its hello before the close and had not yet been answered (or
//    failed) when the displaced tab sent its own hello. Its answer may come after the close:
//    a stopped gateway answers late, and two drivers' lines are in no causal order. A tab
//    that came back with its resume credential keeps the place of the ticket connection it
//    descends from: its hello is that connection's, and it never qualifies as newer.
// 5. The control group (agent, tab and shard on the hosts no fault touched) saw no error.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const DEFAULTS = { callTimeoutMs: 10000, livenessMs: 5000, slackMs: 2000, transportGraceMs: 2000, cancelGraceMs: 250 };

// The relay's error texts (gateway/core/mcp_forward.cc), by kind.
const REASONS = [
  [/disconnected before it answered/, 'tab_gone'],
  [/replaced by another tab/, 'displaced'],
  [/did not answer in time/, 'timeout'],
  [/request was cancelled/, 'cancelled'],
  [/relay is restarting/, 'router_unavailable'],
  [/shut down before the editor answered/, 'shutting_down'],
  [/Too many requests/, 'too_many'],
  [/No editor is connected/, 'no_tab'],
];
export function reasonOf(done) {
  if (done.outcome === 'http_error') return `http_${done.code}`;
  if (done.outcome === 'transport_error') return 'transport';
  if (done.outcome === 'agent_timeout') return 'agent_timeout';
  for (const [re, reason] of REASONS) if (re.test(done.text ?? '')) return reason;
  return done.outcome === 'rpc_error' ? `rpc_${done.code}` : 'other';
}

// A tab is (account, gateway host, connection number on that host's driver).
const tabKey = (e) => `${e.account}|${e.gw}|${e.conn}`;
const key = (e, id = e.id) => `${tabKey(e)}|${JSON.stringify(id)}`;

// Intervals [from, to] during which each host was stopped (hang) or down (kill).
function hostIntervals(faults, kind) {
  const out = {};
  for (const f of faults) {
    if (f.kind !== kind || !f.host) continue;
    (out[f.host] ??= []).push([f.t, f.endT ?? Infinity]);
  }
  return out;
}
const overlap = (intervals, from, to) => (intervals ?? []).reduce((sum, [a, b]) => sum + Math.max(0, Math.min(b, to) - Math.max(a, from)), 0);
const meets = (intervals, from, to) => (intervals ?? []).some(([a, b]) => a <= to && from <= b);

// By when a cancel sent as the agent got its error could have reached the tab's gateway:
// at once (cancelGraceMs), plus the latency injected on the agent's and the tab's paths to
// the shard, or after a fault that holds one of them (a stall, a cut, a partition, a hang)
// ends. A tab that answered by then finished the call itself: nothing was left to cancel.
function cancelCouldArriveBy(doneT, agentGw, tabGw, shard, faults, cfg) {
  let until = doneT;
  let delay = 0;
  for (const f of faults) {
    if (!(f.t <= doneT && doneT <= (f.endT ?? Infinity))) continue;
    const onPath = f.router === shard && (f.gw === agentGw || f.gw === tabGw);
    const onHost = [agentGw, tabGw, shard].includes(f.host);
    if (f.kind === 'latency' && onPath) delay += f.delayMs ?? 0;
    else if (onPath || onHost) until = Math.max(until, f.endT ?? Infinity);
  }
  return until + delay + cfg.cancelGraceMs;
}

// Whether a fault could make this account's calls fail: it touches the account's agent or
// tab gateway, or its shard (a path fault: the path between one of its gateways and its shard).
function touches(fault, placement) {
  if (!placement) return false;
  const { agentGw, tabGw, shard } = placement;
  if (fault.host) return [agentGw, tabGw, shard].includes(fault.host);
  return fault.router === shard && (fault.gw === agentGw || fault.gw === tabGw);
}

export function check(events, options = {}) {
  const cfg = { ...DEFAULTS, ...options };
  const placement = cfg.accounts ?? {};
  const violations = { 1: [], 2: [], 3: [], 4: [], 5: [] };
  const violate = (n, detail) => violations[n].push(detail);

  const calls = new Map();       // nonce -> { call, dones, tabCalls }
  const answers = new Map();     // key (tab and relay id) -> first tab_answer
  const cancels = new Map();     // key (tab and relay id) -> first tab_cancel
  const closes = new Map();      // tabKey -> tab_close
  const ups = new Map();         // account -> tab_up events
  const hellos = new Map();      // account -> [{ key, t, settled }]: a connection's hello and
                                 // its answer or failure (redemption happened in between)
  const faults = new Map();      // id -> fault (with endT)
  let heal = null;
  const orphans = [];
  const sorted = [...events].sort((a, b) => a.t - b.t);
  const settle = (e, t = e.t) => {
    const hello = (hellos.get(e.account) ?? []).findLast((h) => h.key === tabKey(e));
    if (hello && hello.settled === Infinity) hello.settled = t;
  };

  for (const e of sorted) {
    switch (e.ev) {
      case 'call':
        calls.set(e.nonce, { call: e, dones: [], tabCalls: [] });
        break;
      case 'tab_answer':
        if (!answers.has(key(e))) answers.set(key(e), e);
        break;
      case 'tab_cancel':
        if (!cancels.has(key(e))) cancels.set(key(e), e);
        break;
      case 'tab_close':
        closes.set(tabKey(e), e);
        break;
      case 'tab_up':
        (ups.get(e.account) ?? ups.set(e.account, []).get(e.account)).push(e);
        settle(e);
        break;
      case 'tab_hello':
        (hellos.get(e.account) ?? hellos.set(e.account, []).get(e.account)).push({ key: tabKey(e), t: e.t, settled: Infinity, resumed: Boolean(e.resumed), place: tabKey({ ...e, conn: e.place ?? e.conn }) });
        break;
      case 'tab_fail':
        // A refused ticket was never redeemed: that connection has no place in the order.
        settle(e, /hello refused/.test(e.error ?? '') ? -Infinity : e.t);
        break;
      case 'fault':
        faults.set(e.id, { ...e });
        break;
      case 'fault_end':
        if (faults.has(e.id)) faults.get(e.id).endT = e.t;
        break;
      case 'heal':
        heal = e.t;
        break;
    }
  }
  // Second pass: what refers to calls (a driver's line may be written before the call's).
  for (const e of sorted) {
    if (e.ev === 'done') {
      const c = calls.get(e.nonce);
      if (c) c.dones.push(e);
      else orphans.push(e);
    } else if (e.ev === 'tab_call') {
      const c = calls.get(e.nonce);
      if (c) c.tabCalls.push(e);
      else violate(1, { nonce: e.nonce, account: e.account, what: 'a tab received a call no agent sent' });
    }
  }
  for (const e of orphans) violate(2, { nonce: e.nonce, what: 'an answer to a call never sent' });

  const faultList = [...faults.values()];
  const hangs = hostIntervals(faultList, 'hang');
  const kills = hostIntervals(faultList, 'kill');
  // A killed gateway is back once restarted; its clients learn it a moment later.
  const down = Object.fromEntries(Object.entries(kills).map(([h, iv]) => [h, iv.map(([a, b]) => [a - cfg.transportGraceMs, b + cfg.transportGraceMs])]));

  const figures = {
    calls: calls.size,
    results: 0,
    errors: {},            // reason -> count
    outcomes: {},          // outcome -> count
    byTag: {},
    faults: {},
    cancellations: 0,
    cancelledErrors: 0,
    errorsAfterTabAnswered: 0,
    errorsWithTabClosed: 0,
    maxCancelLagMs: 0,
    maxFaultToFirstFailureMs: null,
    slowestFault: null,
    faultsWithoutFailures: 0,
    healToFullServiceMs: null,
    displacedTabs: 0,
    olderTabsDisplaced: 0,
    maxCallMs: 0,
  };
  for (const f of faultList) figures.faults[f.kind] = (figures.faults[f.kind] ?? 0) + 1;
  figures.cancellations = sorted.filter((e) => e.ev === 'tab_cancel').length;

  const failures = [];  // { call, done }
  for (const [nonce, c] of calls) {
    const { call } = c;
    figures.byTag[call.tag] = (figures.byTag[call.tag] ?? 0) + 1;
    // 1: who received it, who answered.
    for (const tc of c.tabCalls) {
      if (tc.account !== call.account) violate(1, { nonce, account: call.account, what: `received by ${tc.account}'s tab` });
    }
    if (c.tabCalls.length > 1) violate(2, { nonce, account: call.account, what: `delivered ${c.tabCalls.length} times to tabs` });
    // 2: ended once, in time, clearly.
    if (c.dones.length === 0) {
      violate(2, { nonce, account: call.account, what: 'never ended' });
      continue;
    }
    if (c.dones.length > 1) violate(2, { nonce, account: call.account, what: `ended ${c.dones.length} times` });
    const done = c.dones[0];
    figures.outcomes[done.outcome] = (figures.outcomes[done.outcome] ?? 0) + 1;
    const elapsed = done.t - call.t;
    figures.maxCallMs = Math.max(figures.maxCallMs, elapsed);
    if (done.outcome === 'result') {
      figures.results++;
      const a = done.answer;
      if (!a || a.account !== call.account || a.nonce !== nonce) {
        violate(1, { nonce, account: call.account, what: `answered with ${JSON.stringify(a)}` });
      }
    } else {
      const reason = reasonOf(done);
      figures.errors[reason] = (figures.errors[reason] ?? 0) + 1;
      failures.push({ call, done, reason });
      if (done.outcome === 'agent_timeout') {
        violate(2, { nonce, account: call.account, what: `no answer: the agent gave up after ${elapsed} ms` });
      } else if (done.outcome === 'transport_error' && !meets(down[call.gw], call.t, done.t)) {
        violate(2, { nonce, account: call.account, what: `a transport error while its gateway ${call.gw} was up: ${done.text}` });
      } else if (done.outcome === 'tool_error' && !(done.text ?? '').trim()) {
        violate(2, { nonce, account: call.account, what: 'a tool error without a text' });
      }
    }
    const deadline = cfg.callTimeoutMs + cfg.livenessMs + cfg.slackMs + overlap(hangs[call.gw], call.t, done.t);
    if (elapsed > deadline) {
      violate(2, { nonce, account: call.account, what: `ended after ${elapsed} ms (deadline ${deadline} ms): ${done.outcome} ${done.text ?? ''}`.trim() });
    }
    // 3: an error after the tab had the call: cancelled there, or nothing left to cancel.
    if (done.outcome !== 'result' && c.tabCalls.length > 0) {
      const tc = c.tabCalls[0];
      const k = key(tc);
      const cancel = cancels.get(k);
      const answer = answers.get(k);
      const closed = closes.get(tabKey(tc));
      if (cancel) {
        figures.cancelledErrors++;
        figures.maxCancelLagMs = Math.max(figures.maxCancelLagMs, cancel.t - done.t);
      } else if (answer && answer.t <= cancelCouldArriveBy(done.t, call.gw, tc.gw, placement[call.account]?.shard, faultList, cfg)) {
        figures.errorsAfterTabAnswered++;
      } else if (closed && closed.t >= tc.t && closed.t <= done.t + cfg.livenessMs) {
        figures.errorsWithTabClosed++;
      } else {
        violate(3, { nonce, account: call.account, what: `ended with ${reasonOf(done)} (${done.outcome}) ${done.t - tc.t} ms after tab ${tc.gw}#${tc.conn} received it as ${JSON.stringify(tc.id)}; never cancelled there` });
      }
    }
    // 5: the control group.
    const p = placement[call.account];
    if (p?.control && done.outcome !== 'result') {
      violate(5, { nonce, account: call.account, what: `control account got ${reasonOf(done)}: ${done.text ?? ''}`.trim() });
    }
  }

  // 4: no newest tab displaced (4409 is for a tab that a newer one of its account replaced:
  // newer by its redemption); after the heal, each account's latest tab answers its call.
  const upOf = new Map();
  for (const list of ups.values()) for (const u of list) upOf.set(tabKey(u), u);
  for (const e of sorted) {
    if (e.ev !== 'tab_close' || e.code !== 4409) continue;
    const up = upOf.get(tabKey(e));
    const own = (hellos.get(e.account) ?? []).findLast((h) => h.key === tabKey(e));
    const placeOf = (h) => (h?.resumed ? (hellos.get(e.account) ?? []).findLast((p) => p.key === h.place) : h);
    const ownHello = placeOf(own)?.t ?? up?.t ?? Infinity;
    // Not its own chain: the ticket connection it descends from is older by definition.
    const ownPlace = own?.place ?? tabKey(e);
    const newer = (hellos.get(e.account) ?? []).some((h) => h.key !== tabKey(e) && h.key !== ownPlace && !h.resumed && h.t <= e.t && h.settled > ownHello);
    if (newer) {
      figures.olderTabsDisplaced++;
    } else {
      figures.displacedTabs++;
      violate(4, { account: e.account, what: `its newest tab ${e.gw}#${e.conn} (up at ${up?.t}) was closed with 4409 at ${e.t}` });
    }
  }
  const probes = [...calls.values()].filter((c) => c.call.tag === 'probe');
  if (cfg.expectProbe) {
    const probed = new Set(probes.map((c) => c.call.account));
    for (const account of Object.keys(placement)) {
      if (!probed.has(account)) violate(4, { account, what: 'no probe call after the heal' });
    }
  }
  for (const c of probes) {
    const account = c.call.account;
    const latest = (ups.get(account) ?? []).reduce((m, u) => (u.t > (m?.t ?? -Infinity) ? u : m), null);
    const done = c.dones[0];
    const name = (t) => (t ? `${t.gw}#${t.conn}` : 'none');
    if (!done || done.outcome !== 'result') {
      violate(4, { account, what: `after the heal its call got ${done ? `${reasonOf(done)}: ${done.text ?? ''}` : 'nothing'} (its latest tab: ${name(latest)}${latest && closes.has(tabKey(latest)) ? `, closed ${closes.get(tabKey(latest)).code}` : ''})` });
    } else if (!latest || done.answer?.conn !== latest.conn || done.answer?.gw !== latest.gw || closes.has(tabKey(latest))) {
      violate(4, { account, what: `after the heal its call was answered by tab ${name(done.answer)}, its latest is ${name(latest)}` });
    }
  }

  // How soon faults show: from each fault to the first failed call (of an account it
  // touches) that ended after it, by the fault's end plus the liveness bound (later
  // failures are some other fault's). Added latency is not meant to fail calls: left out.
  failures.sort((a, b) => a.done.t - b.done.t);
  for (const f of faultList) {
    if (f.kind === 'latency') continue;
    const until = (f.endT ?? f.t) + cfg.livenessMs;
    const first = failures.find(({ call, done }) => done.t >= f.t && done.t <= until && touches(f, placement[call.account]));
    if (!first) {
      figures.faultsWithoutFailures++;
    } else if (first.done.t - f.t > (figures.maxFaultToFirstFailureMs ?? -1)) {
      figures.maxFaultToFirstFailureMs = first.done.t - f.t;
      figures.slowestFault = `${f.kind} ${f.host ?? `${f.gw}>${f.router}`} #${f.id} (${first.reason})`;
    }
  }

  // From the heal to full service: for each account, the first success after its last
  // failure that ended after the heal; the latest of these over all accounts.
  if (heal !== null) {
    const byAccount = new Map();
    for (const c of calls.values()) {
      if (!c.dones[0]) continue;
      (byAccount.get(c.call.account) ?? byAccount.set(c.call.account, []).get(c.call.account)).push(c);
    }
    let worst = 0;
    for (const [account, list] of byAccount) {
      const lastFailure = list.filter((c) => c.dones[0].outcome !== 'result' && c.dones[0].t >= heal).reduce((m, c) => Math.max(m, c.call.t), -Infinity);
      if (lastFailure === -Infinity) continue;
      const recovered = list.filter((c) => c.dones[0].outcome === 'result' && c.call.t > lastFailure).reduce((m, c) => Math.min(m, c.dones[0].t), Infinity);
      // Never again: the probe after the heal (invariant 4) names the account.
      if (recovered === Infinity) {
        worst = Infinity;
      } else {
        worst = Math.max(worst, recovered - heal);
      }
    }
    figures.healToFullServiceMs = worst;
  }

  const total = Object.values(violations).reduce((n, list) => n + list.length, 0);
  return { figures, violations, total };
}

// The report as text: figures first, then up to `limit` violations per invariant.
export function report({ figures, violations, total }, limit = 8) {
  const f = figures;
  const sortedEntries = (o) => Object.entries(o).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ') || 'none';
  const lines = [
    `calls: ${f.calls} (${sortedEntries(f.byTag)}); answered by the tab: ${f.results}; longest: ${f.maxCallMs} ms`,
    `faults injected: ${sortedEntries(f.faults)}`,
    `errors by kind: ${sortedEntries(f.errors)}`,
    `cancellations at tabs: ${f.cancellations}; errored calls the tab had: cancelled there ${f.cancelledErrors} (the latest ${f.maxCancelLagMs} ms after the agent's error), answered first ${f.errorsAfterTabAnswered}, tab closed ${f.errorsWithTabClosed}`,
    `longest from a fault to the first failed call's answer: ${f.maxFaultToFirstFailureMs ?? '-'} ms${f.slowestFault ? `, ${f.slowestFault}` : ''} (faults but latency with no failed call: ${f.faultsWithoutFailures})`,
    `from the heal to full service: ${f.healToFullServiceMs === null ? '-' : f.healToFullServiceMs === Infinity ? 'never' : f.healToFullServiceMs === 0 ? '0 ms (no call failed after the heal)' : `${f.healToFullServiceMs} ms`}`,
    `tabs closed with 4409: older ones (a newer connection of the account had sent its hello) ${f.olderTabsDisplaced}, the newest ${f.displacedTabs}`,
    `violations: ${total}${total ? ` (${Object.entries(violations).map(([n, l]) => `#${n}: ${l.length}`).join(', ')})` : ''}`,
  ];
  for (const [n, list] of Object.entries(violations)) {
    for (const v of list.slice(0, limit)) lines.push(`  #${n} ${v.account ?? ''} ${v.nonce ?? ''}: ${v.what}`);
    if (list.length > limit) lines.push(`  #${n} … and ${list.length - limit} more`);
  }
  return lines.join('\n');
}

// Reads a recorded run: the first line is the runner's config event.
export function readEvents(path) {
  const events = readFileSync(path, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const config = events.find((e) => e.ev === 'config') ?? {};
  return { events, config };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { events, config } = readEvents(process.argv[2]);
  const result = check(events, config);
  console.log(report(result, 30));
  process.exitCode = result.total ? 1 : 0;
}
