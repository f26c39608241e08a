// Agents people use that are not SDK programs of ours (issue 14): a stdio-only agent through
// mcp-remote (pinned), which bridges stdio to the relay's Streamable HTTP with a header, and
// the MCP Inspector's CLI (pinned), which people debug servers with. Each lists and calls a
// tab's tool through the relay, the tab on the other gateway, as README.md says to run them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startStack, repoRoot } from './lib/stack.mjs';
import { ScriptedTab } from './lib/tab.mjs';

const execFileAsync = promisify(execFile);
const bin = (name) => join(repoRoot, 'tests', 'node_modules', '.bin', name);
let stack, tab, home, token, url;

before(async () => {
  stack = await startStack({ gateways: 2, users: ['alice'] });
  tab = new ScriptedTab(stack.gateways[0].wsUrl);
  await tab.hello(await stack.ticket('alice'));
  tab.handlers['tools/call'] = async (params) => ({ content: [{ type: 'text', text: `the tab ran ${params.name} for ${params.arguments?.who ?? 'someone'}` }] });
  token = await stack.mintToken('alice', 'stdio agent');
  url = stack.gateways[1].url;
  // Both tools keep state under HOME (mcp-remote its OAuth files, the Inspector its catalog):
  // a throwaway one, so that the test touches nothing of the person running it.
  home = mkdtempSync(join(tmpdir(), 'relay-clients-'));
});

after(async () => {
  tab?.close();
  await stack?.stop();
  if (home) rmSync(home, { recursive: true, force: true });
});

test('a stdio agent through mcp-remote lists and calls a tab\'s tool', { timeout: 60000 }, async () => {
  // What a stdio-only agent's configuration runs: mcp-remote URL --header "Authorization: Bearer …".
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [bin('mcp-remote'), url, '--transport', 'http-only', '--header', `Authorization: Bearer ${token}`],
    env: { ...process.env, HOME: home },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'stdio-agent', version: '1.0.0' });
  try {
    await client.connect(transport);
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'get_view'), JSON.stringify(tools));
    const result = await client.callTool({ name: 'get_view', arguments: { who: 'mcp-remote' } });
    assert.equal(result.content[0].text, 'the tab ran get_view for mcp-remote');
  } finally {
    await client.close();  // ends mcp-remote (its stdin closes), by the pid the SDK holds
  }
});

test('the Inspector CLI lists and calls a tab\'s tool', { timeout: 60000 }, async () => {
  const inspector = (...args) => execFileAsync(process.execPath, [bin('mcp-inspector'), '--cli', url, '--transport', 'http',
    '--header', `Authorization: Bearer ${token}`, ...args], { env: { ...process.env, HOME: home }, timeout: 60000 });
  const listed = JSON.parse((await inspector('--method', 'tools/list')).stdout);
  assert.ok(listed.tools.some((t) => t.name === 'get_view'), JSON.stringify(listed));
  const called = JSON.parse((await inspector('--method', 'tools/call', '--tool-name', 'get_view', '--tool-arg', 'who=inspector')).stdout);
  assert.equal(called.content[0].text, 'the tab ran get_view for inspector');
});
