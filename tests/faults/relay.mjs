// The relay on the fault topology: the host API, authsvc, two router shards (each behind
// its delaying proxy) and three gateways, each in its own namespace, with the flags
// tests/e2e/lib/stack.mjs uses (mutual TLS with scripts/make-certs.sh's certificates, port 0
// and the `listening on` lines), plus the drivers beside the gateways. Also what the fault
// runner does to them: kill -9 and restart, SIGSTOP and SIGCONT.
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { Proc } from './procs.mjs';
import { GATEWAYS, ROUTERS } from './schedule.mjs';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '../..');
export const binDir = process.env.RELAY_BIN_DIR ?? join(repoRoot, 'build', 'bin');
const hostapiDir = join(repoRoot, 'hostapi');
const execFileAsync = promisify(execFile);

export const HOSTS = ['hostapi', 'authsvc', ...ROUTERS, ...GATEWAYS];
export const ORIGIN = 'http://editor.test';

// One tool: the fault tab's `work` (its answer names the account, the nonce and the tab).
const catalogue = {
  tools: [{
    name: 'work',
    description: 'Does some work in the editor and says which tab did it.',
    inputSchema: { type: 'object', properties: { nonce: { type: 'string' }, ms: { type: 'number' } } },
  }],
};

export class Relay {
  constructor({ topo, dir, callTimeout = '10s' }) {
    this.topo = topo;
    this.dir = dir;
    this.callTimeout = callTimeout;
    this.procs = {};      // host -> its service's Proc
    this.proxies = {};    // router host -> ProxyControl
    this.drivers = {};    // gateway host -> DriverControl
    this.passwords = {};
    this.allProcs = [];   // every process started, restarts included
    this.logDir = join(dir, 'logs');
    mkdirSync(this.logDir, { recursive: true });
  }

  exec(host, argv, options = {}) {
    const proc = new Proc(options.name ?? host, this.topo.exec(host, argv), { logFile: join(this.logDir, `${options.name ?? host}.log`), ...options });
    this.allProcs.push(proc);
    return proc;
  }

  // Certificates: the servers' carry their hosts' addresses as IP SANs (make-certs.sh turns
  // an IPv4 argument into one), since the gateways check them against the address dialled.
  makeSecrets() {
    this.tlsDir = join(this.dir, 'tls');
    execFileSync('bash', [join(repoRoot, 'scripts', 'make-certs.sh'), this.tlsDir,
      this.topo.ip('authsvc'), ...ROUTERS.map((r) => this.topo.ip(r))]);
    this.relayKeyFile = join(this.dir, 'relay.key');
    this.secretFile = join(this.dir, 'session.secret');
    this.catalogueFile = join(this.dir, 'tools.json');
    writeFileSync(this.relayKeyFile, randomBytes(32).toString('hex') + '\n', { mode: 0o600 });
    writeFileSync(this.secretFile, randomBytes(32).toString('hex') + '\n', { mode: 0o600 });
    writeFileSync(this.catalogueFile, JSON.stringify(catalogue));
    this.hostapiEnv = { HOSTAPI_DATA: join(this.dir, 'hostapi-data'), HOSTAPI_RELAY_KEY_FILE: this.relayKeyFile };
    mkdirSync(this.hostapiEnv.HOSTAPI_DATA, { mode: 0o700 });
    // relayctl takes the operator's certificate from the environment.
    this.operatorEnv = {
      RELAY_GRPC_TLS_CA: join(this.tlsDir, 'ca.pem'),
      RELAY_GRPC_TLS_CERT: join(this.tlsDir, 'operator.pem'),
      RELAY_GRPC_TLS_KEY: join(this.tlsDir, 'operator.key'),
    };
  }

  tlsArgs(role) {
    return [`--grpc_tls_ca=${join(this.tlsDir, 'ca.pem')}`, `--grpc_tls_cert=${join(this.tlsDir, `${role}.pem`)}`, `--grpc_tls_key=${join(this.tlsDir, `${role}.key`)}`];
  }

  // Accounts as stack.mjs makes them (the host API's CLI), three at a time (bcrypt is slow).
  async addUsers(names) {
    const queue = [...names];
    await Promise.all([0, 1, 2].map(async () => {
      while (queue.length) {
        const name = queue.shift();
        const password = randomBytes(12).toString('hex');
        await execFileAsync(join(hostapiDir, 'bin', 'hostapi'), ['user:add', name, password], { env: { ...process.env, ...this.hostapiEnv } });
        this.passwords[name] = password;
      }
    }));
  }

