// Claude Code signs in (issue 27): `claude mcp add --transport http editor <url>` with no header,
// then `claude mcp login editor --no-browser`, which prints the authorization URL and takes the
// redirect URL back on its input. Headless Chromium logs in and consents on the host API's page
// as the person would; `claude mcp list` reports the relay connected, `claude -p` (its model a
// fake Messages API) calls a tab's tool with the token it got, and no file outside Claude Code's
// own credential store holds a token.
//
// Claude Code names itself by a client ID metadata document (its client_id is the document's
// https URL, on claude.ai). This machine reaches no such host, so the test serves the same kind
// of document over https on loopback, under a test CA the host API is told to trust
// (SSL_CERT_FILE, read by PHP's OpenSSL), and points Claude Code at it with its own
// MCP_OAUTH_CLIENT_METADATA_URL. Everything else is as a person meets it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:https';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { startStack, waitUntil } from './lib/stack.mjs';
import { startNginx, freePort } from './lib/nginx.mjs';
import { ScriptedTab } from './lib/tab.mjs';
import { ClaudeCode, claudeBin, startFakeModel } from './lib/claude.mjs';

const TOOL = 'mcp__editor__get_title';
const TOKEN = /fw[ar]_[0-9a-f]{64}/;

let stack, nginx, publicUrl, issuer, tab, fakeApi, metadataServer, browser, cc, certDir;
const toolCalls = [];
const modelTurns = [];

