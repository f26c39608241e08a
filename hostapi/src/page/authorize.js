// The authorization page of the reference host API's OAuth server (src/oauth_server.php): the
// person signs in if needed, then allows or denies the client. Inlined by the server, which
// allows this script and no other (its SHA-256 in the Content-Security-Policy).
//
// Every POST is JSON, like every POST of this API: a form on another site cannot sign the
// person in, or consent in their name, because a browser sends cross-site JSON only after a
// CORS preflight, which these routes never grant.
(function () {
  'use strict';

  const $ = (id) => document.getElementById(id);
  const message = $('message');

  function say(text) {
    message.textContent = text;
  }

  function said(data, fallback) {
    return (data && (data.error_description || data.error)) || fallback;
  }

  async function post(url, body) {
    const res = await fetch(url, {
      method: 'POST',
      credentials: 'same-origin',
      cache: 'no-store',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify(body),
    });
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    return { status: res.status, data: data };
  }

  // ---------------------------------------------------------------- sign in

  const form = $('login-form');
  if (form) {
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const username = $('username').value.trim();
      const password = $('password').value;
      if (!username || !password) {
        say('Enter your user name and password.');
        return;
      }
      $('login').disabled = true;
      say('');
      try {
        const answer = await post('/api/index.php?r=login', { username: username, password: password });
        if (answer.status === 200) {
          location.reload();  // the server now shows the consent screen
          return;
        }
        say(answer.status === 401 ? 'Wrong user name or password.' : said(answer.data, 'HTTP ' + answer.status));
      } catch (e) {
        say('The account service could not be reached.');
      }
      $('login').disabled = false;
    });
  }

  // ---------------------------------------------------------------- allow or deny

  // The request's own parameters: the server checks them all again.
  function params() {
    const out = {};
    for (const [name, value] of new URLSearchParams(location.search)) {
      if (!(name in out)) out[name] = value;
    }
    return out;
  }

  async function decide(decision) {
    $('allow').disabled = true;
    $('deny').disabled = true;
    say('');
    try {
      const answer = await post(location.pathname, Object.assign(params(), { decision: decision }));
      if (answer.status === 200 && answer.data && typeof answer.data.redirect === 'string') {
        say(decision === 'allow' ? 'Allowed. Back to the agent…' : 'Denied. Back to the agent…');
        location.assign(answer.data.redirect);
        return;
      }
      if (answer.status === 401) {
        location.reload();  // the session ended meanwhile: sign in again
        return;
      }
      say(said(answer.data, 'HTTP ' + answer.status));
    } catch (e) {
      say('The server could not be reached.');
    }
    $('allow').disabled = false;
    $('deny').disabled = false;
  }

  if ($('allow')) {
    $('allow').addEventListener('click', () => decide('allow'));
    $('deny').addEventListener('click', () => decide('deny'));
  }
})();
