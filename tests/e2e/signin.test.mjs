// Agents sign in (issue 27; MCP-SURFACE.md "Authorization", HOST-API.md "Agents that sign in"):
// the relay, behind nginx at its public URL, is an OAuth 2.1 protected resource; the reference
// host API is the authorization server. The real SDK clients (1.x, and 2.x on 2026-07-28) start
// with no token, are sent to the host API's page, where headless Chromium logs in and consents
// as a person would; then they call a tab's tool on the other gateway, refresh across an expiry
// without the person, and are refused once the family is ended or the person revokes them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { startStack, waitUntil } from './lib/stack.mjs';
import { startNginx, freePort } from './lib/nginx.mjs';
import { ScriptedTab } from './lib/tab.mjs';
import { MemoryProvider, personAt as personAtPage } from './lib/oauth.mjs';

const OTHER_RESOURCE = 'http://other-relay.example/mcp';
// Access tokens live this long here (an hour in the host API's default), so that a client's
// refresh happens within the test; authsvc keeps a yes for at most a second.
const ACCESS_SECONDS = 3;

let stack, nginx, publicUrl, issuer, browser, tab;
const closers = [];

before(async () => {
  const nginxPort = await freePort();
  publicUrl = `http://127.0.0.1:${nginxPort}/mcp`;
  stack = await startStack({
    gateways: 2,
    forgetHook: true,
    authsvcArgs: ['--verify_ttl=1s'],
    hostapiEnv: {
      HOSTAPI_RESOURCES: `${publicUrl} ${OTHER_RESOURCE}`,
      HOSTAPI_ACCESS_TOKEN_SECONDS: String(ACCESS_SECONDS),
    },
    // Every gateway alike: the public URL (nginx's, not its own) and the host API's issuer.
    gatewayArgs: (i, s) => [`--public_url=${publicUrl}`, `--authorization_server=http://127.0.0.1:${s.hostapi.port}`],
  });
  issuer = `http://127.0.0.1:${stack.hostapi.port}`;
  // Agents reach the second gateway through nginx; the tab is on the first.
  nginx = await startNginx(stack.dir, [stack.gateways[1].port], { port: nginxPort });
  stack.procs.push(nginx);
  tab = new ScriptedTab(stack.gateways[0].wsUrl);
  tab.handlers['tools/call'] = async (params) => ({ content: [{ type: 'text', text: `alice's tab ran ${params.name}` }] });
  await tab.hello(await stack.ticket('alice'));
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await Promise.allSettled(closers.map((close) => close()));
  tab?.ws?.close();
  await browser?.close();
  await stack?.stop();
});

// A provider whose tokens the stack's leak check looks for in every log.
class Provider extends MemoryProvider {
  constructor(name) { super(name, (tokens) => stack.secrets.push(...tokens)); }
}
// The person (alice, unless said) at the authorization page.
const personAt = (url, { user = 'alice', ...options } = {}) =>
  personAtPage(browser, url, { user, password: stack.passwords[user], ...options });

// Connects with no token: the client is refused, discovers, registers and sends the person to
// sign in; Chromium consents; the client finishes and connects again.
// finish: how the client takes the callback (1.x: the code; 2.x: the callback's parameters,
// whose iss it checks).
async function signIn(makeClient, makeTransport, provider, seen = {}, finish = (t, back) => t.finishAuth(back.searchParams.get('code'))) {
  let client = makeClient();
  await assert.rejects(client.connect(makeTransport()), (e) => e instanceof UnauthorizedError || e.name === 'UnauthorizedError');
  assert.equal(provider.authorizationUrls.length, 1, 'the client was sent to the authorization endpoint');
  const url = provider.authorizationUrls.at(-1);
  assert.equal(url.origin + url.pathname, `${issuer}/oauth/authorize`);
  assert.equal(url.searchParams.get('code_challenge_method'), 'S256');
  assert.equal(url.searchParams.get('resource'), publicUrl);
  const back = await personAt(url, { seen });
  assert.equal(back.searchParams.get('iss'), issuer, 'RFC 9207: the issuer in the redirect');
  assert.equal(back.searchParams.get('state'), url.searchParams.get('state'));
  await finish(makeTransport(), back);
  client = makeClient();
  await client.connect(makeTransport());
  closers.push(() => client.close());
  return client;
}

