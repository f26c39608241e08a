// The official MCP server conformance suite (@modelcontextprotocol/conformance, pinned in
// tests/package.json), no expected-failures file, run against the relay: suite → nginx (adds
// the bearer, as a proxy in front of a gateway would) → gateway 2 → router → gateway 1 → the
// conformance tab (tests/conformance/tab.mjs). Three runs on the same stack: 0.1.16's
// active suite (the 2025 era), and 0.2.0-alpha.12's requirement sets of 2026-07-28 (the
// modern era: stateless requests, multi round-trip requests through the tab protocol) and
// of 2025-11-25.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStack } from '../e2e/lib/stack.mjs';
import { freePort, startNginx } from '../e2e/lib/nginx.mjs';
import { connectConformanceTab } from './tab.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const testsDir = join(here, '..');

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
  // The token goes into the nginx configuration in the test's private temporary folder.
  nginx = await startNginx(stack.dir, [stack.gateways[1].port], {
    port: proxyPort,
    extraHeaders: `      proxy_set_header Authorization "Bearer ${token}";`,
  });
});
after(async () => {
  tab?.close();
  await nginx?.stop();
  await stack?.stop();
});

async function runSuite(pkg, args) {
  const node = join(testsDir, 'node_modules', '.bin', 'node');
  const cli = join(testsDir, 'node_modules', pkg, 'dist', 'index.js');
  const output = [];
  // Each check's result, kept so that a failure shows why (the summary only counts them).
  const results = mkdtempSync(join(stack.dir, 'conformance-'));
  const code = await new Promise((resolve) => {
    const child = spawn(node, [cli, 'server', '--url', `http://127.0.0.1:${proxyPort}/mcp`, '-o', results, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d) => output.push(d.toString()));
    child.stderr.on('data', (d) => output.push(d.toString()));
    child.on('exit', resolve);
  });
  const text = output.join('');
  const summary = text.slice(text.indexOf('=== SUMMARY ===')) + failedChecks(results);
  process.stdout.write(`${pkg} ${args.join(' ')}\n${summary}\n`);
  return { code, text, summary };
}

// The checks that failed, with what each one says went wrong.
function failedChecks(dir) {
  const failed = [];
  for (const scenario of readdirSync(dir)) {
    const file = join(dir, scenario, 'checks.json');
    if (!existsSync(file)) continue;
    for (const check of JSON.parse(readFileSync(file, 'utf8'))) {
      if (check.status === 'FAILURE') failed.push(`${scenario}: ${JSON.stringify({ id: check.id, errorMessage: check.errorMessage, details: check.details })}`);
    }
  }
  return failed.length ? `\nFailed checks:\n${failed.join('\n')}\n` : '';
}

test('the official conformance suite 0.1.16 passes every scenario of its active server suite', async () => {
  const { code, text, summary } = await runSuite(join('@modelcontextprotocol', 'conformance'), []);
  assert.match(summary, /Total: \d+ passed, 0 failed/);
  assert.equal(code, 0, text);
});

for (const revision of ['2026-07-28', '2025-11-25']) {
  test(`the official conformance suite 0.2.0-alpha.12 passes every scenario ${revision} requires`, async () => {
    const { code, text, summary } = await runSuite('conformance-2026', ['--requirements', revision]);
    // Every scenario run is listed; those under "Not scored" (the tasks extension, pending
    // scenarios) are run for information and do not count toward the revision.
    const [all, notScored = ''] = summary.split('Not scored');
    const unscored = new Set([...notScored.matchAll(/[✓✗] (\S+) \(/g)].map((m) => m[1]));
    const scored = [...all.matchAll(/^([✓✗]) (\S+): /gm)].filter((m) => !unscored.has(m[2]));
    assert.ok(scored.length >= 30, summary);
    assert.deepEqual(scored.filter((m) => m[1] === '✗').map((m) => m[2]), [], summary);
    assert.equal(code, 0, text);
  });
}
