// Many tabs in one process, each answering every tools/call at once with the text it was
// given, as ../shared/bench/echo-tab.mjs does for one (bench.mjs --accounts).
//   node echo-tabs.mjs WS_URL < tickets
// Standard input: one ticket per line, a tab each. Prints `tabs on N` once every tab's hello is
// answered; never prints a ticket.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';

const require = createRequire(`${process.env.BENCH_MODULES.replace(/\/$/, '')}/`);
const WebSocket = require('ws');
const [url] = process.argv.slice(2);
const tickets = readFileSync(0, 'utf8').split('\n').filter(Boolean);
const tabs = [];

const open = (ticket) => new Promise((resolve, reject) => {
  const ws = new WebSocket(url, { headers: { origin: 'http://editor.test' }, perMessageDeflate: false });
  ws.on('open', () => ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'relay/hello', params: { ticket, client: { name: 'echo-tabs', version: '0' } } })));
  ws.on('message', (data) => {
    const m = JSON.parse(data.toString());
    if (m.id === 1 && !m.method) {
      if (m.result) resolve(); else reject(new Error(`hello refused: ${m.error?.message}`));
      return;
    }
    if (m.method === 'tools/call') ws.send(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: m.params?.arguments?.text ?? '' }] } }));
  });
  ws.on('close', (code) => reject(new Error(`closed ${code}`)));
  ws.on('error', reject);
  tabs.push(ws);
});

// 50 at a time: the host API redeems each ticket.
for (let i = 0; i < tickets.length; i += 50) await Promise.all(tickets.slice(i, i + 50).map(open));
console.log(`tabs on ${tickets.length}`);
process.on('SIGTERM', () => { for (const ws of tabs) ws.terminate(); process.exit(0); });
setInterval(() => {}, 1 << 30);
