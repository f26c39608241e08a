// The checker on made-up recorded lines: each invariant caught when broken, and its
// exemptions (a tab that closed, a tab that had answered, a killed agent gateway) honoured.
// No processes, no namespaces: runs anywhere in well under a second.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { check, report, reasonOf } from './checker.mjs';
import { makeSchedule, mulberry32, placeAccounts, FAULT_KINDS } from './schedule.mjs';

const accounts = {
  alice: { agentGw: 'gw1', tabGw: 'gw2', shard: 'router1' },
  carol: { agentGw: 'gw3', tabGw: 'gw3', shard: 'router0', control: true },
};
const options = { callTimeoutMs: 10000, accounts };

// A call from alice's agent, seen by her tab (conn 1, relay id 7) unless tab is false.
function call(nonce, { t = 1000, account = 'alice', gw = 'gw1', done = {}, tab = {}, doneAt = t + 300 } = {}) {
  const out = [{ ev: 'call', t, nonce, account, gw, tag: 'load' }];
  if (tab) out.push({ ev: 'tab_call', t: t + 5, account: tab.account ?? account, gw: 'gw2', conn: tab.conn ?? 1, id: tab.id ?? 7, nonce });
  if (done) {
    out.push({
      ev: 'done', t: doneAt, nonce, account, gw, tag: 'load', outcome: 'result',
      answer: { account, nonce, conn: tab?.conn ?? 1 }, ...done,
    });
  }
  return out;
}
const relayError = (text) => ({ outcome: 'tool_error', text, answer: undefined });

test('a clean run has no violations and counts its calls', () => {
  const r = check([...call('a1'), ...call('a2', { t: 2000 })], options);
  assert.equal(r.total, 0, report(r));
  assert.equal(r.figures.calls, 2);
  assert.equal(r.figures.results, 2);
});

test("1: an answer naming another account or nonce, or a call reaching another account's tab", () => {
  const r = check([
    ...call('a1', { done: { answer: { account: 'carol', nonce: 'a1' } } }),
    ...call('a2', { t: 2000, done: { answer: { account: 'alice', nonce: 'a9' } } }),
    ...call('a3', { t: 3000, tab: { account: 'carol', id: 8 } }),
  ], options);
  assert.equal(r.violations[1].length, 3, report(r));
});

test('2: a call never ended, ended twice, delivered twice, timed out by the agent, or late', () => {
  const r = check([
    ...call('n1', { done: false }),
    ...call('n2', { t: 2000 }), { ev: 'done', t: 2400, nonce: 'n2', account: 'alice', gw: 'gw1', outcome: 'result', answer: { account: 'alice', nonce: 'n2' } },
    ...call('n3', { t: 3000 }), { ev: 'tab_call', t: 3010, account: 'alice', gw: 'gw2', conn: 1, id: 9, nonce: 'n3' },
    ...call('n4', { t: 4000, tab: false, doneAt: 31000, done: { outcome: 'agent_timeout', text: 'Request timed out' } }),
    ...call('n5', { t: 5000, tab: false, doneAt: 5000 + 17001, done: relayError('The editor did not answer in time (10s). The request was cancelled.') }),
  ], options);
  const whats = r.violations[2].map((v) => `${v.nonce} ${v.what}`);
  assert.equal(whats.length, 6, whats.join('\n'));
  for (const n of ['n1', 'n2', 'n3', 'n4', 'n5']) assert.ok(whats.some((w) => w.startsWith(n)), n);
});

test('2: the deadline grows by the time the agent\'s own gateway was stopped; a transport error only when it was killed', () => {
  const hang = [{ ev: 'fault', t: 5000, id: 1, kind: 'hang', host: 'gw1' }, { ev: 'fault_end', t: 9000, id: 1 }];
  const kill = [{ ev: 'fault', t: 20000, id: 2, kind: 'kill', host: 'gw1' }, { ev: 'fault_end', t: 21000, id: 2 }];
  const late = call('h1', { t: 4000, tab: false, doneAt: 4000 + 17000 + 3000, done: relayError('The relay is restarting and could not reach the editor. Try again in a moment.') });
  const killed = call('k1', { t: 19500, tab: false, doneAt: 20001, done: { outcome: 'transport_error', text: 'fetch failed (ECONNRESET)' } });
  const refused = call('k0', { t: 20500, tab: false, doneAt: 20500, done: { outcome: 'transport_error', text: 'fetch failed (ECONNREFUSED)' } });
  const pooled = call('k2', { t: 22500, tab: false, doneAt: 22510, done: { outcome: 'transport_error', text: 'fetch failed (ECONNRESET)' } });
  const stray = call('k3', { t: 40000, tab: false, doneAt: 40010, done: { outcome: 'transport_error', text: 'fetch failed (ECONNRESET)' } });
  const r = check([...hang, ...kill, ...late, ...killed, ...refused, ...pooled, ...stray], options);
  assert.deepEqual(r.violations[2].map((v) => v.nonce), ['k3'], report(r));
});