const legacyClient = () => new Client({ name: 'signin-agent', version: '1.0.0' });
const legacyTransport = (provider) => () => new StreamableHTTPClientTransport(new URL(publicUrl), { authProvider: provider });

test('the relay at its public URL is a protected resource: metadata, and a 401 that points to it', async () => {
  const metadataUrl = `http://127.0.0.1:${nginx.port}/.well-known/oauth-protected-resource/mcp`;
  for (const url of [metadataUrl, `http://127.0.0.1:${nginx.port}/.well-known/oauth-protected-resource`]) {
    const res = await fetch(url);
    assert.equal(res.status, 200, url);
    assert.equal(res.headers.get('content-type'), 'application/json');
    const metadata = await res.json();
    assert.equal(metadata.resource, publicUrl, 'the public URL, not the gateway\'s own');
    assert.deepEqual(metadata.authorization_servers, [issuer]);
    assert.deepEqual(metadata.bearer_methods_supported, ['header']);
  }
  assert.equal((await fetch(`http://127.0.0.1:${nginx.port}/.well-known/openid-configuration`)).status, 404);

  const post = (headers = {}) => fetch(publicUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  });
  const bare = await post();
  assert.equal(bare.status, 401);
  assert.equal(bare.headers.get('www-authenticate'), `Bearer resource_metadata="${metadataUrl}"`);
  const wrong = await post({ authorization: `Bearer fwa_${'0'.repeat(64)}` });
  assert.equal(wrong.status, 401);
  assert.equal(wrong.headers.get('www-authenticate'), `Bearer resource_metadata="${metadataUrl}", error="invalid_token"`);
  // The issuer's own metadata, as the client finds it next.
  const as = await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json();
  assert.equal(as.issuer, issuer);
  assert.deepEqual(as.code_challenge_methods_supported, ['S256']);
});

test('the SDK 1.x client signs in through Chromium and calls a tab on the other gateway; the person sees it', async () => {
  const provider = new Provider('Signin test agent');
  const seen = {};
  const client = await signIn(legacyClient, legacyTransport(provider), provider, seen);
  assert.equal(seen.client.includes('Signin test agent'), true, `the consent names the client: ${seen.client}`);
  assert.equal(seen.redirect, provider.redirectUrl);
  assert.match(seen.account, /alice/);
  assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['get_view', 'set_title']);
  const result = await client.callTool({ name: 'get_view', arguments: {} });
  assert.deepEqual(result.content, [{ type: 'text', text: "alice's tab ran get_view" }]);
  assert.ok(provider.tokens().refresh_token, 'a refresh token came with it');

  const api = await stack.login('alice');
  const listed = await (await api('agent-tokens')).json();
  assert.ok(listed.some((t) => t.client === 'Signin test agent'), `listed with its client: ${JSON.stringify(listed)}`);
});

