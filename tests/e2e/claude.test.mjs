// Claude Code itself (pinned in tests/claude/, installed by scripts/setup.sh --tests) against
// the relay on the 2026-07-28 era (issue 11): in a throwaway HOME and with no login,
// `claude mcp add` the relay with a bearer header, `claude mcp list` reports it connected and
// its MCP log records 2026-07-28; then `claude -p`, its model a fake Messages API, calls a
// tab's tool through the relay (agent on gateway 1, tab on gateway 0) and the tool's answer
// reaches the model.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, readdirSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStack } from './lib/stack.mjs';
import { ScriptedTab } from './lib/tab.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const claudeBin = join(here, '..', 'claude', 'node_modules', '.bin', 'claude');
const TOOL = 'mcp__editor__get_title';

let stack, tab, token, fakeApi, apiUrl, home, project;
const toolCalls = [];    // what the tab was asked: [protocol version in _meta, params]
const modelTurns = [];   // what the fake model was sent

// A fake Anthropic Messages API: the first turn calls the tool, the second quotes its result.
function startFakeModel() {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url.startsWith('/v1/messages')) {
        res.writeHead(req.method === 'HEAD' ? 200 : 404, { 'content-type': 'application/json' });
        return res.end(req.method === 'HEAD' ? undefined : '{"type":"error","error":{"type":"not_found_error","message":"fake"}}');
      }
      const request = JSON.parse(body);
      const last = request.messages?.at(-1);
      const result = Array.isArray(last?.content) ? last.content.find((c) => c.type === 'tool_result') : undefined;
      const tools = (request.tools ?? []).map((t) => t.name);
      modelTurns.push({ tools, result });
      let block;
      let stop = 'end_turn';
      if (result) {
        const text = Array.isArray(result.content) ? result.content.find((c) => c.type === 'text')?.text : String(result.content);
        block = { type: 'text', text: `The tool said: ${text}` };
      } else if (tools.includes(TOOL)) {
        block = { type: 'tool_use', id: `toolu_${modelTurns.length}`, name: TOOL, input: {} };
        stop = 'tool_use';
      } else {
        block = { type: 'text', text: 'ok' };
      }
      const events = [
        { type: 'message_start', message: { id: `msg_${modelTurns.length}`, type: 'message', role: 'assistant', model: request.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } } },
        { type: 'content_block_start', index: 0, content_block: block.type === 'text' ? { type: 'text', text: '' } : { ...block, input: {} } },
        { type: 'content_block_delta', index: 0, delta: block.type === 'text' ? { type: 'text_delta', text: block.text } : { type: 'input_json_delta', partial_json: '{}' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 1 } },
        { type: 'message_stop' },
      ];
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const e of events) res.write(`event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
      res.end();
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

function claude(args, { timeout = 120000 } = {}) {
  return new Promise((resolve) => {
    execFile(claudeBin, args, {
      cwd: project,
      timeout,
      env: {
        PATH: process.env.PATH,
        HOME: home,
        ANTHROPIC_BASE_URL: apiUrl,
        ANTHROPIC_API_KEY: 'fake-key-for-the-fake-model',
        // No traffic but to the fake model and the relay.
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_TELEMETRY: '1',
        DISABLE_AUTOUPDATER: '1',
        // MCP tools in the first request (not deferred behind a tool search).
        ENABLE_TOOL_SEARCH: 'false',
      },
    }, (error, stdout, stderr) => resolve({ code: error ? (error.code ?? 1) : 0, stdout, stderr }));
  });
}

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
  fakeApi = await startFakeModel();
  apiUrl = `http://127.0.0.1:${fakeApi.address().port}`;
  home = mkdtempSync(join(tmpdir(), 'relay-claude-home-'));
  project = mkdtempSync(join(tmpdir(), 'relay-claude-project-'));
});
after(async () => {
  tab?.close();
  await new Promise((resolve) => (fakeApi ? fakeApi.close(resolve) : resolve()));
  await stack?.stop();
});

test('claude mcp add and list: the relay is connected, on 2026-07-28', async () => {
  const url = stack.gateways[1].url;
  const added = await claude(['mcp', 'add', '--transport', 'http', 'editor', url, '--header', `Authorization: Bearer ${token}`]);
  assert.equal(added.code, 0, added.stderr);
  const listed = await claude(['mcp', 'list']);
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(listed.stdout, new RegExp(`editor: ${url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(HTTP\\) - ✔ Connected`));
  // Its MCP log of the relay says which era it speaks.
  const cache = join(home, '.cache', 'claude-cli-nodejs');
  const logs = readdirSync(cache, { recursive: true }).filter((f) => /mcp-logs-editor\/.*\.jsonl$/.test(f));
  assert.ok(logs.length > 0, 'an MCP log of the relay');
  const text = logs.map((f) => readFileSync(join(cache, f), 'utf8')).join('');
  assert.match(text, /"protocolEra\\?":\\?"modern\\?"/);
  assert.match(text, /"negotiatedProtocolVersion\\?":\\?"2026-07-28\\?"/);
  assert.ok(!text.includes(token), 'the log does not hold the token');
});

test('claude -p calls a tab\'s tool through the relay and the answer reaches the model', async () => {
  const run = await claude(['-p', 'What is the title of my document?', '--allowedTools', TOOL]);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(toolCalls.length, 1, 'the tab was called once');
  assert.equal(toolCalls[0][0], '2026-07-28', 'on the modern era');
  assert.ok(modelTurns.some((t) => t.tools.includes(TOOL)), 'the model was offered the relay\'s tool');
  const answered = modelTurns.find((t) => t.result);
  assert.ok(answered, 'the model got the tool result');
  assert.match(JSON.stringify(answered.result), /Quarterly plan \(draft 3\)/);
  assert.match(run.stdout, /The tool said: Quarterly plan \(draft 3\)/);
});