// A CA and a certificate for 127.0.0.1, made with openssl into dir.
function testCertificates(dir) {
  const run = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  run('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'cimd-ca.key', '-out', 'cimd-ca.pem', '-days', '1', '-subj', '/CN=claude signin test CA');
  run('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'cimd.key', '-out', 'cimd.csr', '-subj', '/CN=127.0.0.1');
  writeFileSync(join(dir, 'cimd.ext'), 'subjectAltName=IP:127.0.0.1\n');
  run('x509', '-req', '-in', 'cimd.csr', '-CA', 'cimd-ca.pem', '-CAkey', 'cimd-ca.key', '-CAcreateserial', '-out', 'cimd.pem', '-days', '1', '-extfile', 'cimd.ext');
  return { ca: join(dir, 'cimd-ca.pem'), cert: readFileSync(join(dir, 'cimd.pem')), key: readFileSync(join(dir, 'cimd.key')) };
}

before(async () => {
  assert.ok(existsSync(claudeBin), `Claude Code is not installed: run scripts/setup.sh --tests (${claudeBin})`);
  const nginxPort = await freePort();
  const metadataPort = await freePort();
  publicUrl = `http://127.0.0.1:${nginxPort}/mcp`;
  const clientId = `https://127.0.0.1:${metadataPort}/oauth/claude-code-client-metadata`;
  certDir = mkdtempSync(join(tmpdir(), 'relay-cimd-'));
  const certs = testCertificates(certDir);
  metadataServer = createServer({ cert: certs.cert, key: certs.key }, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({
      client_id: clientId,
      client_name: 'Claude Code',
      redirect_uris: ['http://localhost/callback', 'http://127.0.0.1/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }));
  });
  await new Promise((resolve) => metadataServer.listen(metadataPort, '127.0.0.1', resolve));

  stack = await startStack({
    gateways: 2,
    users: ['cleo'],
    forgetHook: true,
    catalogue: { tools: [{ name: 'get_title', description: 'The title of the open document.', inputSchema: { type: 'object', properties: {} } }] },
    // The document is on loopback, which the host API fetches from only with its test flag.
    hostapiEnv: { HOSTAPI_RESOURCES: publicUrl, SSL_CERT_FILE: certs.ca, HOSTAPI_OAUTH_HTTP_LOOPBACK: '1' },
    gatewayArgs: (i, s) => [`--public_url=${publicUrl}`, `--authorization_server=http://127.0.0.1:${s.hostapi.port}`],
  });
  issuer = `http://127.0.0.1:${stack.hostapi.port}`;
  nginx = await startNginx(stack.dir, [stack.gateways[1].port], { port: nginxPort });
  stack.procs.push(nginx);
  tab = new ScriptedTab(stack.gateways[0].wsUrl);
  await tab.hello(await stack.ticket('cleo'));
  tab.handlers['tools/call'] = async (params) => {
    toolCalls.push(params);
    return { content: [{ type: 'text', text: 'Signed-in plan (draft 1)' }] };
  };
  fakeApi = await startFakeModel(TOOL, modelTurns);
  cc = new ClaudeCode(`http://127.0.0.1:${fakeApi.address().port}`, { MCP_OAUTH_CLIENT_METADATA_URL: clientId });
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await browser?.close();
  tab?.close();
  await new Promise((resolve) => (fakeApi ? fakeApi.close(resolve) : resolve()));
  await new Promise((resolve) => (metadataServer ? metadataServer.close(resolve) : resolve()));
  if (certDir) rmSync(certDir, { recursive: true, force: true });
  cc?.remove();
  await stack?.stop();
});

test('claude mcp add without a header, then claude mcp login: Chromium consents, the relay is connected', async () => {
  const added = await cc.run(['mcp', 'add', '--transport', 'http', 'editor', publicUrl]);
  assert.equal(added.code, 0, added.stderr);
  const before = await cc.run(['mcp', 'list']);
  assert.doesNotMatch(before.stdout, /editor: .* - ✔ Connected/, 'not connected before signing in');

  const login = cc.spawn(['mcp', 'login', 'editor', '--no-browser'], { tty: true });
  // What the terminal shows, without its escape sequences.
  let output = '';
  const read = (d) => { output += d.toString().replace(/\x1b\[[0-9;?]*[ -\/]*[@-~]|\x1b\][^\x07]*\x07/g, ''); };
  login.stdout.on('data', read);
  login.stderr.on('data', read);
  const exited = new Promise((resolve) => login.on('exit', (code) => resolve(code)));
  try {
    await waitUntil(() => output.includes(`${issuer}/oauth/authorize?`), 'claude to print the authorization URL', 60000)
      .catch((e) => { throw new Error(`${e.message}; it printed:\n${output.replace(TOKEN, '<token>')}`); });
    const authorizationUrl = new URL(output.slice(output.indexOf(`${issuer}/oauth/authorize?`)).split(/\s/)[0]);
    assert.equal(authorizationUrl.searchParams.get('resource'), publicUrl);
    assert.equal(authorizationUrl.searchParams.get('code_challenge_method'), 'S256');

    // The person: logs in on the host API's page and allows Claude Code.
    const context = await browser.newContext();
    const page = await context.newPage();
    let redirected;
    await page.route(/^http:\/\/(localhost|127\.0\.0\.1):\d+\/callback/, (route) => {
      redirected = route.request().url();
      return route.fulfill({ status: 200, contentType: 'text/plain', body: 'Paste this page\'s address back into Claude Code.' });
    });
    await page.goto(authorizationUrl.href);
    await page.waitForSelector('#username', { timeout: 10000 })
      .catch(async () => { throw new Error(`no login form; the page says: ${(await page.textContent('body')).trim()}`); });
    await page.fill('#username', 'cleo');
    await page.fill('#password', stack.passwords.cleo);
    await page.click('#login');
    await page.waitForSelector('#allow');
    assert.match(await page.textContent('#client-name'), /Claude Code/);
    await page.click('#allow');
    await waitUntil(() => redirected, 'the page to send the browser back to Claude Code', 10000);
    await context.close();
    assert.equal(new URL(redirected).searchParams.get('iss'), issuer);

    // What the person does next: pastes the address back.
    login.stdin.write(`${redirected}\r`);
    assert.equal(await exited, 0, output.replace(TOKEN, '<token>'));
  } finally {
    login.kill();
  }
  const listed = await cc.run(['mcp', 'list']);
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(listed.stdout, new RegExp(`editor: ${publicUrl.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(HTTP\\) - ✔ Connected`));

  // The person sees Claude Code in the dialog.
  const api = await stack.login('cleo');
  const tokens = await (await api('agent-tokens')).json();
  assert.ok(tokens.some((t) => t.client === 'Claude Code'), JSON.stringify(tokens));
});

test('claude -p calls a tab\'s tool with the token it got; no file outside its credential store holds a token', async () => {
  const run = await cc.run(['-p', 'What is the title of my document?', '--allowedTools', TOOL, '--debug']);
  assert.equal(run.code, 0, run.stderr.replace(TOKEN, '<token>'));
  assert.equal(toolCalls.length, 1, 'the tab was called once');
  assert.match(run.stdout, /The tool said: Signed-in plan \(draft 1\)/);
  assert.doesNotMatch(run.stdout + run.stderr, TOKEN, 'nothing it printed holds a token');

  // Every file Claude Code wrote (its settings, MCP logs, debug logs, project state), but for
  // its credential store, which must hold the tokens (else the search below proves nothing).
  const store = join(cc.home, '.claude', '.credentials.json');
  assert.match(readFileSync(store, 'utf8'), TOKEN, 'the credential store holds the tokens');
  assert.equal(statSync(store).mode & 0o077, 0, 'private to its user');
  const leaks = [];
  for (const root of [cc.home, cc.project]) {
    for (const name of readdirSync(root, { recursive: true })) {
      const path = join(root, name);
      if (path === store || !statSync(path).isFile()) continue;
      if (TOKEN.test(readFileSync(path, 'latin1'))) leaks.push(path);
    }
  }
  assert.deepEqual(leaks, []);
});