  async startHostApi() {
    const ip = this.topo.ip('hostapi');
    // php -S with workers forks: its own process group, ended as a group.
    const proc = this.exec('hostapi', ['php', '-S', `${ip}:0`, '-t', join(hostapiDir, 'public'), join(hostapiDir, 'serve.php')], {
      env: { ...this.hostapiEnv, PHP_CLI_SERVER_WORKERS: '4' },
      group: true,
    });
    const match = await proc.waitForLine((l) => /Development Server \(http:\/\/[\d.]+:(\d+)\) started/.exec(l), 'php -S to start', 20000, { past: true });
    this.procs.hostapi = proc;
    this.hostapiBase = `http://${ip}:${match[1]}/api/index.php`;
  }

  async startAuthsvc() {
    const proc = this.exec('authsvc', [join(binDir, 'relay-authsvc'),
      `--listen=${this.topo.ip('authsvc')}:0`, '--metrics_listen=127.0.0.1:0',
      `--api_base=${this.hostapiBase}`, `--relay_key_file=${this.relayKeyFile}`, ...this.tlsArgs('authsvc')]);
    this.procs.authsvc = proc;
    this.authsvcAddr = `${this.topo.ip('authsvc')}:${await proc.listeningPort()}`;
  }

  // A router shard binds 127.0.0.1 in its namespace; its proxy exposes the same port numbers
  // on the host's address. A restart binds the same ports again.
  async startRouter(host, ports) {
    const proc = this.exec(host, [join(binDir, 'relay-router'),
      `--listen=127.0.0.1:${ports?.grpc ?? 0}`, `--link_listen=127.0.0.1:${ports?.link ?? 0}`,
      '--metrics_listen=127.0.0.1:0', ...this.tlsArgs('router')], { name: ports ? `${host}.${Date.now()}` : host });
    const grpc = await proc.listeningPort();
    const link = Number((await proc.waitForLine((l) => /"msg":"links listening".*"port":(\d+)/.exec(l), 'router link port', 20000, { past: true }))[1]);
    this.procs[host] = proc;
    return { grpc, link };
  }

  async startRouters() {
    this.routerPorts = {};
    for (const host of ROUTERS) {
      this.routerPorts[host] = await this.startRouter(host);
      this.proxies[host] = await ProxyControl.start(this, host, this.routerPorts[host]);
    }
    this.routerAddrs = ROUTERS.map((r) => `${this.topo.ip(r)}:${this.routerPorts[r].grpc}`);
  }

  gatewayArgs(host, port = 0) {
    return [join(binDir, 'relay-gateway'),
      `--listen=127.0.0.1:${port}`,
      `--router_addrs=${this.routerAddrs.join(',')}`,
      `--authsvc_addr=${this.authsvcAddr}`,
      `--session_secret_file=${this.secretFile}`,
      `--catalogue=${this.catalogueFile}`,
      `--allowed_origins=${ORIGIN}`,
      `--call_timeout=${this.callTimeout}`,
      ...this.tlsArgs('gateway')];
  }

  async startGateway(host, port = 0) {
    const proc = this.exec(host, this.gatewayArgs(host, port), { name: port ? `${host}.${Date.now()}` : host });
    const listening = await proc.listeningPort();
    this.procs[host] = proc;
    return listening;
  }

  async start(accountNames) {
    this.makeSecrets();
    await this.addUsers(accountNames);
    await this.startHostApi();
    await this.startAuthsvc();
    await this.startRouters();
    this.gatewayPorts = {};
    for (const host of GATEWAYS) this.gatewayPorts[host] = await this.startGateway(host);
  }

  // kill -9, then (after pauseMs) the same service again on the same ports. One at a time per
  // host: a second kill of a host whose restart is still starting (a gateway listens only once
  // its links are up, up to 5 s while a shard is partitioned) waits for that restart, then
  // kills what it started; else it would kill the dead process again and start a second one on
  // the same port (EADDRINUSE).
  killAndRestart(host, pauseMs) {
    this.restarting ??= {};
    const previous = this.restarting[host] ?? Promise.resolve();
    const run = previous.catch(() => {}).then(() => this.killAndRestartNow(host, pauseMs));
    this.restarting[host] = run;
    return run;
  }

  async killAndRestartNow(host, pauseMs) {
    const old = this.procs[host];
    old.signal('SIGKILL');
    await old.exitPromise;
    const killedAt = Date.now();
    await new Promise((r) => setTimeout(r, pauseMs));
    if (host.startsWith('gw')) await this.startGateway(host, this.gatewayPorts[host]);
    else await this.startRouter(host, this.routerPorts[host]);
    return { killedAt, restartedAt: Date.now() };
  }

  hang(host) { this.procs[host].signal('SIGSTOP'); }
  resume(host) { this.procs[host].signal('SIGCONT'); }

  // relayctl from the host API's namespace (it reaches both shards through their proxies).
  async relayctl(...args) {
    const { stdout } = await execFileAsync('ip', ['netns', 'exec', this.topo.ns('hostapi'), join(binDir, 'relayctl'),
      `--router=${this.routerAddrs.join(',')}`, ...args], { env: { ...process.env, ...this.operatorEnv } });
    return stdout;
  }

