// Between the services: mutual TLS with a role per certificate (ARCHITECTURE.md, issue 12).
// The stack runs as deployed, every gRPC connection over TLS with its role's certificate;
// these tests are the callers it must refuse, and the operator it must serve.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { chmodSync, copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startStack, startProcess, binDir, repoRoot, waitUntil, tlsFiles, tlsArgs } from './lib/stack.mjs';
import { startTlsProxy } from './lib/nginx.mjs';

const execFileAsync = promisify(execFile);
let stack, foreignDir;

before(async () => {
  stack = await startStack({ users: ['alice'] });
  // A second CA with its own operator certificate: a stranger's.
  foreignDir = mkdtempSync(join(tmpdir(), 'relay-foreign-tls-'));
  execFileSync('bash', [join(repoRoot, 'scripts', 'make-certs.sh'), foreignDir]);
});
after(async () => {
  await stack?.stop();
  if (foreignDir) rmSync(foreignDir, { recursive: true, force: true });
});

// relayctl with the given certificate files (an empty object: plaintext); resolves to
// { code, stdout, stderr }.
async function relayctl(files, ...args) {
  const env = {
    ...process.env,
    RELAY_GRPC_TLS_CA: files.ca ?? '', RELAY_GRPC_TLS_CERT: files.cert ?? '', RELAY_GRPC_TLS_KEY: files.key ?? '',
  };
  try {
    const { stdout, stderr } = await execFileAsync(join(binDir, 'relayctl'), args, { env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    return { code: error.code, stdout: error.stdout, stderr: error.stderr };
  }
}
const router = () => `--router=127.0.0.1:${stack.routers[0].port}`;
const authsvc = () => `--authsvc=127.0.0.1:${stack.authsvcPort}`;

test('every service of the stack runs with TLS: none warns that its gRPC is open', () => {
  for (const proc of stack.procs) {
    assert.ok(!proc.lines.some((l) => l.includes('gRPC without TLS')), `${proc.name} runs without TLS`);
  }
});

test('relayctl with the operator certificate works', async () => {
  const stats = await relayctl(tlsFiles('operator'), router(), '--json', 'stats');
  assert.equal(stats.code, 0, stats.stderr);
  assert.equal(JSON.parse(stats.stdout).links, 1);
  const forget = await relayctl(tlsFiles('operator'), authsvc(), '--user=alice', 'auth', 'forget');
  assert.equal(forget.code, 0, forget.stderr);
});

test('a plaintext client is refused', async () => {
  const result = await relayctl({}, router(), 'stats');
  assert.equal(result.code, 1);
  assert.match(result.stderr, /did not answer/);
});

test('a client whose certificate another CA signed is refused', async () => {
  const foreign = { ca: tlsFiles('operator').ca, cert: join(foreignDir, 'operator.pem'), key: join(foreignDir, 'operator.key') };
  const result = await relayctl(foreign, router(), 'stats');
  assert.equal(result.code, 1);
  assert.match(result.stderr, /did not answer/);
  assert.doesNotMatch(result.stdout, /links/);
});

test("a gateway's certificate may not call RouterAdmin (Watch included) or authsvc's Forget and GetStats", async () => {
  const admin = await relayctl(tlsFiles('gateway'), router(), 'kick', 'alice');
  assert.equal(admin.code, 1);
  assert.match(admin.stderr, /is for the operator role/);
  const watch = await relayctl(tlsFiles('gateway'), router(), 'watch');
  assert.equal(watch.code, 1);
  assert.match(watch.stderr, /RouterAdmin\.Watch is for the operator role/);
  const forget = await relayctl(tlsFiles('gateway'), authsvc(), '--user=alice', 'auth', 'forget');
  assert.equal(forget.code, 1);
  assert.match(forget.stderr, /Auth\.Forget is for the operator role/);
  const stats = await relayctl(tlsFiles('gateway'), authsvc(), 'auth', 'stats');
  assert.equal(stats.code, 1);
  assert.match(stats.stderr, /Auth\.GetStats is for the operator role/);
});

test("an operator's certificate may not open a link or verify tokens: a gateway holding one never gets ready", async () => {
  const gw = startProcess('gateway-operator-cert', join(binDir, 'relay-gateway'), [
    '--listen=127.0.0.1:0', `--router_addrs=127.0.0.1:${stack.routers[0].port}`, `--authsvc_addr=127.0.0.1:${stack.authsvcPort}`,
    `--session_secret_file=${stack.secretFile}`, `--catalogue=${stack.catalogueFile}`, ...tlsArgs('operator')]);
  try {
    const port = await gw.listeningPort();
    await gw.waitForLine((l) => l.includes('router link ended') && l.includes('Router.OpenLink is for the gateway role'), 'the link refused');
    assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 503);
    // Its token checks are refused by authsvc too: the agent is told the service is unavailable,
    // never let in.
    const res = await fetch(`http://127.0.0.1:${port}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: 'Bearer fwa_' + '0'.repeat(64) },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    assert.equal(res.status, 503);
  } finally {
    await gw.stop();
  }
});

// What the router's link port says to a client holding files (an empty object: plaintext):
// the bytes it sent before it closed, or, if it did not close, once 4 bytes came. With then,
// once 4 bytes came, then(socket) runs and the answer waits for the close.
async function linkAnswer(files, then) {
  const { readFileSync } = await import('node:fs');
  const net = await import('node:net');
  const tls = await import('node:tls');
  const port = stack.routers[0].linkPort;
  return new Promise((resolve) => {
    let got = Buffer.alloc(0);
    const socket = files.ca
      ? tls.connect({ host: '127.0.0.1', port, ca: readFileSync(files.ca), cert: readFileSync(files.cert), key: readFileSync(files.key) })
      : net.connect({ host: '127.0.0.1', port }, () => socket.write('GET / HTTP/1.1\r\n\r\n'));
    socket.on('data', (d) => {
      got = Buffer.concat([got, d]);
      if (got.length >= 4 && !then) { socket.destroy(); resolve({ closed: false, got }); }
      if (got.length >= 4 && then && !socket.thenRan) { socket.thenRan = true; then(socket); }
    });
    socket.on('error', () => {});
    socket.on('close', () => resolve({ closed: true, got }));
  });
}

test("the link port admits gateways' certificates only: an operator's, a stranger's and plaintext are closed unanswered", async () => {
  // A gateway's certificate is accepted: the router's first frame, empty, says so.
  const gateway = await linkAnswer(tlsFiles('gateway'));
  assert.deepEqual([...gateway.got.subarray(0, 4)], [0, 0, 0, 0]);
  // An operator's is refused after the handshake, and the router says why.
  const operator = await linkAnswer(tlsFiles('operator'));
  assert.equal(operator.closed, true);
  assert.equal(operator.got.length, 0);
  await stack.routers[0].waitForLine((l) => l.includes('link refused') && l.includes('"role":"operator"'), 'the router to say so');
  // A gateway certificate from another CA fails the handshake; plaintext is not TLS.
  const foreign = (role) => ({ ca: join(foreignDir, 'ca.pem'), cert: join(foreignDir, `${role}.pem`), key: join(foreignDir, `${role}.key`) });
  const stranger = await linkAnswer({ ...foreign('gateway'), ca: tlsFiles('gateway').ca });
  assert.equal(stranger.closed, true);
  assert.equal(stranger.got.length, 0);
  const plain = await linkAnswer({});
  assert.equal(plain.closed, true);
  assert.equal(plain.got.length, 0);
});

test('a link frame that announces more than 64 MiB ends that link alone', async () => {
  const header = Buffer.alloc(4);
  header.writeUInt32BE(100 * 1024 * 1024);
  const answer = await linkAnswer(tlsFiles('gateway'), (socket) => socket.write(header));
  assert.equal(answer.closed, true);
  await stack.routers[0].waitForLine((l) => l.includes('gateway unlinked') && l.includes('beyond the limit'), 'the router to end it');
  // The stack's own gateways are still linked and ready.
  for (const g of stack.gateways) assert.equal((await fetch(`http://127.0.0.1:${g.port}/readyz`)).status, 200);
});

test("connections that never finish a handshake cannot keep a gateway off the link port", async () => {
  // More idle connections than the router holds links (1,024): anyone who reaches the port
  // can open them, without a certificate.
  const net = await import('node:net');
  const port = stack.routers[0].linkPort;
  const idle = [];
  let closed = 0;
  for (let i = 0; i < 1100; i++) {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.on('error', () => {});
    socket.on('close', () => { closed++; });
    idle.push(socket);
  }
  try {
    // The router keeps the newest 64 handshakes and drops the older ones.
    await waitUntil(() => closed >= 1100 - 64, 'the router to drop the older idle connections');
    await stack.routers[0].waitForLine((l) => l.includes('too many link handshakes under way; dropping the oldest'), 'the router to say so');
    // A gateway's certificate is still admitted: the router's first frame, empty, says so.
    const gateway = await linkAnswer(tlsFiles('gateway'));
    assert.deepEqual([...gateway.got.subarray(0, 4)], [0, 0, 0, 0]);
    for (const g of stack.gateways) assert.equal((await fetch(`http://127.0.0.1:${g.port}/readyz`)).status, 200);
  } finally {
    for (const socket of idle) socket.destroy();
  }
});

test('a private key readable by others is refused at start, with the fix', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'relay-open-key-'));
  try {
    const files = tlsFiles('router');
    copyFileSync(files.key, join(dir, 'router.key'));
    chmodSync(join(dir, 'router.key'), 0o644);
    const router = startProcess('router-open-key', join(binDir, 'relay-router'), [
      '--listen=127.0.0.1:0', '--link_listen=127.0.0.1:0', `--grpc_tls_ca=${files.ca}`, `--grpc_tls_cert=${files.cert}`, `--grpc_tls_key=${join(dir, 'router.key')}`]);
    await router.exitPromise;
    assert.notEqual(router.exitCode, 0);
    assert.ok(router.lines.some((l) => /readable by other users; run: chmod 600/.test(l)), router.lines.join('\n'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('without TLS flags a service warns loudly at start, and serves plaintext callers', async () => {
  const router = startProcess('router-plaintext', join(binDir, 'relay-router'), ['--listen=127.0.0.1:0', '--link_listen=127.0.0.1:0'], {
    env: { RELAY_GRPC_TLS_CA: '', RELAY_GRPC_TLS_CERT: '', RELAY_GRPC_TLS_KEY: '' },
  });
  try {
    const port = await router.listeningPort();
    await router.waitForLine((l) => l.includes('gRPC without TLS') && l.includes('open to anyone'), 'the warning');
    const stats = await relayctl({}, `--router=127.0.0.1:${port}`, '--json', 'stats');
    assert.equal(stats.code, 0, stats.stderr);
    assert.equal(JSON.parse(stats.stdout).links, 0);
  } finally {
    await router.stop();
  }
});

test('a secret file readable by others, or too short, is refused at start with the fix', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'relay-secrets-'));
  const gatewayWith = async (name, secret, mode) => {
    const file = join(dir, name);
    writeFileSync(file, secret, { mode });
    chmodSync(file, mode);
    const gw = startProcess(`gateway-${name}`, join(binDir, 'relay-gateway'), [
      '--listen=127.0.0.1:0', `--router_addrs=127.0.0.1:${stack.routers[0].port}`, `--authsvc_addr=127.0.0.1:${stack.authsvcPort}`,
      `--session_secret_file=${file}`, `--catalogue=${stack.catalogueFile}`, ...tlsArgs('gateway')]);
    await gw.exitPromise;
    assert.notEqual(gw.exitCode, 0);
    return gw.lines.join('\n');
  };
  try {
    assert.match(await gatewayWith('open.secret', 'a'.repeat(64), 0o644), /readable by other users; run: chmod 600/);
    assert.match(await gatewayWith('short.secret', 'short', 0o600), /fewer than 32 characters; make a new one: head -c 32/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the host API over https: verified against --api_ca, and refused when its certificate is not trusted', async () => {
  // nginx terminates TLS in front of the reference host API with a certificate for 127.0.0.1.
  const proxy = await startTlsProxy(stack.dir, stack.hostapi.port, tlsFiles('router'));
  const base = `https://127.0.0.1:${proxy.port}/api/index.php`;
  const started = [proxy];
  // An authsvc for the https host API, and a gateway that asks it.
  const relayVia = async (name, extra) => {
    const authsvc = startProcess(`authsvc-${name}`, join(binDir, 'relay-authsvc'), [
      '--listen=127.0.0.1:0', `--api_base=${base}`, `--relay_key_file=${stack.relayKeyFile}`, ...extra, ...tlsArgs('authsvc')]);
    started.push(authsvc);
    const authPort = await authsvc.listeningPort();
    const gw = startProcess(`gateway-${name}`, join(binDir, 'relay-gateway'), [
      '--listen=127.0.0.1:0', `--router_addrs=127.0.0.1:${stack.routers[0].port}`, `--authsvc_addr=127.0.0.1:${authPort}`,
      `--session_secret_file=${stack.secretFile}`, `--catalogue=${stack.catalogueFile}`, ...tlsArgs('gateway')]);
    started.push(gw);
    const port = await gw.listeningPort();
    await waitUntil(async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200, `${gw.name} ready`);
    return { authsvc, url: `http://127.0.0.1:${port}/mcp` };
  };
  const initialize = (url, token) => fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
  });
  try {
    const token = await stack.mintToken('alice');
    const trusted = await relayVia('https', [`--api_ca=${tlsFiles('router').ca}`]);
    assert.equal((await initialize(trusted.url, token)).status, 200);
    assert.equal((await initialize(trusted.url, 'not-a-token')).status, 401);
    // The system's CAs do not know this one: no answer is taken from that host API.
    const untrusted = await relayVia('https-untrusted', []);
    assert.equal((await initialize(untrusted.url, token)).status, 503);
    await untrusted.authsvc.waitForLine((l) => l.includes('host API unavailable') && l.includes('TLS handshake'), 'authsvc to say why');
  } finally {
    await Promise.all(started.map((p) => p.stop()));
  }
});

test('message limits a link frame could not carry are refused at start, with the largest allowed', async () => {
  for (const [flag, expect] of [['--max_body_bytes=-1', /--max_body_bytes must be between 1 and 66060288 \(63 MiB\)/],
    ['--max_tab_message_bytes=40000000', /--max_tab_message_bytes must be between 1 and 33030144 \(31\.5 MiB\)/]]) {
    const gw = startProcess('gateway-limits', join(binDir, 'relay-gateway'), [
      '--listen=127.0.0.1:0', `--router_addrs=127.0.0.1:${stack.routers[0].port}`, `--authsvc_addr=127.0.0.1:${stack.authsvcPort}`,
      `--session_secret_file=${stack.secretFile}`, `--catalogue=${stack.catalogueFile}`, flag, ...tlsArgs('gateway')]);
    await gw.exitPromise;
    assert.notEqual(gw.exitCode, 0);
    assert.ok(gw.lines.some((l) => expect.test(l)), gw.lines.join('\n'));
  }
});

test('a gRPC target URI in --router_addrs is refused at start, with the form to use', async () => {
  const gw = startProcess('gateway-uri', join(binDir, 'relay-gateway'), [
    '--listen=127.0.0.1:0', `--router_addrs=dns:///127.0.0.1:${stack.routers[0].port}`, `--authsvc_addr=127.0.0.1:${stack.authsvcPort}`,
    `--session_secret_file=${stack.secretFile}`, `--catalogue=${stack.catalogueFile}`, ...tlsArgs('gateway')]);
  await gw.exitPromise;
  assert.notEqual(gw.exitCode, 0);
  assert.ok(gw.lines.some((l) => /--router_addrs: .*is not host:port/.test(l)), gw.lines.join('\n'));
});
