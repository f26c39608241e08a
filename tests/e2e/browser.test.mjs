// A person's view: the demo editor page in real Chromium (headless) holds the tab; an agent
// with the real MCP SDK client changes the document through the relay; the page shows it,
// and the person can undo it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startStack, repoRoot } from './lib/stack.mjs';

const CHROMIUM = '/usr/bin/chromium';
let stack, browser;

before(async () => {
  stack = await startStack({
    users: ['demo'],
    catalogue: JSON.parse(readFileSync(join(repoRoot, 'hostapi/public/editor/tools.json'), 'utf8')),
    // The editor page is served by the host API; its origin is the tabs' origin.
    gatewayArgs: (i, s) => [`--allowed_origins=http://127.0.0.1:${s.hostapi.port}`],
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

test('an agent changes the title in the open editor page, and the person undoes it', { skip: !existsSync(CHROMIUM) && 'no Chromium' }, async () => {
  const gw = stack.gateways[0];
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${stack.hostapi.port}/editor/?relay=ws://127.0.0.1:${gw.port}/mcp`);
  await page.fill('#username', 'demo');
  await page.fill('#password', stack.passwords.demo);
  await page.click('#login-button');
  await page.fill('#title', 'Plan');
  await page.check('#agent-switch');
  await page.waitForFunction(() => /connected/i.test(document.querySelector('#status').textContent)
    && !/not connected|connecting/i.test(document.querySelector('#status').textContent));

  const client = new Client({ name: 'browser-e2e-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), {
    requestInit: { headers: { Authorization: `Bearer ${await stack.mintToken('demo')}` } },
  }));
  await page.waitForFunction(() => document.querySelector('#agents').textContent.trim() === '1');

  const view = await client.callTool({ name: 'get_view', arguments: {} });
  assert.equal(view.structuredContent.title, 'Plan');
  const set = await client.callTool({ name: 'set_title', arguments: { title: 'Plan, revised by the agent' } });
  assert.notEqual(set.isError, true);
  assert.equal(await page.inputValue('#title'), 'Plan, revised by the agent');
  // RELAY_SCREENSHOT=file.png keeps a picture of what the person sees.
  if (process.env.RELAY_SCREENSHOT) await page.screenshot({ path: process.env.RELAY_SCREENSHOT });

  await page.click('#undo');
  assert.equal(await page.inputValue('#title'), 'Plan');
  const after = await client.callTool({ name: 'get_view', arguments: {} });
  assert.equal(after.structuredContent.title, 'Plan');
  await client.close();
});

test('a link naming a foreign relay: the page refuses it, and neither the ticket nor a token goes there', { skip: !existsSync(CHROMIUM) && 'no Chromium' }, async () => {
  const page = await browser.newPage();
  const sockets = [];
  page.on('websocket', (ws) => sockets.push(ws.url()));
  const ticketsBefore = stack.hostApiCount('agent/ticket');
  await page.goto(`http://127.0.0.1:${stack.hostapi.port}/editor/?relay=wss://evil.example/mcp`);
  await page.fill('#username', 'demo');
  await page.fill('#password', stack.passwords.demo);
  await page.click('#login-button');
  await page.waitForFunction(() => !document.querySelector('#relay-error').hidden);
  assert.match(await page.textContent('#relay-error'), /does not use \(wss:\/\/evil\.example\/mcp\)/);
  assert.equal(await page.textContent('#relay-url'), '(none)');
  // Switching the agent on only says why it stays off.
  await page.click('#agent-switch');
  await page.waitForFunction(() => /does not use/.test(document.querySelector('#status').textContent));
  assert.equal(await page.isChecked('#agent-switch'), false);
  // The agent token's "claude mcp add" line names no relay either.
  await page.click('#create-token');
  await page.waitForFunction(() => document.querySelector('#token-command').value !== '');
  const command = await page.inputValue('#token-command');
  assert.ok(!command.includes('evil'), command);
  assert.match(command, /RELAY_URL/);
  assert.deepEqual(sockets, [], 'no WebSocket was opened');
  assert.equal(stack.hostApiCount('agent/ticket'), ticketsBefore, 'no ticket was asked for');
  await page.close();
});

test('without ?relay= the page uses the relay of the host API\'s configuration', { skip: !existsSync(CHROMIUM) && 'no Chromium' }, async () => {
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${stack.hostapi.port}/editor/`);
  await page.waitForFunction(() => document.querySelector('#relay-url').textContent !== '');
  assert.equal(await page.textContent('#relay-url'), stack.gateways[0].wsUrl);
  await page.close();
});