  // Every service's sanitizer reports (under build-asan/), for the final assertion.
  sanitizerReports() {
    return this.allProcs.flatMap((p) => p.sanitizerLines.map((l) => `${p.name}: ${l}`));
  }

  // The latency test's yardstick (chain.mjs): plain TCP forwarders in the relay's place,
  // from gw1 through `router`'s host (and its proxy) to gw2. Returns seq(n, tag) → durations.
  async startChain(router) {
    const start = async (host, name, args) => {
      const proc = this.exec(host, [process.execPath, join(here, 'chain.mjs'), ...args], { name, stdin: name === 'chain-client' });
      const line = await proc.waitForLine((l) => l.includes('"ready":true') && l, `${name} ready`, 10000, { past: true });
      return { proc, port: JSON.parse(line).port };
    };
    const echo = await start('gw2', 'chain-echo', ['echo']);
    const hub = await start(router, 'chain-router', ['router']);
    await this.proxies[router].command('listen', undefined, undefined, { port: hub.port });
    const routerAddr = `${this.topo.ip(router)}:${hub.port}`;
    await start('gw2', 'chain-out', ['out', routerAddr, String(echo.port)]);
    const entry = await start('gw1', 'chain-in', ['in', routerAddr]);
    const client = await start('gw1', 'chain-client', ['client', String(entry.port)]);
    return async (n, tag) => {
      const answer = client.proc.waitForLine((l) => l.includes(`"tag":"${tag}"`) && l, `chain ${tag}`, 120000);
      client.proc.send({ n, tag });
      return JSON.parse(await answer).durations;
    };
  }

  async stopAll() {
    await Promise.all(Object.values(this.drivers).map((d) => d.quit()));
    await Promise.all(Object.values(this.procs).map((p) => p.stop()));
    // The proxies, the chain and anything else still running.
    await Promise.all(this.allProcs.map((p) => p.stop()));
  }
}

// The runner's handle on one router host's proxy (proxy.mjs): commands acknowledged once
// they have taken effect.
export class ProxyControl {
  static async start(relay, host, ports) {
    const ip = relay.topo.ip(host);
    const peers = Object.fromEntries(HOSTS.map((h) => [relay.topo.ip(h), h]));
    const config = { listen: [{ host: ip, port: ports.grpc }, { host: ip, port: ports.link }], peers };
    const proc = relay.exec(host, [process.execPath, join(here, 'proxy.mjs'), JSON.stringify(config)], { name: `proxy-${host}`, stdin: true });
    await proc.waitForLine((l) => l.includes('"listening":true'), 'proxy listening', 10000, { past: true });
    return new ProxyControl(proc);
  }

  constructor(proc) {
    this.proc = proc;
    this.nextId = 1;
  }

  command(op, from, ms, extra = {}) {
    const id = this.nextId++;
    const acked = this.proc.waitForLine((l) => {
      try {
        const m = JSON.parse(l);
        return m.ack === id ? m : null;
      } catch {
        return null;
      }
    }, `proxy ack ${op}`, 5000);
    this.proc.send({ id, op, from, ms, ...extra });
    return acked;
  }
}

// The runner's handle on one driver (driver.mjs): its events go to onEvent as they come.
export class DriverControl {
  static start(relay, host, config, onEvent) {
    const file = join(relay.dir, `driver-${host}.json`);
    writeFileSync(file, JSON.stringify(config), { mode: 0o600 });
    const proc = relay.exec(host, [process.execPath, join(here, 'driver.mjs'), file], { name: `driver-${host}`, stdin: true, logStdout: false });
    const driver = new DriverControl(proc, host);
    proc.listeners.push((line) => {
      let event;
      try { event = JSON.parse(line); } catch { return; }
      if (event.ev === 'fatal') driver.fatal = event.error;
      onEvent(event);
    });
    return driver;
  }

  constructor(proc, host) {
    this.proc = proc;
    this.host = host;
  }

  // Sends a command and waits for the event that answers it.
  async request(cmd, answer, timeoutMs) {
    const waiting = this.proc.waitForLine((l) => {
      let m;
      try { m = JSON.parse(l); } catch { return null; }
      return m.ev === 'fatal' || answer(m) ? m : null;
    }, `driver ${this.host}: ${cmd?.op ?? 'ready'}`, timeoutMs);
    if (cmd) this.proc.send(cmd);
    const m = await waiting;
    if (m.ev === 'fatal') throw new Error(`driver ${this.host}: ${m.error}`);
    return m;
  }

  send(cmd) { this.proc.send(cmd); }

  async quit() {
    if (this.proc.exited) return;
    this.proc.send({ op: 'quit' });
    const timer = setTimeout(() => this.proc.signal('SIGKILL'), 5000);
    await this.proc.exitPromise;
    clearTimeout(timer);
  }
}
