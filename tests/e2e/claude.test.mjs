// Claude Code itself (pinned in tests/claude/, installed by scripts/setup.sh --tests) against
// the relay on the 2026-07-28 era (issue 11): in a throwaway HOME and with no login,
// `claude mcp add` the relay with a bearer header, `claude mcp list` reports it connected and
// its MCP log records 2026-07-28; then `claude -p`, its model a fake Messages API, calls a
// tab's tool through the relay (agent on gateway 1, tab on gateway 0) and the tool's answer
// reaches the model.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { startStack } from './lib/stack.mjs';
import { ScriptedTab } from './lib/tab.mjs';
import { ClaudeCode, claudeBin, startFakeModel } from './lib/claude.mjs';

const TOOL = 'mcp__editor__get_title';

let stack, tab, token, fakeApi, cc;
const toolCalls = [];    // what the tab was asked: [protocol version in _meta, params]
const modelTurns = [];   // what the fake model was sent

before(async () => {
  assert.ok(existsSync(claudeBin), `Claude Code is not installed: run scripts/setup.sh --tests (${claudeBin})`);
  stack = await startStack({
    gateways: 2,
    users: ['cleo'],
    catalogue: { tools: [{ name: 'get_title', description: 'The title of the open document.', inputSchema: { type: 'object', properties: {} } }] },
  });
  tab = new ScriptedTab(stack.gateways[0].wsUrl);
  await tab.hello(await stack.ticket('cleo'));
  tab.handlers['tools/call'] = async (params) => {
    toolCalls.push([params._meta?.['io.modelcontextprotocol/protocolVersion'], params]);
    return { content: [{ type: 'text', text: 'Quarterly plan (draft 3)' }] };
  };
  token = await stack.mintToken('cleo');
  fakeApi = await startFakeModel(TOOL, modelTurns);
  cc = new ClaudeCode(`http://127.0.0.1:${fakeApi.address().port}`);
});
after(async () => {
  tab?.close();
  await new Promise((resolve) => (fakeApi ? fakeApi.close(resolve) : resolve()));
  cc?.remove();
  await stack?.stop();
});

test('claude mcp add and list: the relay is connected, on 2026-07-28', async () => {
  const url = stack.gateways[1].url;
  const added = await cc.run(['mcp', 'add', '--transport', 'http', 'editor', url, '--header', `Authorization: Bearer ${token}`]);
  assert.equal(added.code, 0, added.stderr);
  const listed = await cc.run(['mcp', 'list']);
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(listed.stdout, new RegExp(`editor: ${url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(HTTP\\) - ✔ Connected`));
  // Its MCP log of the relay says which era it speaks.
  const cache = join(cc.home, '.cache', 'claude-cli-nodejs');
  const logs = readdirSync(cache, { recursive: true }).filter((f) => /mcp-logs-editor\/.*\.jsonl$/.test(f));
  assert.ok(logs.length > 0, 'an MCP log of the relay');
  const text = logs.map((f) => readFileSync(join(cache, f), 'utf8')).join('');
  assert.match(text, /"protocolEra\\?":\\?"modern\\?"/);
  assert.match(text, /"negotiatedProtocolVersion\\?":\\?"2026-07-28\\?"/);
  assert.ok(!text.includes(token), 'the log does not hold the token');
});

test('claude -p calls a tab\'s tool through the relay and the answer reaches the model', async () => {
  const run = await cc.run(['-p', 'What is the title of my document?', '--allowedTools', TOOL]);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(toolCalls.length, 1, 'the tab was called once');
  assert.equal(toolCalls[0][0], '2026-07-28', 'on the modern era');
  assert.ok(modelTurns.some((t) => t.tools.includes(TOOL)), 'the model was offered the relay\'s tool');
  const answered = modelTurns.find((t) => t.result);
  assert.ok(answered, 'the model got the tool result');
  assert.match(JSON.stringify(answered.result), /Quarterly plan \(draft 3\)/);
  assert.match(run.stdout, /The tool said: Quarterly plan \(draft 3\)/);
});
