// The multi-container deployment, started for real (issue 26): the image built from the
// Dockerfile as users build it, `compose up` with three gateways (podman standing in for Docker,
// scripts/containers.sh), and then, through the published ports only, what a user does and
// what an operator meets: a call from the SDK client to the demo editor open in Chromium, relayctl
// from the "ops" profile, Prometheus from the "metrics" profile, a gateway and a router shard
// killed, every gateway restarted in turn under load, the project taken down and up again.
// Prints its figures; asserts what users see.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { chromium } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { repoRoot, waitUntil } from '../e2e/lib/stack.mjs';
import { MemoryProvider, personAt } from '../e2e/lib/oauth.mjs';
// Compose publishes fixed host ports: ones the OS has free now are picked for the run.
import { freePort } from '../e2e/lib/nginx.mjs';

const CHROMIUM = '/usr/bin/chromium';
const project = `relay-test-${process.pid}`;
const figures = {};
let ports, env, browser, page;


// scripts/containers.sh with this run's project, ports and demo password; throws with its output.
function containers(args, { allowFail = false, timeout = 1800000, env: runEnv = env } = {}) {
  const started = Date.now();
  const r = spawnSync('bash', [join(repoRoot, 'scripts', 'containers.sh'), ...args], { env: runEnv, encoding: 'utf8', timeout, maxBuffer: 64 << 20 });
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  if (r.status !== 0 && !allowFail) {
    throw new Error(`containers.sh ${args.join(' ')} exited ${r.status ?? r.signal}:\n${out.slice(-4000)}`);
  }
  return { status: r.status, out, seconds: (Date.now() - started) / 1000 };
}
const compose = (...args) => containers(['compose', ...args]);
// out: what the command printed (podman's own warnings, on stderr, are in err).
const podman = (...args) => {
  const r = spawnSync('podman', args, { encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}`.trim(), err: `${r.stderr}`.trim() };
};
// The containers of a service, by compose's labels.
const containersOf = (service) => podman('ps', '-q', '--filter', `label=com.docker.compose.project=${project}`,
  '--filter', `label=com.docker.compose.service=${service}`).out.split('\n').filter(Boolean);
const logsOf = (container) => { const r = podman('logs', container); return `${r.out}\n${r.err}`; };
const inside = (container, script) => podman('exec', container, 'sh', '-c', script);
// A crash, as a machine or the kernel would cause it: the container's main process is killed
// from outside (compose's restart policy brings it back; `podman kill` would be an operator's
// stop, which the policy leaves alone).
function crash(container) {
  const pid = Number(podman('inspect', '--format', '{{.State.Pid}}', container).out);
  assert.ok(pid > 0, `the main process of ${container}`);
  process.kill(pid, 'SIGKILL');
}

const api = (route, init = {}) => fetch(`http://127.0.0.1:${ports.hostapi}/api/index.php?r=${route}`, init);
async function login() {
  const res = await api('login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'demo', password: env.DEMO_PASSWORD }) });
  assert.equal(res.status, 200, 'the demo account logs in');
  const cookie = res.headers.get('set-cookie').split(';')[0];
  return (route, init = {}) => api(route, { ...init, headers: { 'content-type': 'application/json', cookie, ...(init.headers ?? {}) } });
}
async function mintToken(name) {
  const res = await (await login())('agent-tokens', { method: 'POST', body: JSON.stringify({ name }) });
  assert.equal(res.status, 201);
  return (await res.json()).token;
}
const mcpUrl = () => `http://127.0.0.1:${ports.http}/mcp`;
// Every agent made is closed at the end, whatever failed: an open GET stream would keep the
// test process alive.
const agents = [];
async function connectAgent(token) {
  const client = new Client({ name: 'containers-agent', version: '1.0.0' });
  agents.push(client);
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl()), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return client;
}
// Right after `up`, authsvc and the host API may still be starting: the relay says so (503,
// "try again shortly"), never 401, and the agent is let in as soon as they answer. Only that
// 503 is waited out; any other refusal fails the test.
async function connectWhenAuthAnswers(token, what) {
  const deadline = Date.now() + 60000;
  for (;;) {
    try {
      return await connectAgent(token);
    } catch (e) {
      if (e.code !== 503) throw e;
      if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}: ${e.message}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
const ready = async () => {
  try {
    return (await fetch(`http://127.0.0.1:${ports.http}/readyz`)).status === 200;
  } catch {
    return false;
  }
};
const relayctl = (...args) => compose('--profile', 'ops', 'run', '--rm', '-T', 'relayctl', ...args).out;
// relayctl --json tabs prints one JSON array (docker-compose may print its own lines around it).
const tabsNow = () => JSON.parse(relayctl('--json', 'tabs').split('\n').find((l) => l.startsWith('[')) ?? '[]');

// The Chromium tab: the demo editor, logged in as demo, the agent switched on.
async function openEditor() {
  page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${ports.hostapi}/editor/?relay=ws://127.0.0.1:${ports.http}/mcp`);
  await page.fill('#username', 'demo');
  await page.fill('#password', env.DEMO_PASSWORD);
  await page.click('#login-button');
  await page.fill('#title', 'Containers');
  await page.check('#agent-switch');
  await waitForConnected();
}
const waitForConnected = (timeout = 60000) => page.waitForFunction(() => /^Connected as/.test(document.querySelector('#status').textContent), null, { timeout });

// A run killed from outside (ctest's timeout, a machine stopped mid-run) leaves its project up,
// and with it the DNAT rules of its published ports: every later connection to 127.0.0.1 on such
// a port, whoever listens there now, goes to a container (this once failed a unit test's gRPC
// server on an ephemeral port). So each run first takes down the projects of runs whose test
// process is gone.
function removeAbandonedProjects() {
  const names = [['ps', '-a', '--format', '{{index .Labels "com.docker.compose.project"}}'],
    ['network', 'ls', '--format', '{{.Name}}'], ['volume', 'ls', '--format', '{{.Name}}']]
    .flatMap((args) => { const r = spawnSync('podman', args, { encoding: 'utf8' }); return r.status === 0 ? r.stdout.split('\n') : []; });
  const alive = (pid) => { try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('containers.test.mjs'); } catch { return false; } };
  const abandoned = new Set(names.map((n) => /^relay-test-(\d+)/.exec(n)).filter((m) => m && !alive(m[1])).map((m) => m[0]));
  for (const name of abandoned) {
    console.log(`taking down ${name}, left up by a run that ended without its own clean-up`);
    containers(['down', '-v'], { allowFail: true, env: { ...env, RELAY_COMPOSE_PROJECT: name } });
  }
}

before(async () => {
  ports = { http: await freePort(), hostapi: await freePort(), prometheus: await freePort() };
  env = {
    ...process.env,
    RELAY_COMPOSE_PROJECT: project,
    RELAY_HTTP_PORT: String(ports.http),
    RELAY_HOSTAPI_PORT: String(ports.hostapi),
    RELAY_PROMETHEUS_PORT: String(ports.prometheus),
    DEMO_PASSWORD: randomBytes(9).toString('base64url'),
  };
  if (process.getuid() !== 0) throw new Error('the containers test needs root (rootful podman); it does not skip');
  removeAbandonedProjects();
  // Built as users build it (compose's --build, layer cache allowed), then up with 3 gateways.
  const built = containers(['compose', 'build']);
  figures['image build (s, layer cache allowed)'] = built.seconds;
  const upStarted = Date.now();
  containers(['up', '3']);
  await waitUntil(ready, 'the load balancer to answer /readyz', 120000);
  const token = await mintToken('first call');
  const agent = await connectWhenAuthAnswers(token, 'the account service to answer');
  // No tab yet: the call's answer is the relay's "no editor" tool error, which proves the path.
  const first = await agent.callTool({ name: 'get_view', arguments: {} });
  assert.match(first.content[0].text, /No editor is connected/);
  figures['up to the first answered call (s)'] = (Date.now() - upStarted) / 1000;
  await agent.close();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
});

after(async () => {
  await Promise.allSettled(agents.map((a) => a.close()));
  await browser?.close();
  if (env) containers(['down', '-v'], { allowFail: true });
  console.log('containers figures:', JSON.stringify(figures, null, 1));
  // For the test command's summary (scripts/test.sh prints it after ctest).
  mkdirSync(join(repoRoot, 'build'), { recursive: true });
  writeFileSync(join(repoRoot, 'build', 'containers-last.json'), JSON.stringify(figures, null, 1) + '\n');
});

test('the image: a non-root user, a health check, no compiler, under 200 MB', () => {
  const [inspect] = JSON.parse(podman('image', 'inspect', 'mcp-tab-relay:latest').out);
  assert.equal(inspect.Config.User, 'relay');
  const healthcheck = inspect.Healthcheck ?? inspect.Config.Healthcheck;
  assert.ok(healthcheck?.Test?.join(' ').includes('healthcheck.sh'), 'a HEALTHCHECK');
  const mb = inspect.Size / 1e6;
  figures['image size (MB)'] = Math.round(mb);
  assert.ok(mb < 200, `the image is ${mb.toFixed(0)} MB`);
  const compilers = podman('run', '--rm', '--entrypoint', 'sh', 'mcp-tab-relay:latest', '-c', 'for c in cc gcc g++ c++ clang; do command -v $c; done; id -un');
  assert.equal(compilers.out.trim(), 'relay', `no compiler, and its user: ${compilers.out}`);
});

// deploy/k8s as far as this machine goes (no cluster here): the manifests' images, users,
// ports and probes are the ones this deployment just proved.
test('the Kubernetes manifests run the image as the user, on the ports and with the probes proved here', () => {
  const uid = Number(podman('run', '--rm', '--entrypoint', 'id', 'mcp-tab-relay:latest', '-u').out.split('\n').pop());
  const dir = join(repoRoot, 'deploy', 'k8s');
  const objects = readdirSync(dir).filter((f) => f.endsWith('.yaml'))
    .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS()).filter(Boolean));
  const pods = objects.filter((o) => ['Deployment', 'StatefulSet'].includes(o.kind)).map((o) => [o.metadata.name, o.spec.template.spec]);
  const expected = { gateway: { http: 8080 }, router: { grpc: 7001, link: 7003, metrics: 9101 }, authsvc: { grpc: 7002, metrics: 9102 } };
  for (const [name, pod] of pods) {
    assert.equal(pod.securityContext.runAsUser, uid, `${name} runs as the image's user`);
    const [main] = pod.containers;
    assert.match(main.image, /^mcp-tab-relay/);
    const ports = Object.fromEntries(main.ports.map((p) => [p.name, p.containerPort]));
    assert.deepEqual(ports, expected[name], `${name}'s ports`);
    for (const probe of [main.readinessProbe, main.livenessProbe]) {
      assert.ok(['/healthz', '/readyz'].includes(probe.httpGet.path));
    }
  }
  // The probes' paths answer 200 inside the running containers, on those ports.
  const probe = (container, url) => inside(container, `php -r 'exit(@file_get_contents($argv[1]) === false ? 1 : 0);' ${url}`).status;
  assert.equal(probe(containersOf('gateway')[0], 'http://127.0.0.1:8080/readyz'), 0);
  assert.equal(probe(containersOf('gateway')[0], 'http://127.0.0.1:8080/healthz'), 0);
  assert.equal(probe(containersOf('router0')[0], 'http://127.0.0.1:9101/healthz'), 0);
  assert.equal(probe(containersOf('authsvc')[0], 'http://127.0.0.1:9102/healthz'), 0);
});

// compose.yml puts the relay's services on one host and asks for SCHED_BATCH
// (RELAY_SCHED_BATCH): under the container runtime's default seccomp profile and no added
// capability, every thread of each runs under it (what `chrt -p` on the host would show).
test('on one host the services run under SCHED_BATCH, every thread, as compose.yml asks', () => {
  const SCHED_BATCH = 3;
  for (const service of ['gateway', 'router0', 'router1', 'authsvc']) {
    for (const container of containersOf(service)) {
      assert.match(logsOf(container), /runs under SCHED_BATCH/, `${service} says so in its log`);
      const pid = Number(podman('inspect', '--format', '{{.State.Pid}}', container).out);
      const policies = readdirSync(`/proc/${pid}/task`).map((tid) => {
        try {
          // The policy is the 41st field of the thread's stat; the name (2nd) may hold spaces.
          return [tid, Number(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ')[38])];
        } catch {
          return null;  // a thread that ended meanwhile (gRPC's pool comes and goes)
        }
      }).filter(Boolean);
      assert.ok(policies.length > 1, `${service} has its threads`);
      for (const [tid, policy] of policies) assert.equal(policy, SCHED_BATCH, `${service}, thread ${tid}`);
    }
  }
});

test('each container holds only its own secrets, private to the service user', () => {
  const [gateway] = containersOf('gateway');
  const [router] = containersOf('router0');
  const [authsvc] = containersOf('authsvc');
  const [lb] = containersOf('lb');
  assert.notEqual(inside(gateway, 'cat /relay-key/relay.key').status, 0, 'a gateway cannot read the relay key');
  assert.notEqual(inside(gateway, 'ls /tls-ca /relay-key').status, 0);
  assert.equal(inside(lb, 'ls /tls /relay-key /session-secret 2>/dev/null; true').out, '', 'nginx holds no secret');
  for (const [container, files] of [[gateway, '/tls/gateway.key /session-secret/session.secret'], [router, '/tls/router.key'], [authsvc, '/tls/authsvc.key /relay-key/relay.key']]) {
    const modes = inside(container, `stat -c '%a %U' ${files}`).out.split('\n');
    assert.deepEqual(modes, files.split(' ').map(() => '600 relay'), `${files}: ${modes}`);
  }
});

test('an agent calls the editor open in Chromium through nginx, on another gateway than the tab', { skip: !existsSync(CHROMIUM) && 'no Chromium' }, async () => {
  await openEditor();
  const [tab] = tabsNow();
  assert.equal(tab.account, 'demo');
  const token = await mintToken('through nginx');
  const agent = await connectAgent(token);
  const view = await agent.callTool({ name: 'get_view', arguments: {} });
  assert.equal(view.structuredContent.title, 'Containers');
  // Round robin over three gateways: more calls, each on a connection of its own, then each
  // gateway's count of calls it forwarded (its /metrics, read inside its container) shows
  // calls that came in through a gateway other than the tab's and reached the tab.
  for (let i = 0; i < 6; i++) {
    const res = await fetch(mcpUrl(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', connection: 'close', authorization: `Bearer ${token}`, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'get_view' },
      body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'get_view', arguments: {}, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' } } } }),
    });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).result.structuredContent.title, 'Containers');
  }
  let elsewhere = 0;
  for (const container of containersOf('gateway')) {
    if (logsOf(container).includes(`"gateway":"${tab.gateway}"`)) continue;
    const metrics = inside(container, `php -r 'echo file_get_contents("http://127.0.0.1:8080/metrics");'`).out;
    elsewhere += Number(/^relay_gateway_forwards_total (\d+)/m.exec(metrics)?.[1] ?? 0);
  }
  assert.ok(elsewhere > 0, 'calls reached the tab through a gateway other than its own');
});

test('agents sign in: behind nginx the relay names its public URL; the SDK client signs in in Chromium and calls the editor', { skip: !existsSync(CHROMIUM) && 'no Chromium' }, async () => {
  if (!page) await openEditor();  // when this test runs alone
  // compose.yml's public URL and issuer: what agents and people use, not a container's name.
  const publicUrl = `http://localhost:${ports.http}/mcp`;
  const issuer = `http://localhost:${ports.hostapi}`;
  const metadataUrl = `http://localhost:${ports.http}/.well-known/oauth-protected-resource/mcp`;
  const metadata = await (await fetch(metadataUrl)).json();
  assert.equal(metadata.resource, publicUrl);
  assert.deepEqual(metadata.authorization_servers, [issuer]);
  const bare = await fetch(publicUrl, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
  assert.equal(bare.status, 401);
  assert.equal(bare.headers.get('www-authenticate'), `Bearer resource_metadata="${metadataUrl}"`);
  assert.equal((await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json()).issuer, issuer);

  const provider = new MemoryProvider('Containers agent');
  const transport = () => new StreamableHTTPClientTransport(new URL(publicUrl), { authProvider: provider });
  const refused = new Client({ name: 'containers-signin', version: '1.0.0' });
  await assert.rejects(refused.connect(transport()), UnauthorizedError);
  const back = await personAt(browser, provider.authorizationUrls[0], { user: 'demo', password: env.DEMO_PASSWORD });
  assert.equal(back.searchParams.get('iss'), issuer);
  await transport().finishAuth(back.searchParams.get('code'));
  const agent = new Client({ name: 'containers-signin', version: '1.0.0' });
  agents.push(agent);
  await agent.connect(transport());
  const view = await agent.callTool({ name: 'get_view', arguments: {} });
  assert.equal(view.structuredContent.title, 'Containers');
});

test('relayctl from the ops profile sees every shard; the routers answer gRPC reflection', () => {
  const tabs = relayctl('tabs');
  assert.match(tabs, /demo/);
  // Summed over both shards: each of the 3 gateways holds a link to each.
  assert.match(relayctl('stats'), /links\s+6\n/);
  const services = relayctl('reflect', 'router0:7001');
  assert.match(services, /relay\.v1\.RouterAdmin/);
  assert.match(services, /grpc\.reflection\.v1alpha\.ServerReflection/);
});

test('the metrics profile runs Prometheus, which scrapes every service', async () => {
  compose('--profile', 'metrics', 'up', '-d', '--build', 'prometheus');
  await waitUntil(async () => {
    const { data } = await (await fetch(`http://127.0.0.1:${ports.prometheus}/api/v1/targets`)).json();
    const up = data.activeTargets.filter((t) => t.health === 'up').map((t) => t.labels.job);
    return up.filter((j) => j === 'gateway').length === 3 && up.filter((j) => j === 'router').length === 2 && up.includes('authsvc');
  }, 'Prometheus to scrape 3 gateways, 2 routers and authsvc', 90000);
});

test('a gateway container killed: its tab comes back through nginx, the agent\'s session survives', { skip: !existsSync(CHROMIUM) && 'no Chromium' }, async () => {
  const agent = await connectAgent(await mintToken('survivor'));
  const [tab] = tabsNow();
  // The gateway holding the tab: the one whose log names its id.
  const holder = containersOf('gateway').find((c) => logsOf(c).includes(`"gateway":"${tab.gateway}"`));
  assert.ok(holder, 'the tab\'s gateway container');
  const killed = Date.now();
  crash(holder);
  await waitForConnected(60000);
  await waitUntil(async () => !(await agent.callTool({ name: 'get_view', arguments: {} })).isError, 'a call answered again', 60000);
  figures['tab back after its gateway was killed (s)'] = (Date.now() - killed) / 1000;
  await agent.close();
});

test('a router shard killed: its accounts fail fast and come back', async () => {
  const agent = await connectAgent(await mintToken('shard'));
  for (const shard of ['router0', 'router1']) {
    const [container] = containersOf(shard);
    crash(container);
  }
  const failed = await agent.callTool({ name: 'get_view', arguments: {} });
  assert.equal(failed.isError, true);
  assert.match(failed.content[0].text, /relay is restarting|No editor/);
  const killed = Date.now();
  await waitUntil(async () => !(await agent.callTool({ name: 'get_view', arguments: {} })).isError, 'the shards back and the tab announced again', 90000);
  figures['calls answered again after both shards were killed (s)'] = (Date.now() - killed) / 1000;
  await agent.close();
});

test('every gateway restarted in turn under a steady load: no call lost', { skip: !existsSync(CHROMIUM) && 'no Chromium' }, async () => {
  if (!page) await openEditor();  // when this test runs alone
  const token = await mintToken('rolling');
  let stop = false;
  const counts = { answered: 0, refusedBeforeWork: 0, lost: 0 };
  const refusedByStatus = {};
  const lostWhy = [];
  const slowest = [];  // [ms, HTTP status] of every answer, for the figures
  // Raw 2026-07-28 calls, each on a fresh connection through nginx: a 503 from a draining
  // gateway is refused before any work (Retry-After) and is sent again, as a client should.
  const load = (async () => {
    let id = 0;
    while (!stop) {
      for (;;) {
        let res;
        const sent = Date.now();
        try {
          res = await fetch(mcpUrl(), {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${token}`, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'get_view', connection: 'close' },
            body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name: 'get_view', arguments: {}, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'load', version: '1' } } } }),
          });
        } catch (e) {
          counts.lost++;
          lostWhy.push(String(e));
          break;
        }
        // 502/504: nginx reached no gateway (a restarted one's old address); 503: a draining
        // gateway refused it before any work. Each is sent again, as a client should.
        slowest.push([Date.now() - sent, res.status]);
        if (res.status === 503 || res.status === 502 || res.status === 504) {
          counts.refusedBeforeWork++;
          refusedByStatus[res.status] = (refusedByStatus[res.status] ?? 0) + 1;
          await res.arrayBuffer();
          // A client backs off before it sends again (the 503 says Retry-After: 1; less here,
          // so that the load stays steady).
          await new Promise((resolve) => setTimeout(resolve, 50));
          continue;
        }
        const body = await res.json();
        if (res.status === 200 && body.result && !body.result.isError) counts.answered++;
        // The tab was between gateways, or its gateway was draining: it never ran the call.
        else if ((body.result?.isError && /No editor is connected/.test(body.result.content[0].text)) ||
          /shutting down; try again/.test(body.error?.message ?? '')) counts.refusedBeforeWork++;
        else {
          counts.lost++;
          lostWhy.push(JSON.stringify(body).slice(0, 200));
        }
        break;
      }
    }
  })();
  for (const gateway of containersOf('gateway')) {
    // The tab's own gateway closes it with 1001 once its calls are done: it must come back
    // (its status names a new tab id); the others only drain agents' requests.
    const [tab] = tabsNow();
    const holder = tab && logsOf(gateway).includes(`"gateway":"${tab.gateway}"`);
    const statusBefore = await page.textContent('#status');
    podman('restart', '--time', '15', gateway);
    try {
      if (holder) {
        await page.waitForFunction((previous) => {
          const now = document.querySelector('#status').textContent;
          return /^Connected as/.test(now) && now !== previous;
        }, statusBefore, { timeout: 60000 });
      }
      await waitUntil(ready, 'the load balancer to answer /readyz', 30000);
    } catch (error) {
      const status = await page.textContent('#status');
      throw new Error(`the tab did not come back after ${gateway} restarted: "${status}"\nlb: ${logsOf(containersOf('lb')[0]).slice(-1500)}`);
    }
  }
  // Enough calls after the last restart too.
  const answeredAtEnd = counts.answered;
  await waitUntil(() => counts.answered >= answeredAtEnd + 20, '20 more calls answered after the restarts', 60000);
  stop = true;
  await load;
  figures['rolling restart: calls answered'] = counts.answered;
  figures['rolling restart: sent again after a refusal'] = counts.refusedBeforeWork;
  figures['rolling restart: calls lost'] = counts.lost;
  figures['rolling restart: refusals by HTTP status'] = JSON.stringify(refusedByStatus);
  assert.equal(counts.lost, 0, lostWhy.join('\n'));
  slowest.sort((x, y) => y[0] - x[0]);
  figures['rolling restart: slowest answers (ms, status)'] = JSON.stringify(slowest.slice(0, 5));
  assert.ok(counts.answered > 20, `only ${counts.answered} calls answered; the slowest: ${JSON.stringify(slowest.slice(0, 5))}`);
});

test('compose down and up again: the demo account, its tokens and the certificates survive', async () => {
  const token = await mintToken('kept');
  const fingerprint = () => inside(containersOf('router0')[0], 'openssl x509 -noout -fingerprint -sha256 -in /tls/ca.pem').out;
  const before = fingerprint();
  compose('down');
  containers(['up', '3']);
  await waitUntil(ready, 'the load balancer to answer /readyz again', 120000);
  assert.equal(fingerprint(), before, 'the same CA');
  await login();  // the same password
  const agent = await connectWhenAuthAnswers(token, 'the account service to answer again');
  const result = await agent.callTool({ name: 'get_view', arguments: {} });
  assert.notEqual(result.isError && /401|Unauthorized/.test(JSON.stringify(result)), true);
  await agent.close();
});
