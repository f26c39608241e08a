// Starts the relay as real processes on loopback, every port chosen by the OS
// (port 0), and ends each of them by its pid. Used by every end-to-end test.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '../../..');
export const binDir = process.env.RELAY_BIN_DIR ?? join(repoRoot, 'build', 'bin');
const hostapiDir = join(repoRoot, 'hostapi');

// Mutual TLS between the services, as deployed (ARCHITECTURE.md): one CA and one certificate
// per role for this test process (scripts/make-certs.sh), removed when it exits. relayctl, run
// by the tests without flags, takes the operator's from the environment (RELAY_GRPC_TLS_*);
// every service is given its own role's with flags (which win over the environment).
const tlsDir = mkdtempSync(join(tmpdir(), 'relay-tls-'));
execFileSync('bash', [join(repoRoot, 'scripts', 'make-certs.sh'), tlsDir]);
process.on('exit', () => rmSync(tlsDir, { recursive: true, force: true }));
export const tlsFiles = (role) => ({ ca: join(tlsDir, 'ca.pem'), cert: join(tlsDir, `${role}.pem`), key: join(tlsDir, `${role}.key`) });
export const tlsArgs = (role) => {
  const files = tlsFiles(role);
  return [`--grpc_tls_ca=${files.ca}`, `--grpc_tls_cert=${files.cert}`, `--grpc_tls_key=${files.key}`];
};
{
  const operator = tlsFiles('operator');
  process.env.RELAY_GRPC_TLS_CA = operator.ca;
  process.env.RELAY_GRPC_TLS_CERT = operator.cert;
  process.env.RELAY_GRPC_TLS_KEY = operator.key;
}

// Every line a process printed, kept for assertions (e.g. that no secret was logged).
export const allLogs = [];
const sanitizerReport = /ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: UndefinedBehaviorSanitizer/;

// A started process whose output is collected line by line.
class Proc {
  constructor(name, command, args, options = {}) {
    this.name = name;
    this.lines = [];
    this.waiters = [];
    this.exited = false;
    this.group = options.group ?? false;
    this.child = spawn(command, args, {
      env: { ...process.env, ...options.env },
      stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      detached: options.group ?? false,
    });
    // Secrets a process needs in bulk (the benchmark's tickets) go by its standard input,
    // never by its arguments or a file. keepStdin: more may follow (write()).
    if (options.stdin !== undefined) {
      if (options.keepStdin) this.child.stdin.write(options.stdin);
      else this.child.stdin.end(options.stdin);
    }
    for (const stream of [this.child.stdout, this.child.stderr]) {
      let partial = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk) => {
        partial += chunk;
        const parts = partial.split('\n');
        partial = parts.pop();
        for (const line of parts) this.onLine(line);
      });
    }
    this.exitPromise = new Promise((resolveExit) => {
      this.child.on('exit', (code, signal) => {
        this.exited = true;
        this.exitCode = code;
        this.exitSignal = signal;
        for (const w of this.waiters) w.reject(new Error(`${name} exited (${code ?? signal}) before: ${w.what}\n${this.tail()}`));
        this.waiters = [];
        resolveExit();
      });
    });
  }

  onLine(line) {
    this.lines.push(line);
    allLogs.push(`${this.name}: ${line}`);
    if (process.env.RELAY_TEST_VERBOSE) process.stderr.write(`[${this.name}] ${line}\n`);
    this.waiters = this.waiters.filter((w) => {
      const match = w.test(line);
      if (match) w.resolve(match);
      return !match;
    });
  }

  // More for its standard input (started with keepStdin).
  write(text) {
    this.child.stdin.write(text);
  }

  tail() {
    return this.lines.slice(-20).join('\n');
  }

  // Resolves with the first line (past or future) for which test returns a truthy value.
  waitForLine(test, what, timeoutMs = 20000) {
    for (const line of this.lines) {
      const match = test(line);
      if (match) return Promise.resolve(match);
    }
    if (this.exited) return Promise.reject(new Error(`${this.name} has exited: ${what}\n${this.tail()}`));
    return new Promise((resolveWait, reject) => {
      const waiter = { test, what, resolve: resolveWait, reject };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`${this.name}: timed out waiting for ${what}\n${this.tail()}`));
      }, timeoutMs);
      waiter.resolve = (v) => { clearTimeout(timer); resolveWait(v); };
      waiter.reject = (e) => { clearTimeout(timer); reject(e); };
      this.waiters.push(waiter);
    });
  }

  // The relay's binaries print `listening on HOST:PORT` in the msg of their first JSON line.
  async listeningPort() {
    const match = await this.waitForLine((line) => {
      try {
        const msg = JSON.parse(line).msg ?? '';
        return /^listening on .*:(\d+)$/.exec(msg);
      } catch {
        return null;
      }
    }, 'listening on HOST:PORT');
    return Number(match[1]);
  }

  // Ends the process by its pid (a php -S server with its workers: by its process group).
  async stop(signal = 'SIGTERM') {
    if (this.exited) return;
    const target = this.group ? -this.child.pid : this.child.pid;
    try { process.kill(target, signal); } catch {}
    const timer = setTimeout(() => { try { process.kill(target, 'SIGKILL'); } catch {} }, 5000);
    await this.exitPromise;
    clearTimeout(timer);
  }
}

