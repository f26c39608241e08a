// For people working on the relay: the conformance test's stack, kept running until
// Ctrl-C, with the URL of its nginx printed, to run single scenarios against by hand:
//   RELAY_BIN_DIR=build/bin node tests/conformance/dev-stack.mjs
//   node tests/node_modules/conformance-2026/dist/index.js server --url URL --scenario NAME --verbose
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStack } from '../e2e/lib/stack.mjs';
import { freePort, startNginx } from '../e2e/lib/nginx.mjs';
import { connectConformanceTab } from './tab.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const proxyPort = await freePort();
const origins = `http://editor.test,http://127.0.0.1:${proxyPort},http://localhost:${proxyPort}`;
const stack = await startStack({
  gateways: 2,
  users: ['conformance'],
  catalogue: JSON.parse(readFileSync(join(here, 'catalogue.json'), 'utf8')),
  gatewayArgs: (i) => (i === 1 ? [`--allowed_origins=${origins}`] : []),
});
const tab = await connectConformanceTab(stack.gateways[0].wsUrl, await stack.ticket('conformance'));
const token = await stack.mintToken('conformance');
const nginx = await startNginx(stack.dir, [stack.gateways[1].port], {
  port: proxyPort,
  extraHeaders: `      proxy_set_header Authorization "Bearer ${token}";`,
});
console.log(`http://127.0.0.1:${proxyPort}/mcp`);
process.on('SIGINT', async () => {
  tab.close();
  await nginx.stop();
  await stack.stop();
  process.exit(0);
});
