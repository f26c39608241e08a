// authsvc's promises (HOST-API.md, issue 4), end to end with the reference host API under
// php -S, which counts the requests it receives.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createConnection, createServer } from 'node:net';
import { join } from 'node:path';
import { startStack, stopProcess, binDir, allLogs, waitUntil } from './lib/stack.mjs';
import { ScriptedTab } from './lib/tab.mjs';

const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
const wrongToken = () => `fwa_${Array.from({ length: 64 }, () => '0123456789abcdef'[Math.floor(Math.random() * 16)]).join('')}`;

function post(gateway, token, headers = {}) {
  return fetch(gateway.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`, ...headers },
    body: JSON.stringify(ping),
  });
}

// One keep-alive connection: post(token) sends a ping with that bearer on it and resolves with
// the answer's status. From an address of its own behind the trusted proxy, where a wrong bearer
// counts towards the brake.
async function keepAliveConnection(port) {
  const socket = createConnection(port, '127.0.0.1');
  await new Promise((resolve, reject) => { socket.once('connect', resolve); socket.once('error', reject); });
  let raw = Buffer.alloc(0);
  const body = JSON.stringify(ping);
  return {
    post(token) {
      return new Promise((resolve, reject) => {
        const onData = (d) => {
          raw = Buffer.concat([raw, d]);
          const head = raw.indexOf('\r\n\r\n');
          if (head < 0) return;
          const text = raw.subarray(0, head).toString();
          const length = Number(/content-length: *(\d+)/i.exec(text)?.[1] ?? 0);
          if (raw.length - head - 4 < length) return;
          raw = raw.subarray(head + 4 + length);
          socket.off('data', onData);
          socket.off('close', onClose);
          resolve(Number(text.split(' ')[1]));
        };
        const onClose = () => reject(new Error('the gateway closed the connection before answering'));
        socket.on('data', onData);
        socket.once('close', onClose);
        socket.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Real-IP: 203.0.113.71\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      });
    },
    close() { socket.destroy(); },
  };
}

// Without a session id the answer is 400 after a successful verification, 401/429/503 before.
const authorized = (status) => status === 400;
const stacks = [];

describe('with a long TTL, a trusted proxy and a busy host API', () => {
  let stack, gw;
  before(async () => {
    stack = await startStack({
      users: ['alice', 'bob', 'carol'],
      gatewayArgs: ['--trusted_proxies=127.0.0.1/32'],
      authsvcArgs: ['--verify_ttl=60s', '--upstream_timeout=1s', '--upstream_connections=2', '--max_pending_upstream=4'],
      hostapiEnv: { PHP_CLI_SERVER_WORKERS: '4' },
    });
    stacks.push(stack);
    gw = stack.gateways[0];
  });

  test('200 concurrent requests with one fresh token make one agent/verify; 1,000 more make none', async () => {
    const token = await stack.mintToken('alice');
    const before = stack.hostApiCount('agent/verify');
    const first = await Promise.all(Array.from({ length: 200 }, () => post(gw, token)));
    assert.ok(first.every((r) => authorized(r.status)), `statuses: ${[...new Set(first.map((r) => r.status))]}`);
    assert.equal(stack.hostApiCount('agent/verify') - before, 1);
    for (let i = 0; i < 10; i++) {
      const more = await Promise.all(Array.from({ length: 100 }, () => post(gw, token)));
      assert.ok(more.every((r) => authorized(r.status)));
    }
    assert.equal(stack.hostApiCount('agent/verify') - before, 1);
  });

  test('one keep-alive connection, bearers that change: each request is judged by its own', async () => {
    // The gateway hashes a connection's bearer once and keeps the hash while the same bearer
    // comes back (docs/decisions.md, "A bearer and a session id checked once per connection"):
    // a different bearer on the same connection must be hashed and judged afresh. A refused
    // bearer ends its connection (401 with Connection: close), so each one ends a connection.
    const alice = await stack.mintToken('alice');
    const carol = await stack.mintToken('carol');
    const aliceButOne = alice.slice(0, -1) + (alice.endsWith('0') ? '1' : '0');
    const first = await keepAliveConnection(gw.port);
    const second = await keepAliveConnection(gw.port);
    try {
      assert.ok(authorized(await first.post(alice)));
      assert.ok(authorized(await first.post(carol)));
      assert.ok(authorized(await first.post(alice)));
      assert.equal(await first.post(wrongToken()), 401);
      assert.ok(authorized(await second.post(alice)));
      assert.equal(await second.post(aliceButOne), 401);
    } finally {
      first.close();
      second.close();
    }
  });

  test('a revoked token works until relayctl auth forget, then not at once', async () => {
    const token = await stack.mintToken('bob');
    assert.ok(authorized((await post(gw, token)).status));
    await stack.revokeToken(token);
    assert.ok(authorized((await post(gw, token)).status), 'cached within the TTL');
    const out = execFileSync(join(binDir, 'relayctl'), [`--authsvc=127.0.0.1:${stack.authsvcPort}`, '--user=bob', 'auth', 'forget']).toString();
    assert.match(out, /dropped 1 cached verification/);
    assert.equal((await post(gw, token)).status, 401);
  });

  test('relayctl auth forget by token hash takes it in capitals too, and refuses what is not a hash', async () => {
    const { createHash } = await import('node:crypto');
    const token = await stack.mintToken('bob');
    assert.ok(authorized((await post(gw, token)).status));
    await stack.revokeToken(token);
    const hash = createHash('sha256').update(token).digest('hex').toUpperCase();
    const relayctl = (...args) => spawnSync(join(binDir, 'relayctl'), [`--authsvc=127.0.0.1:${stack.authsvcPort}`, ...args, 'auth', 'forget'], { encoding: 'utf8' });
    const forgot = relayctl(`--token_sha256=${hash}`);
    assert.equal(forgot.status, 0, forgot.stderr);
    assert.match(forgot.stdout, /dropped 1 cached verification/);
    assert.equal((await post(gw, token)).status, 401);
    const wrong = relayctl('--token_sha256=not-a-hash');
    assert.notEqual(wrong.status, 0);
    assert.match(wrong.stderr, /token_sha256 must be the token's SHA-256 as 64 lowercase hex digits/);
  });

  test('the brake: the sixth wrong token from an address gets 429 with Retry-After, by X-Real-IP of a trusted proxy', async () => {
    const from = (ip) => ({ 'x-real-ip': ip });
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await post(gw, wrongToken(), from('203.0.113.7'))).status);
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429]);
    const locked = await post(gw, wrongToken(), from('203.0.113.7'));
    assert.equal(locked.status, 429);
    assert.ok(Number(locked.headers.get('retry-after')) > 0);
    // A good token from the locked address: the host API says 429, and so do we.
    assert.equal((await post(gw, await stack.mintToken('carol'), from('203.0.113.7'))).status, 429);
    // Until Retry-After the gateway answers 429 itself: a stranger's further guesses, however
    // many distinct tokens, no longer reach the host API.
    const before = stack.hostApiCount('agent/verify');
    for (let i = 0; i < 20; i++) {
      const guess = await post(gw, wrongToken(), from('203.0.113.7'));
      assert.equal(guess.status, 429);
      assert.ok(Number(guess.headers.get('retry-after')) > 0);
    }
    assert.equal(stack.hostApiCount('agent/verify') - before, 0);
    // Another address behind the same proxy is not braked.
    assert.ok(authorized((await post(gw, await stack.mintToken('carol'), from('203.0.113.8'))).status));
  });

  test('two tabs racing with one ticket: exactly one gets on, the other is closed with 4401', async () => {
    const ticket = await stack.ticket('alice');
    const tabs = [new ScriptedTab(gw.wsUrl), new ScriptedTab(gw.wsUrl)];
    await Promise.all(tabs.map((t) => t.open()));
    tabs.forEach((t) => t.send({ jsonrpc: '2.0', id: 1, method: 'relay/hello', params: { ticket } }));
    const hellos = await Promise.all(tabs.map((t) => t.waitFor((m) => m.id === 1)));
    assert.equal(hellos.filter((h) => h.result).length, 1);
    const loser = tabs[hellos.findIndex((h) => h.error)];
    assert.equal((await loser.closed).code, 4401);
    tabs.forEach((t) => t.close());
  });

  const authMetric = async (name) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(await (await fetch(stack.authsvc.metricsUrl)).text())[1]);

  test('host API down: 503 within the upstream timeout; hung: the same, and bounded; back: the next request succeeds', async () => {
    // Bounds well under the gateway's own 10 s deadline for authsvc (what a hang would hit),
    // with room for a machine busy with other suites.
    const message = /account service could not be reached/;
    await stack.stopHostApi();
    const sockets = [];
    const hung = createServer((socket) => sockets.push(socket));
    try {
      let started = Date.now();
      let res = await post(gw, wrongToken());
      assert.equal(res.status, 503);
      assert.match(await res.text(), message);
      assert.ok(Date.now() - started < 5000);

      // Something that accepts connections on the host API's port and never answers.
      await new Promise((resolve) => hung.listen(stack.hostapi.port, '127.0.0.1', resolve));
      started = Date.now();
      res = await post(gw, wrongToken());
      const elapsed = Date.now() - started;
      assert.equal(res.status, 503);
      assert.match(await res.text(), message);
      assert.ok(elapsed >= 900 && elapsed < 5000, `answered after ${elapsed} ms`);
      // While it hangs, authsvc holds 2 requests upstream and 4 waiting: the rest of a burst
      // of distinct tokens is refused at once (503 too) instead of queueing without bound.
      const refusedBefore = await authMetric('relay_authsvc_upstream_refused_total');
      const burst = await Promise.all(Array.from({ length: 20 }, (_, i) => post(gw, wrongToken(), { 'x-real-ip': `192.0.2.${i + 1}` })));
      assert.deepEqual([...new Set(burst.map((r) => r.status))], [503]);
      assert.ok(await authMetric('relay_authsvc_upstream_refused_total') - refusedBefore >= 10);
    } finally {
      // Whatever happened above, the next tests get their host API back.
      sockets.forEach((s) => s.destroy());
      if (hung.listening) await new Promise((resolve) => hung.close(resolve));
      await stack.restartHostApi();
    }
    const token = await stack.mintToken('alice');
    assert.ok(authorized((await post(gw, token)).status));
  });

  test("authsvc gone without a word: within a second the gateway stops using the verdicts it keeps", async () => {
    const token = await stack.mintToken('carol');
    assert.ok(authorized((await post(gw, token)).status));  // kept for the 60 s TTL
    // Stopped, not killed: its connections stay open and silent, as when its machine dies.
    const pid = stack.authsvc.child.pid;
    try {
      await stopProcess(pid);
      // A revocation made now could not reach the gateway; after a second of silence the
      // gateway must ask authsvc, which does not answer: no 400 from the verdict it kept.
      await new Promise((r) => setTimeout(r, 1200));
      const status = await Promise.race([
        post(gw, token).then((r) => r.status),
        new Promise((r) => setTimeout(() => r('no answer within 3 s'), 3000)),
      ]);
      assert.notEqual(status, 400, 'answered from the verdict kept before the silence');
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    // authsvc back: its answers, and its beats, come again.
    await waitUntil(async () => authorized((await post(gw, token)).status), 'authsvc to answer again');
  });
});

describe('with a one-second TTL', () => {
  let stack, gw;
  before(async () => {
    stack = await startStack({
      users: ['dave'],
      // The revocation test speaks from its own address (X-Real-IP), so that its 401s do
      // not count toward the brake of the socket address that the next test checks.
      gatewayArgs: ['--trusted_proxies=127.0.0.1/32'],
      authsvcArgs: ['--verify_ttl=1s', '--negative_ttl=1s'],
    });
    stacks.push(stack);
    gw = stack.gateways[0];
  });

  test('a token revoked in the host API stops working within --verify_ttl', async () => {
    const token = await stack.mintToken('dave');
    const from = { 'x-real-ip': '198.51.100.50' };
    assert.ok(authorized((await post(gw, token, from)).status));
    await stack.revokeToken(token);
    const revoked = Date.now();
    await waitUntil(async () => (await post(gw, token, from)).status === 401, 'the revocation takes effect', 3000);
    assert.ok(Date.now() - revoked <= 1500, `took ${Date.now() - revoked} ms`);
  });

  test('six wrong tokens from the socket address: the sixth gets 429', async () => {
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await post(gw, wrongToken())).status);
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429]);
  });
});

after(async () => {
  for (const stack of stacks) await stack.stop();
});

test('no token, ticket, relay key or session secret appears in any log line', () => {
  const secrets = stacks.flatMap((s) => s.secrets);
  assert.ok(secrets.length > 10);
  assert.ok(allLogs.length > 20);
  for (const line of allLogs) {
    for (const secret of secrets) {
      assert.ok(!line.includes(secret), `a secret in: ${line.slice(0, 80)}…`);
    }
  }
});