// Polls cond (async) until it holds, or fails after timeoutMs.
export async function waitUntil(cond, what, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await cond()) return;
    } catch {}
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// Stops a process (SIGSTOP) and resolves once every one of its threads has stopped. kill()
// returns once the signal is queued: the kernel wakes one thread to take it, and that thread
// then stops the others. On a busy machine it may wait for a core for milliseconds, and
// meanwhile another thread of the process can still read from a socket and answer.
export async function stopProcess(pid) {
  process.kill(pid, 'SIGSTOP');
  await waitUntil(() => readdirSync(`/proc/${pid}/task`).every((tid) => {
    // The state follows the command's closing parenthesis: "pid (comm) S ...".
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    return /^[tT]$/.test(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
  }), `process ${pid} to stop`);
}

export function startProcess(name, command, args, options = {}) {
  return new Proc(name, command, args, options);
}

// The reference host API under `php -S` on port 0, with its own data folder.
export async function startHostApi(dir, relayKeyFile, env = {}, port = 0) {
  const proc = startProcess('hostapi', 'php', ['-S', `127.0.0.1:${port}`, '-t', join(hostapiDir, 'public'), join(hostapiDir, 'serve.php')], {
    env: { HOSTAPI_DATA: join(dir, 'hostapi-data'), HOSTAPI_RELAY_KEY_FILE: relayKeyFile, ...env },
    group: true,
  });
  const match = await proc.waitForLine((l) => /Development Server \(http:\/\/127\.0\.0\.1:(\d+)\) started/.exec(l), 'php -S to start');
  proc.port = Number(match[1]);
  proc.base = `http://127.0.0.1:${proc.port}/api/index.php`;
  return proc;
}

export const defaultCatalogue = {
  tools: [
    {
      name: 'get_view',
      description: 'What the person sees in the editor now.',
      inputSchema: { type: 'object', properties: {} },
    },
    {
      name: 'set_title',
      description: 'Changes the document title (undoable).',
      inputSchema: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] },
    },
  ],
};

