// A person's view: the demo editor page in real Chromium (headless) holds the tab; an agent
// with the real MCP SDK client changes the document through the relay; the page shows it,
// and the person can undo it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startStack, repoRoot } from './lib/stack.mjs';

const CHROMIUM = '/usr/bin/chromium';
let stack, browser;

before(async () => {
  stack = await startStack({
    // pat: the person's-view test's own account, so that no earlier test's agent is counted.
    users: ['demo', 'pat'],
    catalogue: JSON.parse(readFileSync(join(repoRoot, 'hostapi/public/editor/tools.json'), 'utf8')),
    // The editor page is served by the host API; its origin is the tabs' origin.
    gatewayArgs: (i, s) => [`--allowed_origins=http://127.0.0.1:${s.hostapi.port}`],
    // Revoking a token in the page tells authsvc at once, as compose and run.sh set it up.
    forgetHook: true,
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
  await page.click('#open-tokens');
  await page.fill('#token-name', 'agent');
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

test("the person's view: tokens made and revoked in the dialog, the badge, what the agent did, offline and back, another tab taking over", { skip: !existsSync(CHROMIUM) && 'no Chromium' }, async () => {
  // Each step's picture, kept with the test output (RELAY_SCREENSHOT_DIR, else ./browser-screenshots).
  const shots = process.env.RELAY_SCREENSHOT_DIR ?? join(process.cwd(), 'browser-screenshots');
  mkdirSync(shots, { recursive: true });
  let step = 0;
  const snap = async (page, name) => {
    const file = join(shots, `${String(++step).padStart(2, '0')}-${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    console.log(`screenshot: ${file}`);
  };
  // 40 s: a reconnect after a restart waits out the page's backoff (2, 4, 8 … s).
  const statusIs = (page, pattern) => page.waitForFunction((source) => new RegExp(source).test(document.querySelector('#status').textContent), pattern.source, { timeout: 40000 });
  const gwIndex = 0;
  const oldToken = await stack.mintToken('pat', 'old laptop');
  // An agent already working with the token about to be revoked: its verdict is cached.
  const oldClient = new Client({ name: 'old-laptop', version: '1.0.0' });
  await oldClient.connect(new StreamableHTTPClientTransport(new URL(stack.gateways[0].url), {
    requestInit: { headers: { Authorization: `Bearer ${oldToken}` } },
  }));
  await oldClient.listTools();

  // One browser profile, two tabs of it: they share the sign-in, as a person's tabs do.
  const context = await browser.newContext({ locale: 'en-US' });
  const page = await context.newPage();
  await page.goto(`http://127.0.0.1:${stack.hostapi.port}/editor/`);
  await page.fill('#username', 'pat');
  await page.fill('#password', stack.passwords.pat);
  await page.click('#login-button');
  await page.waitForSelector('#editor-view:not([hidden])');
  await snap(page, 'signed-in');

  // A token made in the dialog: shown once, with the claude mcp add line; listed with its dates.
  await page.click('#open-tokens');
  const rowCount = () => page.$$eval('#token-list tr', (trs) => trs.length);
  await page.waitForSelector('button[aria-label="Revoke old laptop"]');
  const listed = await rowCount();  // the earlier tests' tokens of demo too
  await page.fill('#token-name', 'Claude Code on my laptop');
  await page.selectOption('#token-days', '30');
  await page.click('#create-token');
  await page.waitForFunction(() => document.querySelector('#token-value').value.startsWith('fwa_'));
  const token = await page.inputValue('#token-value');
  assert.match(await page.inputValue('#token-command'), new RegExp(`^claude mcp add --transport http editor http://127\\.0\\.0\\.1:\\d+/mcp --header "Authorization: Bearer ${token}"$`));
  await page.waitForFunction((n) => document.querySelectorAll('#token-list tr').length === n, listed + 1);
  const rows = await page.$$eval('#token-list tr', (trs) => trs.map((tr) => [...tr.children].slice(0, 4).map((td) => td.textContent)));
  const made = rows.find((r) => r[0] === 'Claude Code on my laptop');
  assert.equal(made[3], 'never', 'not used yet');
  const days = (new Date(made[2]) - new Date(made[1])) / 86400000;
  assert.ok(Math.abs(days - 30) < 1, `lifetime ${days} days`);
  await snap(page, 'token-made');

  // Revoking the other one: gone from the list at once.
  await page.click('button[aria-label="Revoke old laptop"]');
  await page.waitForFunction((n) => document.querySelectorAll('#token-list tr').length === n, listed);
  const names = await page.$$eval('#token-list tr td:first-child', (tds) => tds.map((td) => td.textContent));
  assert.ok(names.includes('Claude Code on my laptop') && !names.includes('old laptop'), names.join(', '));
  await snap(page, 'token-revoked');
  // Stopped at the agent's next request, not a cache lifetime later.
  await assert.rejects(oldClient.listTools(), /invalid bearer token/);
  await page.click('#close-tokens');
  assert.equal(await page.inputValue('#token-value'), '', 'the token is not kept in the page');

  // The agent switch; an agent with the new token; the badge counts it.
  await page.check('#agent-switch');
  await statusIs(page, /^Connected as pat/);
  const agentsBefore = Number(await page.textContent('#agent-badge-count'));
  assert.equal(agentsBefore, 1, 'the old laptop\'s agent');
  const client = new Client({ name: 'person-view-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(stack.gateways[gwIndex].url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  }));
  await page.waitForFunction((n) => !document.querySelector('#agent-badge').hidden && document.querySelector('#agent-badge-count').textContent === String(n), agentsBefore + 1);
  assert.equal(await page.textContent('#agents'), String(agentsBefore + 1));
  assert.match(await page.textContent('#agent-badge'), agentsBefore === 0 ? /1\s+agent\b/ : new RegExp(`${agentsBefore + 1}\\s+agents`));
  await client.callTool({ name: 'get_view', arguments: {} });
  await client.callTool({ name: 'set_title', arguments: { title: 'Written by the agent' } });
  const activity = await page.$$eval('#activity li', (lis) => lis.map((li) => li.textContent));
  assert.match(activity[0], /Agent set the title to “Written by the agent”\.Undo$/);
  assert.match(activity[1], /Agent looked at the document\./);
  await snap(page, 'agent-working');

  // The revoked token is refused.
  const refused = new Client({ name: 'revoked', version: '1.0.0' });
  await assert.rejects(refused.connect(new StreamableHTTPClientTransport(new URL(stack.gateways[gwIndex].url), {
    requestInit: { headers: { Authorization: `Bearer ${oldToken}` } },
  })), /invalid bearer token/);

  // Undo from the activity line.
  await page.click('#activity li:nth-child(1) button.undo-entry');
  assert.equal(await page.inputValue('#title'), 'Shopping list');
  assert.equal(await page.textContent('#activity li:nth-child(2) button.undo-entry'), 'Undone');
  await snap(page, 'undone');
  await client.close();

  // The gateway dies: offline, with the backoff; back once it is, with the relay's resume
  // credential instead of a new ticket (the host API is not asked).
  const ticketsBeforeKill = stack.hostApiCount('agent/ticket');
  await stack.gateways[gwIndex].stop('SIGKILL');
  await statusIs(page, /^Agent offline — reconnecting in \d+ s\./);
  assert.equal(await page.isHidden('#agent-badge'), true);
  await snap(page, 'offline');
  await stack.restartGateway(gwIndex);
  await statusIs(page, /^Connected as pat/);
  assert.equal(stack.hostApiCount('agent/ticket'), ticketsBeforeKill, 'the page came back without a new ticket');
  await snap(page, 'reconnected');

  // A second tab of the same person takes the agent over: the first one says so.
  const second = await context.newPage();
  await second.goto(`http://127.0.0.1:${stack.hostapi.port}/editor/`);
  await second.waitForSelector('#editor-view:not([hidden])');
  await second.check('#agent-switch');
  await statusIs(second, /^Connected as pat/);
  await statusIs(page, /^An agent now works in your other tab\./);
  assert.equal(await page.isChecked('#agent-switch'), false);
  await snap(page, 'taken-over');
  await snap(second, 'second-tab');
  await context.close();
});
