// The official MCP server conformance suite (@modelcontextprotocol/conformance, pinned in
// tests/package.json), default "active" suite, no expected-failures file, run against the
// relay: suite → nginx (adds the bearer, as a proxy in front of a gateway would) → gateway 2
// → router → gateway 1 → the conformance tab (tests/conformance/tab.mjs).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStack, startProcess, waitUntil } from '../e2e/lib/stack.mjs';
import { connectConformanceTab } from './tab.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const testsDir = join(here, '..');

// nginx cannot report a port it picked itself: ask the OS for a free one and hand it over.
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

let stack, nginx, tab, proxyPort;
before(async () => {
  proxyPort = await freePort();
  const origins = `http://editor.test,http://127.0.0.1:${proxyPort},http://localhost:${proxyPort}`;
  stack = await startStack({
    gateways: 2,
    users: ['conformance'],
    catalogue: JSON.parse(readFileSync(join(here, 'catalogue.json'), 'utf8')),
    gatewayArgs: (i) => (i === 1 ? [`--allowed_origins=${origins}`] : []),
  });
  tab = await connectConformanceTab(stack.gateways[0].wsUrl, await stack.ticket('conformance'));
  const token = await stack.mintToken('conformance');
  const prefix = join(stack.dir, 'nginx');
  mkdirSync(join(prefix, 'logs'), { recursive: true });
  // The token is written to a file of the test's private temporary folder, never logged.
  writeFileSync(join(prefix, 'nginx.conf'), `
worker_processes 1;
daemon off;
pid ${prefix}/nginx.pid;
error_log stderr warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${prefix}/body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
  server {
    listen 127.0.0.1:${proxyPort};
    location / {
      proxy_pass http://127.0.0.1:${stack.gateways[1].port};
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_set_header Connection "";
      proxy_set_header Authorization "Bearer ${token}";
      proxy_buffering off;
      proxy_cache off;
      proxy_read_timeout 1h;
    }
  }
}
`, { mode: 0o600 });
  nginx = startProcess('nginx', 'nginx', ['-p', prefix, '-c', join(prefix, 'nginx.conf')]);
  await waitUntil(async () => (await fetch(`http://127.0.0.1:${proxyPort}/healthz`)).status === 200, 'nginx answers');
});
after(async () => {
  tab?.close();
  await nginx?.stop();
  await stack?.stop();
});

test('the official conformance suite passes every scenario of its active server suite', async () => {
  const node = join(testsDir, 'node_modules', '.bin', 'node');
  const cli = join(testsDir, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
  const output = [];
  const code = await new Promise((resolve) => {
    const child = spawn(node, [cli, 'server', '--url', `http://127.0.0.1:${proxyPort}/mcp`], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d) => output.push(d.toString()));
    child.stderr.on('data', (d) => output.push(d.toString()));
    child.on('exit', resolve);
  });
  const text = output.join('');
  const summary = text.slice(text.indexOf('=== SUMMARY ==='));
  process.stdout.write(`${summary}\n`);
  assert.match(summary, /Total: \d+ passed, 0 failed/);
  assert.equal(code, 0, text);
});