// The whole relay: host API, authsvc, router(s), gateway(s).
// forgetHook: the host API tells authsvc of each revocation at once (POST /forget).
export async function startStack({ gateways = 1, routers = 1, users = ['alice', 'bob'], gatewayArgs = [], secondGatewayThreads = 2, routerArgs = [], authsvcArgs = [], hostapiEnv = {}, catalogue = defaultCatalogue, forgetHook = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'relay-e2e-'));
  const relayKeyFile = join(dir, 'relay.key');
  const secretFile = join(dir, 'session.secret');
  const catalogueFile = join(dir, 'tools.json');
  writeFileSync(relayKeyFile, randomBytes(32).toString('hex') + '\n', { mode: 0o600 });
  writeFileSync(secretFile, randomBytes(32).toString('hex') + '\n', { mode: 0o600 });
  writeFileSync(catalogueFile, JSON.stringify(catalogue));
  mkdirSync(join(dir, 'hostapi-data'), { mode: 0o700 });

  const stack = { dir, procs: [], gateways: [], routers: [], relayKeyFile, secretFile, catalogueFile, passwords: {} };
  // Every secret the test handles, so that a test can check that no log line holds one.
  stack.secrets = [readFileSync(relayKeyFile, 'utf8').trim(), readFileSync(secretFile, 'utf8').trim()];
  // Stops everything, then fails if any process ever logged a secret of this stack: every
  // test file that starts a stack checks its whole run for leaked tokens, tickets and keys.
  stack.stop = async () => {
    await Promise.all(stack.procs.map((p) => p.stop()));
    rmSync(dir, { recursive: true, force: true });
    for (const proc of stack.procs) {
      for (const [i, line] of proc.lines.entries()) {
        if (stack.secrets.some((secret) => line.includes(secret))) {
          throw new Error(`${proc.name} logged a secret: ${line.slice(0, 60)}…`);
        }
        // Under ASan and UBSan (build-asan/) a report is a failure of the test file.
        if (sanitizerReport.test(line)) {
          throw new Error(`${proc.name}: sanitizer report:\n${proc.lines.slice(i, i + 40).join('\n')}`);
        }
      }
    }
  };
  try {
    hostapiEnv = { ...hostapiEnv, HOSTAPI_DATA: join(dir, 'hostapi-data'), HOSTAPI_RELAY_KEY_FILE: relayKeyFile };
    // "name" or "name:role" (the account's role, which its tokens and tabs carry).
    for (const entry of users) {
      const [user, role] = entry.split(':');
      const password = randomBytes(12).toString('hex');
      execFileSync(join(hostapiDir, 'bin', 'hostapi'), ['user:add', user, password, ...(role ? [role] : [])], { env: { ...process.env, ...hostapiEnv }, stdio: ['ignore', 'ignore', 'pipe'] });
      stack.passwords[user] = password;
    }
    stack.hostapiEnv = hostapiEnv;
    stack.hostapi = await startHostApi(dir, relayKeyFile, hostapiEnv);
    stack.procs.push(stack.hostapi);

    stack.authsvc = startProcess('authsvc', join(binDir, 'relay-authsvc'), [
      '--listen=127.0.0.1:0', '--metrics_listen=127.0.0.1:0', `--api_base=${stack.hostapi.base}`,
      `--relay_key_file=${relayKeyFile}`, ...tlsArgs('authsvc'),
      ...(typeof authsvcArgs === 'function' ? authsvcArgs(stack) : authsvcArgs),
    ]);
    stack.procs.push(stack.authsvc);
    stack.authsvcPort = await stack.authsvc.listeningPort();
    const authMetrics = await stack.authsvc.waitForLine((l) => /"msg":"metrics listening".*"port":(\d+)/.exec(l), 'authsvc metrics port');
    stack.authsvc.metricsUrl = `http://127.0.0.1:${authMetrics[1]}/metrics`;
    if (forgetHook) {
      writeFileSync(join(dir, 'hostapi-data', 'relay-forget-urls'), `http://127.0.0.1:${authMetrics[1]}/forget\n`, { mode: 0o600 });
    }

    for (let i = 0; i < routers; i++) {
      const router = startProcess(`router${i}`, join(binDir, 'relay-router'), ['--listen=127.0.0.1:0', '--link_listen=127.0.0.1:0', '--metrics_listen=127.0.0.1:0', ...tlsArgs('router'), ...routerArgs]);
      stack.procs.push(router);
      router.args = router.child.spawnargs.slice(1);
      router.port = await router.listeningPort();
      router.linkPort = Number((await router.waitForLine((l) => /"msg":"links listening".*"port":(\d+)/.exec(l), 'router link port'))[1]);
      const metrics = await router.waitForLine((l) => /"msg":"metrics listening".*"port":(\d+)/.exec(l), 'router metrics port');
      router.metricsUrl = `http://127.0.0.1:${metrics[1]}/metrics`;
      stack.routers.push(router);
    }
    const routerAddrs = stack.routers.map((r) => `127.0.0.1:${r.port}`).join(',');
    for (let i = 0; i < gateways; i++) {
      const gateway = startProcess(`gateway${i + 1}`, join(binDir, 'relay-gateway'), [
        '--listen=127.0.0.1:0',
        `--router_addrs=${routerAddrs}`,
        `--authsvc_addr=127.0.0.1:${stack.authsvcPort}`,
        `--session_secret_file=${secretFile}`,
        `--catalogue=${catalogueFile}`,
        '--allowed_origins=http://editor.test',
        ...tlsArgs('gateway'),
        // The second gateway deals its connections out to two I/O threads, so
        // that the suites run the pool's paths between threads too.
        ...(i === 1 ? [`--threads=${secondGatewayThreads}`] : []),
        ...(typeof gatewayArgs === 'function' ? gatewayArgs(i, stack) : gatewayArgs),
      ]);
      stack.procs.push(gateway);
      gateway.args = gateway.child.spawnargs.slice(1);
      gateway.port = await gateway.listeningPort();
      gateway.url = `http://127.0.0.1:${gateway.port}/mcp`;
      gateway.wsUrl = `ws://127.0.0.1:${gateway.port}/mcp`;
      stack.gateways.push(gateway);
    }
    await Promise.all(stack.gateways.map((g) => waitUntil(async () => (await fetch(`http://127.0.0.1:${g.port}/readyz`)).status === 200, `${g.name} ready`)));
    // The host API's configuration of the relay the editor page may use (hostapi/README.md).
    writeFileSync(join(dir, 'hostapi-data', 'relay-urls'), stack.gateways.map((g) => g.wsUrl).join('\n') + '\n', { mode: 0o600 });
  } catch (error) {
    await stack.stop();
    throw error;
  }

  // Starts gateway i again, with its arguments, on its port (after a kill or a stop).
  stack.restartGateway = async (i) => {
    const old = stack.gateways[i];
    const args = old.args.map((a) => a.startsWith('--listen=') ? `--listen=127.0.0.1:${old.port}` : a);
    const gateway = startProcess(`${old.name}b`, join(binDir, 'relay-gateway'), args);
    stack.procs.push(gateway);
    Object.assign(gateway, { args, port: await gateway.listeningPort(), url: old.url, wsUrl: old.wsUrl });
    stack.gateways[i] = gateway;
    await waitUntil(async () => (await fetch(`http://127.0.0.1:${gateway.port}/readyz`)).status === 200, `${gateway.name} ready`);
    return gateway;
  };

  // Starts router i again, with its arguments, on its ports (after a kill or a stop); with
  // cpu, on that CPU alone from its first instruction (taskset execs the router, same pid).
  stack.restartRouter = async (i, { cpu = null } = {}) => {
    const old = stack.routers[i];
    const args = old.args.map((a) => a.startsWith('--listen=') ? `--listen=127.0.0.1:${old.port}`
      : a.startsWith('--link_listen=') ? `--link_listen=127.0.0.1:${old.linkPort}` : a);
    const binary = join(binDir, 'relay-router');
    const router = cpu === null ? startProcess(`${old.name}b`, binary, args)
      : startProcess(`${old.name}b`, 'taskset', ['-c', String(cpu), binary, ...args]);
    router.args = args;
    stack.procs.push(router);
    router.port = await router.listeningPort();
    router.linkPort = Number((await router.waitForLine((l) => /"msg":"links listening".*"port":(\d+)/.exec(l), 'router link port'))[1]);
    const metrics = await router.waitForLine((l) => /"msg":"metrics listening".*"port":(\d+)/.exec(l), 'router metrics port');
    router.metricsUrl = `http://127.0.0.1:${metrics[1]}/metrics`;
    stack.routers[i] = router;
    return router;
  };

  // Stops the host API; restart() brings it back on the same port.
  stack.stopHostApi = async () => { await stack.hostapi.stop(); };
  stack.restartHostApi = async () => {
    const port = stack.hostapi.port;
    stack.hostapi = await startHostApi(dir, relayKeyFile, hostapiEnv, port);
    stack.procs.push(stack.hostapi);
  };
  // How many requests the host API received on a route (it counts them itself).
  stack.hostApiCount = (route) => {
    try {
      return Number(readFileSync(join(dir, 'hostapi-data', 'counters', route.replace('/', '-')), 'utf8').trim());
    } catch {
      return 0;
    }
  };

  // A browser-like session with the host API: login, then cookie-authenticated calls.
  stack.login = async (user) => {
    const res = await fetch(`${stack.hostapi.base}?r=login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: user, password: stack.passwords[user] }),
    });
    if (res.status !== 200) throw new Error(`login ${user}: ${res.status} ${await res.text()}`);
    const cookie = res.headers.get('set-cookie').split(';')[0];
    return async (route, init = {}) => fetch(`${stack.hostapi.base}?r=${route}`, {
      ...init,
      headers: { 'content-type': 'application/json', cookie, ...(init.headers ?? {}) },
    });
  };
  stack.tokenIds = new Map();
  // Revokes a token as the person would in the editor's account menu.
  stack.revokeToken = async (token) => {
    const { user, id } = stack.tokenIds.get(token);
    const api = await stack.login(user);
    const res = await api(`agent-tokens/${id}`, { method: 'DELETE' });
    if (res.status !== 204) throw new Error(`revoke: ${res.status}`);
  };
  // A fresh agent token, minted as the person would in the editor's account menu.
  stack.mintToken = async (user, name = 'e2e') => {
    const api = await stack.login(user);
    const res = await api('agent-tokens', { method: 'POST', body: JSON.stringify({ name }) });
    if (res.status !== 201) throw new Error(`mint token: ${res.status} ${await res.text()}`);
    const { token, id } = await res.json();
    stack.secrets.push(token);
    stack.tokenIds.set(token, { user, id });
    return token;
  };
  // A one-time ticket for a tab, as the editor's page would get it.
  stack.ticket = async (user) => {
    const api = await stack.login(user);
    const res = await api('agent/ticket', { method: 'POST', body: '{}' });
    if (res.status !== 200) throw new Error(`ticket: ${res.status} ${await res.text()}`);
    const { ticket } = await res.json();
    stack.secrets.push(ticket);
    return ticket;
  };
  return stack;
}
