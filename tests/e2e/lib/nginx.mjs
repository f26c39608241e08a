// nginx in front of gateways, as a deployment would have it: round robin, WebSocket upgrade,
// SSE unbuffered. nginx cannot report a port it picked itself, so the test asks the OS for a
// free one (bind to port 0, release) and hands it over.
import { mkdirSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { startProcess, waitUntil } from './stack.mjs';

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// nginx.conf under prefix: workers (one unless asked) in the foreground, logs to stderr, temp
// files under prefix, and the given lines inside http {}. A proxied connection takes two
// descriptors, so each worker may open as many as the process may (the bench's thousands of
// tabs).
function writeConf(prefix, http, { workers = 1, workerConnections = 4096 } = {}) {
  writeFileSync(join(prefix, 'nginx.conf'), `
worker_processes ${workers};
worker_rlimit_nofile ${workerConnections + 100};
daemon off;
pid ${prefix}/nginx.pid;
error_log stderr error;
events { worker_connections ${workerConnections}; }
http {
  access_log off;
  client_body_temp_path ${prefix}/body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
${http}
}
`, { mode: 0o600 });
}

// Starts nginx proxying to the given upstream ports. Its listen queue is as long as the machine
// allows (net.core.somaxconn), not nginx's 511: a restarted gateway's tabs reconnect within the
// same moment, and a full queue drops their SYNs, which the kernel sends again 1 s, 3 s, 7 s
// later (deploy/nginx.conf does the same). extraHeaders: lines of
// proxy_set_header (the conformance run adds the bearer). Resolves once it answers.
// workers, workerConnections: see writeConf (the bench's restart mode raises them).
// upstreamSources: connect to the gateways from that many loopback addresses (127.0.0.10 …)
// instead of one. The kernel looks for each connect's ephemeral port among those already used
// towards the same gateway, and with ten thousand connections from one address that walk makes
// nginx's CPU grow with the square of a storm (the bench's restart of 9,500 tabs: 8.7 s of it).
// pinFirst: also listen on nginx.pinnedPort, proxying there to the first gateway only (the bench's
// restart puts every tab on the gateway it kills through the same workers that deal them out
// again after it: the workers' buffers are those that held the tabs, as in a deployment).
export async function startNginx(dir, upstreamPorts, { port, extraHeaders = '', workers = 1, workerConnections = 4096, upstreamSources = 0, pinFirst = false } = {}) {
  port = port ?? await freePort();
  const pinnedPort = pinFirst ? await freePort() : 0;
  const prefix = join(dir, `nginx-${port}`);
  mkdirSync(prefix, { recursive: true });
  const servers = upstreamPorts.map((p) => `    server 127.0.0.1:${p} max_fails=1 fail_timeout=5s;`).join('\n');
  const sources = Array.from({ length: upstreamSources }, (_, i) => `    ${i === upstreamSources - 1 ? '*' : `${(100 / upstreamSources).toFixed(2)}%`} 127.0.0.${10 + i};`).join('\n');
  writeConf(prefix, `
  map $http_upgrade $connection_upgrade { default upgrade; '' ''; }
${pinFirst ? `  map $server_port $upstream_of_port { default gateways; ${pinnedPort} pinned; }` : ''}
${upstreamSources > 0 ? `  split_clients "\${remote_addr}\${remote_port}" $upstream_source {\n${sources}\n  }` : ''}
  upstream gateways {
${servers}
    keepalive 64;
  }
${pinFirst ? `  upstream pinned {
    server 127.0.0.1:${upstreamPorts[0]};
    keepalive 64;
  }` : ''}
  server {
    listen 127.0.0.1:${port}${workers > 1 ? ' reuseport' : ''} backlog=4096;${pinFirst ? `
    listen 127.0.0.1:${pinnedPort}${workers > 1 ? ' reuseport' : ''} backlog=4096;` : ''}
    client_max_body_size 5m;
    location / {
      proxy_pass http://${pinFirst ? '$upstream_of_port' : 'gateways'};
      proxy_http_version 1.1;${upstreamSources > 0 ? '\n      proxy_bind $upstream_source;' : ''}
      proxy_set_header Host $http_host;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_set_header X-Real-IP $remote_addr;
${extraHeaders}
      proxy_buffering off;
      proxy_cache off;
      proxy_read_timeout 1h;
      proxy_send_timeout 1h;
    }
  }`, { workers, workerConnections });
  const nginx = startProcess('nginx', 'nginx', ['-p', prefix, '-c', join(prefix, 'nginx.conf')]);
  nginx.port = port;
  nginx.pinnedPort = pinnedPort;
  await waitUntil(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200, 'nginx answers');
  return nginx;
}

// Starts nginx terminating TLS in front of one HTTP upstream (the host API, as a deployment
// would serve it), with files.cert and files.key. Resolves once it answers.
export async function startTlsProxy(dir, upstreamPort, files) {
  const port = await freePort();
  const prefix = join(dir, `nginx-tls-${port}`);
  mkdirSync(prefix, { recursive: true });
  writeConf(prefix, `
  server {
    listen 127.0.0.1:${port} ssl;
    ssl_certificate ${files.cert};
    ssl_certificate_key ${files.key};
    location / {
      proxy_pass http://127.0.0.1:${upstreamPort};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }`);
  const nginx = startProcess('nginx-tls', 'nginx', ['-p', prefix, '-c', join(prefix, 'nginx.conf')]);
  nginx.port = port;
  const accepts = () => new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => { socket.destroy(); resolve(true); });
    socket.on('error', () => resolve(false));
  });
  await waitUntil(accepts, 'nginx (TLS) accepts');
  return nginx;
}

// nginx answering every request with a fixed 200 and a body the size of a tool call's answer:
// the benchmark's floor (what loopback HTTP costs on this machine, with no relay behind it).
export async function startFixedAnswer(dir) {
  const port = await freePort();
  const prefix = join(dir, `nginx-fixed-${port}`);
  mkdirSync(prefix, { recursive: true });
  writeConf(prefix, `
  server {
    listen 127.0.0.1:${port};
    location / {
      default_type application/json;
      return 200 '{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello"}]}}';
    }
  }`);
  const nginx = startProcess('nginx fixed 200', 'nginx', ['-p', prefix, '-c', join(prefix, 'nginx.conf')]);
  nginx.port = port;
  nginx.url = `http://127.0.0.1:${port}/mcp`;
  await waitUntil(async () => (await fetch(nginx.url)).status === 200, 'nginx answers');
  return nginx;
}