test('3: an error after the tab got the call needs its cancel, unless the tab closed or had answered', () => {
  const err = relayError('The editor disconnected before it answered. Reopen the editor and try again.');
  const r = check([
    ...call('c1', { done: err }),                                                      // violation
    ...call('c2', { t: 2000, tab: { id: 11 }, done: err }),
    { ev: 'tab_cancel', t: 2400, account: 'alice', gw: 'gw2', conn: 1, id: 11 },       // cancelled
    ...call('c3', { t: 3000, tab: { conn: 2, id: 12 }, done: err }),
    { ev: 'tab_close', t: 3200, account: 'alice', gw: 'gw2', conn: 2, code: 1006 },   // closed
    ...call('c4', { t: 4000, tab: { id: 13 }, done: err }),
    { ev: 'tab_answer', t: 4100, account: 'alice', gw: 'gw2', conn: 1, id: 13 },      // answered
    ...call('c5', { t: 5000, tab: { id: 14 }, done: err }),
    { ev: 'tab_cancel', t: 5300, account: 'alice', gw: 'gw2', conn: 1, id: 99 },      // another call's
    ...call('c6', { t: 6000, tab: { id: 15 }, done: err }),                            // answered 1 s late
    { ev: 'tab_answer', t: 7300, account: 'alice', gw: 'gw2', conn: 1, id: 15 },
    // 150 ms each way on the tab's path: its answer 100 ms after the error beat any cancel.
    { ev: 'fault', t: 7500, id: 1, kind: 'latency', gw: 'gw2', router: 'router1', delayMs: 150 },
    ...call('c7', { t: 8000, tab: { id: 16 }, done: err }),
    { ev: 'tab_answer', t: 8400, account: 'alice', gw: 'gw2', conn: 1, id: 16 },
    { ev: 'fault_end', t: 9000, id: 1 },
    // A stall of the agent's path until 12 s: the router heard of the error only then.
    { ev: 'fault', t: 9500, id: 2, kind: 'stall', gw: 'gw1', router: 'router1' },
    ...call('c8', { t: 10000, tab: { id: 17 }, done: err }),
    { ev: 'tab_answer', t: 11900, account: 'alice', gw: 'gw2', conn: 1, id: 17 },
    { ev: 'fault_end', t: 12000, id: 2 },
  ], options);
  assert.deepEqual(r.violations[3].map((v) => v.nonce), ['c1', 'c5', 'c6'], report(r));
  assert.equal(r.figures.cancelledErrors, 1);
  assert.equal(r.figures.errorsWithTabClosed, 1);
  assert.equal(r.figures.errorsAfterTabAnswered, 3);
});

test('4: the newest tab closed with 4409, a probe answered by an older tab or not at all; an older tab displaced is fine', () => {
  const probe = (nonce, account, gw, conn, outcome = 'result') => [
    { ev: 'call', t: 9000, nonce, account, gw: accounts[account].agentGw, tag: 'probe' },
    { ev: 'done', t: 9010, nonce, account, gw: accounts[account].agentGw, tag: 'probe', outcome, text: outcome === 'result' ? '' : 'No editor is connected for your account.', answer: { account, nonce, gw, conn } },
  ];
  const tab = (account, gw, conn, hello, up) => [
    { ev: 'tab_hello', t: hello, account, gw, conn },
    { ev: 'tab_up', t: up, account, gw, conn },
  ];
  const r = check([
    // alice: her newest tab (gw2#3) displaced by a stale re-announce; gw2#1 answers the probe.
    ...tab('alice', 'gw2', 1, 90, 100),
    ...tab('alice', 'gw2', 3, 4990, 5000),
    { ev: 'tab_close', t: 6000, account: 'alice', gw: 'gw2', conn: 3, code: 4409 },
    ...probe('p1', 'alice', 'gw2', 1),
    // carol: a takeover on gw1 displaces her older gw3#1 (fine), but her probe fails.
    ...tab('carol', 'gw3', 1, 90, 100),
    ...tab('carol', 'gw1', 1, 6990, 7000),
    { ev: 'tab_close', t: 7100, account: 'carol', gw: 'gw3', conn: 1, code: 4409 },
    ...probe('p2', 'carol', 'gw1', 1, 'tool_error'),
  ], { ...options, expectProbe: true });
  assert.equal(r.violations[4].length, 3, report(r));
  assert.equal(r.figures.displacedTabs, 1);
  assert.equal(r.figures.olderTabsDisplaced, 1);
  // The same takeover with a probe its new tab answers: no violation.
  const ok = check([
    ...tab('carol', 'gw3', 1, 90, 100),
    ...tab('carol', 'gw1', 1, 6990, 7000),
    { ev: 'tab_close', t: 7100, account: 'carol', gw: 'gw3', conn: 1, code: 4409 },
    ...probe('p3', 'carol', 'gw1', 1),
  ], { ...options, accounts: { carol: accounts.carol } });
  assert.equal(ok.total, 0, report(ok));
});