test('refresh: calls go on across expiries without the person; a replayed refresh token ends the family', async () => {
  const provider = new Provider('Refreshing agent');
  const client = await signIn(legacyClient, legacyTransport(provider), provider);
  const first = provider.tokens();
  // Calls until the client has refreshed twice (each access token lives ACCESS_SECONDS): every
  // call answered, no person involved.
  let calls = 0;
  const seenAccess = new Set([first.access_token]);
  await waitUntil(async () => {
    const result = await client.callTool({ name: 'get_view', arguments: {} });
    assert.equal(result.isError, undefined);
    calls++;
    seenAccess.add(provider.tokens().access_token);
    return seenAccess.size >= 3;
  }, 'two refreshes', 30000);
  assert.equal(provider.authorizationUrls.length, 1, 'never sent to the person again');
  assert.notEqual(provider.tokens().refresh_token, first.refresh_token, 'the refresh token rotated');
  console.log(`refresh: ${calls} calls across ${seenAccess.size - 1} refreshes, none failed`);

  // The first refresh token, replayed (stolen and used by someone else): refused, and the whole
  // family ends, so the client's current tokens are dead too.
  const replay = await fetch(`${issuer}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: provider.clientInformation().client_id }),
  });
  assert.equal(replay.status, 400);
  assert.equal((await replay.json()).error, 'invalid_grant');
  await assert.rejects(client.callTool({ name: 'get_view', arguments: {} }), (e) => e instanceof UnauthorizedError);
  assert.ok(provider.authorizationUrls.length > 1, 'the client is sent to the person to sign in again');
});

test('revoked in the "Agent tokens" dialog: the client\'s next request is refused, and it cannot refresh back', async () => {
  const provider = new Provider('Revoked agent');
  const client = await signIn(legacyClient, legacyTransport(provider), provider);
  await client.callTool({ name: 'get_view', arguments: {} });
  const api = await stack.login('alice');
  const mine = (await (await api('agent-tokens')).json()).find((t) => t.client === 'Revoked agent');
  assert.ok(mine, 'the person sees the client in the dialog');
  assert.equal((await api(`agent-tokens/${mine.id}`, { method: 'DELETE' })).status, 204);
  await assert.rejects(client.callTool({ name: 'get_view', arguments: {} }), (e) => e instanceof UnauthorizedError);
  assert.ok(provider.authorizationUrls.length > 1, 'the client is sent to the person to sign in again');
});

test('a token issued for another resource is refused; a token made in the dialog works as before', async () => {
  // A token for another relay, got through the same flow (registration, consent, exchange).
  const provider = new Provider('Other relay agent');
  const reg = await (await fetch(`${issuer}/oauth/register`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(provider.clientMetadata),
  })).json();
  const verifier = 'v'.repeat(43);
  const { createHash } = await import('node:crypto');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const url = new URL(`${issuer}/oauth/authorize`);
  for (const [k, v] of Object.entries({ response_type: 'code', client_id: reg.client_id, redirect_uri: provider.redirectUrl, code_challenge: challenge, code_challenge_method: 'S256', state: 's1', resource: OTHER_RESOURCE })) {
    url.searchParams.set(k, v);
  }
  const back = await personAt(url);
  const tokens = await (await fetch(`${issuer}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code: back.searchParams.get('code'), redirect_uri: provider.redirectUrl, client_id: reg.client_id, code_verifier: verifier, resource: OTHER_RESOURCE }),
  })).json();
  assert.ok(tokens.access_token, JSON.stringify(Object.keys(tokens)));
  stack.secrets.push(tokens.access_token, tokens.refresh_token);
  const post = (token) => fetch(publicUrl, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
  });
  const refused = await post(tokens.access_token);
  assert.equal(refused.status, 401, 'RFC 8707: not issued for this relay');
  assert.match(refused.headers.get('www-authenticate'), /error="invalid_token"/);
  const dialog = await stack.mintToken('alice', 'made by hand');
  assert.equal((await post(dialog)).status, 200, 'a dialog token is for the relay the host API names');
});

test('the 2.x client signs in on 2026-07-28 and calls a tab on the other gateway', async () => {
  const provider = new Provider('Modern signin agent');
  const makeClient = () => new ModernClient({ name: 'modern-signin', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  const makeTransport = () => new ModernTransport(new URL(publicUrl), { authProvider: provider });
  const client = await signIn(makeClient, makeTransport, provider, {}, (t, back) => t.finishAuth(back.searchParams));
  assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
  const result = await client.callTool({ name: 'set_title', arguments: { title: 'Signed in' } });
  assert.deepEqual(result.content, [{ type: 'text', text: "alice's tab ran set_title" }]);
});
