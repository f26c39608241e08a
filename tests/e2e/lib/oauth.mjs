// Signing in as an MCP client does (MCP-SURFACE.md "Authorization"): an OAuthClientProvider kept
// in memory, and the person at the host API's authorization page in Chromium.
import { waitUntil } from './stack.mjs';

export const REDIRECT = 'http://127.0.0.1:53682/callback';

// An OAuthClientProvider as a command-line agent keeps one: in memory, a loopback redirect.
// onTokens hears every token it is given (the tests' leak checks look for them in logs).
export class MemoryProvider {
  constructor(name, onTokens = () => {}) {
    this.name = name;
    this.onTokens = onTokens;
    this.saved = {};
    this.authorizationUrls = [];
  }
  get redirectUrl() { return REDIRECT; }
  get clientMetadata() {
    return {
      client_name: this.name,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() { return this.saved.client; }
  saveClientInformation(info) { this.saved.client = info; }
  tokens() { return this.saved.tokens; }
  saveTokens(tokens) {
    this.saved.tokens = tokens;
    this.onTokens([tokens.access_token, ...(tokens.refresh_token ? [tokens.refresh_token] : [])]);
  }
  redirectToAuthorization(url) { this.authorizationUrls.push(new URL(url)); }
  saveCodeVerifier(verifier) { this.saved.verifier = verifier; }
  codeVerifier() { return this.saved.verifier; }
  // Which authorization server the flow began with (the 2.x client checks the callback's iss).
  saveDiscoveryState(state) { this.saved.discovery = state; }
  discoveryState() { return this.saved.discovery; }
  // What a client forgets when the server refuses them (a refresh token that no longer works).
  invalidateCredentials(scope) {
    if (scope === 'all' || scope === 'tokens') delete this.saved.tokens;
    if (scope === 'all' || scope === 'client') delete this.saved.client;
    if (scope === 'all' || scope === 'verifier') delete this.saved.verifier;
  }
}

// The person at the host API's page: logs in if asked, reads the consent, allows or denies.
// Resolves with the URL the page sent the browser back to (the client's redirect); seen gets
// what the consent showed.
export async function personAt(browser, authorizationUrl, { user, password, decision = 'allow', seen = {} }) {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    let redirected;
    await page.route(`${REDIRECT}**`, (route) => {
      redirected = new URL(route.request().url());
      return route.fulfill({ status: 200, contentType: 'text/plain', body: 'You can close this window.' });
    });
    await page.goto(authorizationUrl.href);
    await page.waitForSelector('#username, #allow');
    if (await page.$('#username')) {
      await page.fill('#username', user);
      await page.fill('#password', password);
      await page.click('#login');
    }
    await page.waitForSelector('#allow');
    seen.client = await page.textContent('#client-name');
    seen.redirect = await page.textContent('#redirect-uri');
    seen.account = await page.textContent('#account');
    await page.click(decision === 'allow' ? '#allow' : '#deny');
    await waitUntil(() => redirected, 'the page to send the browser back to the client', 10000);
    return redirected;
  } finally {
    await context.close();
  }
}