test('4: a tab is newer by its redemption, between its hello and its answer, whenever the answer comes', () => {
  const only = { ...options, accounts: { carol: accounts.carol } };
  const closeOld = { ev: 'tab_close', t: 6000, account: 'carol', gw: 'gw3', conn: 1, code: 4409 };
  const older = [{ ev: 'tab_hello', t: 90, account: 'carol', gw: 'gw3', conn: 1 }, { ev: 'tab_up', t: 100, account: 'carol', gw: 'gw3', conn: 1 }];
  // The newer tab's gateway was stopped between its announcement and its answer: the answer
  // comes after the older tab's close.
  const late = check([...older, { ev: 'tab_hello', t: 1000, account: 'carol', gw: 'gw1', conn: 1 }, closeOld,
    { ev: 'tab_up', t: 6005, account: 'carol', gw: 'gw1', conn: 1 }], only);
  assert.equal(late.total, 0, report(late));
  assert.equal(late.figures.olderTabsDisplaced, 1);
  // Redeemed, announced, then its connection failed before the answer: still the newer one.
  const failed = check([...older, { ev: 'tab_hello', t: 1000, account: 'carol', gw: 'gw1', conn: 1 },
    { ev: 'tab_fail', t: 5990, account: 'carol', gw: 'gw1', conn: 1, error: 'closed before the hello was answered: 1006 ' }, closeOld], only);
  assert.equal(failed.total, 0, report(failed));
  // A hello whose ticket was refused has no place in the order; nor one sent after the close;
  // nor one answered before the displaced tab sent its own hello.
  for (const other of [
    [{ ev: 'tab_hello', t: 1000, account: 'carol', gw: 'gw1', conn: 1 }, { ev: 'tab_fail', t: 1010, account: 'carol', gw: 'gw1', conn: 1, error: 'hello refused: {"code":-32001}' }],
    [{ ev: 'tab_hello', t: 6001, account: 'carol', gw: 'gw1', conn: 1 }],
    [{ ev: 'tab_hello', t: 50, account: 'carol', gw: 'gw1', conn: 1 }, { ev: 'tab_up', t: 80, account: 'carol', gw: 'gw1', conn: 1 }],
  ]) {
    const r = check([...older, ...other, closeOld], only);
    assert.equal(r.violations[4].length, 1, report(r));
  }
});

test('4: a tab that came back with its resume credential keeps its ticket connection\'s place and is never the newer one', () => {
  const only = { ...options, accounts: { carol: accounts.carol } };
  const ev = (ev, t, gw, conn, more = {}) => ({ ev, t, account: 'carol', gw, conn, ...more });
  // carol's tab on gw3 (ticket, conn 1); its gateway dies, it resumes (conn 2, place 1) after a
  // newer tab on gw1 was answered; then the router displaces the resumed one: fine.
  const base = [
    ev('tab_hello', 90, 'gw3', 1, { resumed: false, place: 1 }), ev('tab_up', 100, 'gw3', 1), ev('tab_close', 500, 'gw3', 1, { code: 1006 }),
    ev('tab_hello', 1000, 'gw1', 1, { resumed: false, place: 1 }), ev('tab_up', 1010, 'gw1', 1),
    ev('tab_hello', 2000, 'gw3', 2, { resumed: true, place: 1 }), ev('tab_up', 2010, 'gw3', 2),
  ];
  const fine = check([...base, ev('tab_close', 2500, 'gw3', 2, { code: 4409 })], only);
  assert.equal(fine.total, 0, report(fine));
  // The newer tab displaced while the resumed one was coming back: a violation.
  const wrong = check([...base, ev('tab_close', 2500, 'gw1', 1, { code: 4409 })], only);
  assert.equal(wrong.violations[4].length, 1, report(wrong));
  // A resumed tab displaced with no newer tab about (its own chain's stale connection
  // announced again): a violation, however old its ticket connection.
  const own = check([
    ev('tab_hello', 90, 'gw3', 1, { resumed: false, place: 1 }), ev('tab_up', 100, 'gw3', 1), ev('tab_close', 500, 'gw3', 1, { code: 1006 }),
    ev('tab_hello', 2000, 'gw3', 2, { resumed: true, place: 1 }), ev('tab_up', 2010, 'gw3', 2),
    ev('tab_close', 2500, 'gw3', 2, { code: 4409 }),
  ], only);
  assert.equal(own.violations[4].length, 1, report(own));
});

test('5: any error of a control account is a violation, whatever its kind', () => {
  const r = check(call('z1', { account: 'carol', gw: 'gw3', tab: false, done: relayError('The relay is restarting and could not reach the editor. Try again in a moment.') }), options);
  assert.equal(r.violations[5].length, 1, report(r));
});

test('figures: errors by kind, faults by kind, fault to first failure, heal to full service', () => {
  const err = relayError('The relay is restarting and could not reach the editor. Try again in a moment.');
  const r = check([
    { ev: 'fault', t: 10000, id: 1, kind: 'stall', gw: 'gw1', router: 'router1' },
    { ev: 'fault_end', t: 15000, id: 1 },
    { ev: 'fault', t: 12000, id: 2, kind: 'hang', host: 'gw3' },   // touches no failing account here
    { ev: 'fault_end', t: 13000, id: 2 },
    ...call('f1', { t: 9000, tab: false, doneAt: 14000, done: err }),
    ...call('f2', { t: 14500, tab: false, doneAt: 15500, done: err }),
    { ev: 'heal', t: 15100 },
    ...call('f3', { t: 15600, tab: false, doneAt: 15900, done: err }),
    ...call('f4', { t: 16000, doneAt: 16700 }),
  ], options);
  assert.equal(r.figures.errors.router_unavailable, 3);
  assert.deepEqual(r.figures.faults, { stall: 1, hang: 1 });
  assert.equal(r.figures.maxFaultToFirstFailureMs, 4000);
  assert.equal(r.figures.faultsWithoutFailures, 1);
  assert.equal(r.figures.healToFullServiceMs, 1600);
});

test('error kinds from the relay\'s texts', () => {
  assert.equal(reasonOf({ outcome: 'tool_error', text: 'The editor was replaced by another tab before it answered.' }), 'displaced');
  assert.equal(reasonOf({ outcome: 'http_error', code: 503, text: 'x' }), 'http_503');
  assert.equal(reasonOf({ outcome: 'rpc_error', code: -32603, text: 'x' }), 'rpc_-32603');
});

test('the schedule is a function of the seed, spares the untouched hosts and ends by the heal', () => {
  const untouched = { gateway: 'gw2', router: 'router0' };
  const placement = placeAccounts(mulberry32(1), Array.from({ length: 200 }, (_, i) => `u${i}`));
  const a = makeSchedule({ seed: 42, startMs: 10000, endMs: 270000, untouched, placement });
  assert.deepEqual(a, makeSchedule({ seed: 42, startMs: 10000, endMs: 270000, untouched, placement }));
  assert.notDeepEqual(a, makeSchedule({ seed: 43, startMs: 10000, endMs: 270000, untouched, placement }));
  assert.ok(a.length > 30, `${a.length} faults`);
  for (const f of a) {
    assert.ok(f.at >= 10000 && f.at + f.ms <= 270000, JSON.stringify(f));
    assert.ok(f.host !== 'gw2' && f.host !== 'router0' && f.gw !== 'gw2', JSON.stringify(f));
    assert.ok(FAULT_KINDS[f.kind]);
  }
  assert.equal(new Set(a.map((f) => f.kind)).size, Object.keys(FAULT_KINDS).length);
  // Two faults never hold one host (or one path) at once.
  const busy = new Map();
  for (const f of a) {
    const k = f.host ?? `${f.gw}>${f.router}`;
    assert.ok((busy.get(k) ?? 0) <= f.at, JSON.stringify(f));
    busy.set(k, f.at + f.ms);
  }
  // A takeover moves accounts whose tab is on its (faulty) gateway, each once, elsewhere.
  const moved = a.filter((f) => f.kind === 'takeover').flatMap((f) => f.accounts.map((acc) => [acc, f]));
  assert.ok(moved.length > 0);
  assert.equal(new Set(moved.map(([acc]) => acc)).size, moved.length);
  for (const [acc, f] of moved) assert.ok(f.to !== f.host && placement[acc].tabGw === f.host, JSON.stringify(f));
  const cross = Object.values(placement).filter((p) => p.agentGw !== p.tabGw).length;
  assert.ok(cross > 50 && cross < 110, `${cross} accounts across two gateways`);
});
