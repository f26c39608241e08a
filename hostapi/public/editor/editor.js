// The demo editor: a tiny document that a person can open "a tab on" and let an AI agent
// work in through the relay. It speaks the tab protocol (TAB-PROTOCOL.md) over a WebSocket
// and the reference host API (HOST-API.md) over same-origin fetch with the session cookie.
//
// Secrets: the agent token is shown once in the page and kept nowhere else (no URL, no
// storage); tickets live only until the hello is sent, and the relay's resume credential (to
// come back after a lost connection without a new ticket) only in memory, until it is
// replaced, refused, expired, or the agent is switched off. Nothing here logs to the console.
(function () {
  'use strict';

  const API = '../api/index.php?r=';
  const VIEW_URI = 'editor://view';
  const EDIT_LINE = 'The user edited the document.';
  const UNDO_LINE = 'The user undid a change made by the agent.';
  const EDIT_DEBOUNCE_MS = 500;
  const BACKOFF_FIRST_S = 2;
  const BACKOFF_MAX_S = 30;
  const CLOSE_DISPLACED = 4409;
  // The account's sign-in ended (password changed, account deleted): a new
  // ticket would not help, the person must sign in again.
  const CLOSE_SIGNED_OUT = 4403;
  // A bad ticket or resume credential: the next attempt gets a ticket.
  const CLOSE_BAD_TICKET = 4401;
  const ACTIVITY_MAX = 20;
  const CLIENT = { name: 'demo-editor', version: '1.0.0' };

  const $ = (id) => document.getElementById(id);
  const ui = {
    who: $('who'),
    loginView: $('login-view'),
    loginForm: $('login-form'),
    loginButton: $('login-button'),
    loginError: $('login-error'),
    username: $('username'),
    password: $('password'),
    editorView: $('editor-view'),
    title: $('title'),
    body: $('body'),
    undo: $('undo'),
    undoInfo: $('undo-info'),
    agentSwitch: $('agent-switch'),
    status: $('status'),
    agents: $('agents'),
    relayUrl: $('relay-url'),
    relayError: $('relay-error'),
    activity: $('activity'),
    createToken: $('create-token'),
    tokenError: $('token-error'),
    tokenBox: $('token-box'),
    tokenExpiry: $('token-expiry'),
    tokenValue: $('token-value'),
    tokenCommand: $('token-command'),
    copyToken: $('copy-token'),
    copyCommand: $('copy-command'),
    copyNote: $('copy-note'),
    tokenDone: $('token-done'),
    openTokens: $('open-tokens'),
    closeTokens: $('close-tokens'),
    tokensDialog: $('tokens-dialog'),
    tokenForm: $('token-form'),
    tokenName: $('token-name'),
    tokenDays: $('token-days'),
    tokenList: $('token-list'),
    tokenListEmpty: $('token-list-empty'),
    badge: $('agent-badge'),
    badgeCount: $('agent-badge-count'),
    badgeWord: $('agent-badge-word'),
  };

  // ---------------------------------------------------------------- relay address

  // The relay comes from the host API's own configuration (GET relay-config): its first URL,
  // or ?relay= when that names one of its URLs; with none configured, ws(s)://<this
  // host>:8080/mcp. A ?relay= naming anything else is refused: a link made by a stranger
  // must not send this person's ticket, or the token shown below, to the stranger's relay.
  function relayAddress(allowed) {
    const scheme = location.protocol === 'https:' ? 'wss://' : 'ws://';
    const normal = (text) => { try { return new URL(text).href; } catch (e) { return null; } };
    const trusted = allowed.map(normal).filter((u) => u !== null);
    const given = new URLSearchParams(location.search).get('relay');
    let raw = trusted[0] || scheme + location.hostname + ':8080/mcp';
    if (given) {
      if (!trusted.includes(normal(given))) {
        return { error: 'This link names a relay this site does not use (' + given + '); the agent ' +
          'stays off. Open the editor without "?relay=", or ask the site\'s operator.' };
      }
      raw = given;
    }
    let url;
    try {
      url = new URL(raw);
    } catch (e) {
      return { error: 'The relay address "' + raw + '" is not a URL.' };
    }
    if (url.protocol !== 'ws:' && url.protocol !== 'wss:') {
      return { error: 'The relay address must start with ws:// or wss://, not "' + url.protocol + '//".' };
    }
    if (url.username || url.password || url.hash) {
      return { error: 'The relay address must not hold a user name, password or #fragment.' };
    }
    const ws = url.href;
    const http = (url.protocol === 'wss:' ? 'https:' : 'http:') + ws.slice(url.protocol.length);
    return { ws: ws, http: http };
  }
  // Set at the start, from the host API's configuration; until then nothing connects.
  let relay = { error: 'The relay address is not known yet.' };


  // ---------------------------------------------------------------- host API

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  // JSON in, JSON out, same origin (the session cookie goes along by itself).
  async function api(route, method, body) {
    const init = {
      method: method,
      credentials: 'same-origin',
      cache: 'no-store',
      headers: { Accept: 'application/json' },
    };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(API + route, init);
    } catch (e) {
      throw new ApiError(0, 'The account service could not be reached.');
    }
    let data = null;
    if (res.status !== 204) {
      try { data = await res.json(); } catch (e) { data = null; }
    }
    if (!res.ok) {
      const said = data && typeof data.error === 'string' ? data.error : 'HTTP ' + res.status;
      throw new ApiError(res.status, said);
    }
    return data;
  }

  // ---------------------------------------------------------------- views

  function showLogin(message) {
    stopAgent('Agent off.');
    ui.editorView.hidden = true;
    ui.who.hidden = true;
    ui.loginView.hidden = false;
    ui.loginError.textContent = message || '';
    ui.username.focus();
  }

  function showEditor(user) {
    ui.loginView.hidden = true;
    ui.editorView.hidden = false;
    ui.who.textContent = user ? 'Signed in as ' + user : 'Signed in';
    ui.who.hidden = false;
    ui.title.focus();
  }

  function sessionLost() {
    hideToken();
    if (ui.tokensDialog.open) ui.tokensDialog.close();
    ui.tokenList.textContent = '';  // the next person to sign in must not see these
    showLogin('Your session has ended. Please sign in again.');
  }

  ui.loginForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    const username = ui.username.value.trim();
    const password = ui.password.value;
    if (!username || !password) {
      ui.loginError.textContent = 'Enter your user name and password.';
      return;
    }
    ui.loginButton.disabled = true;
    ui.loginError.textContent = '';
    try {
      const me = await api('login', 'POST', { username: username, password: password });
      ui.password.value = '';
      showEditor(me && me.user ? me.user : username);
    } catch (e) {
      ui.loginError.textContent = e.status === 401 ? 'Wrong user name or password.' : e.message;
    } finally {
      ui.loginButton.disabled = false;
    }
  });

  // ---------------------------------------------------------------- the document

  function view() {
    return { title: ui.title.value, body: ui.body.value };
  }

  function showTitle() {
    document.title = (ui.title.value.trim() || 'Untitled') + ' – Demo editor';
  }

  function flash(element) {
    element.classList.add('flash');
    setTimeout(() => element.classList.remove('flash'), 400);
  }

  // One line of "What the agent did": when, what, and for a change an Undo button.
  function note(text, change) {
    const item = document.createElement('li');
    const time = new Date().toLocaleTimeString();
    item.textContent = time + ' ' + text;
    if (change) {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'undo-entry';
      button.textContent = 'Undo';
      button.addEventListener('click', () => undoEntry(change));
      change.button = button;
      item.appendChild(button);
    }
    ui.activity.insertBefore(item, ui.activity.firstChild);
    while (ui.activity.children.length > ACTIVITY_MAX) {
      ui.activity.removeChild(ui.activity.lastChild);
    }
  }

  // Reads are many: one line, its time refreshed, while nothing else happened since.
  function noteRead() {
    const first = ui.activity.firstChild;
    if (first && first.dataset.read === '1') {
      first.textContent = new Date().toLocaleTimeString() + ' Agent looked at the document.';
      return;
    }
    note('Agent looked at the document.');
    ui.activity.firstChild.dataset.read = '1';
  }

  function quote(text, max) {
    const limit = max || 40;
    const one = text.replace(/\s+/g, ' ').trim();
    return '“' + (one.length > limit ? one.slice(0, limit - 1) + '…' : one) + '”';
  }

  // The undo stack holds the agent's changes only: the person's own typing is theirs to fix.
  // Undoing is careful not to throw away what the person typed since the agent's change.
  const undoStack = [];

  function pushUndo(entry) {
    undoStack.push(entry);
    renderUndo();
  }

  function renderUndo() {
    ui.undo.disabled = undoStack.length === 0;
    const last = undoStack[undoStack.length - 1];
    ui.undoInfo.textContent = last
      ? undoStack.length + (undoStack.length === 1 ? ' agent change' : ' agent changes') + ' to undo; next: ' + last.label + '.'
      : 'Nothing to undo.';
  }

  function undoLast() {
    const entry = undoStack[undoStack.length - 1];
    if (entry) undoEntry(entry);
  }

  // Undoes one change of the agent's, the last or an older one from its activity line. A
  // title the agent set is restored only while it is still the agent's (else the button
  // says so); appended text is taken out where it still is.
  // The entry leaves the stack; its activity line's button says why.
  function retire(entry, at, why) {
    undoStack.splice(at, 1);
    if (entry.button) {
      entry.button.disabled = true;
      entry.button.textContent = why;
    }
  }

  // The person changed what the agent wrote since: nothing to undo any more.
  function giveUp(entry, at) {
    retire(entry, at, 'Changed since');
    renderUndo();
  }

  function undoEntry(entry) {
    const at = undoStack.indexOf(entry);
    if (at < 0) return;
    if (entry.field === 'title') {
      if (ui.title.value !== entry.after) return giveUp(entry, at);
      ui.title.value = entry.before;
      showTitle();
      flash(ui.title);
    } else {
      const body = ui.body.value;
      // Where the agent put it (later undos of earlier text shift it), else where it still is.
      let pos = body.startsWith(entry.appended, entry.offset) ? entry.offset : body.lastIndexOf(entry.appended);
      if (body === entry.after) pos = entry.before.length;
      if (pos < 0) return giveUp(entry, at);
      ui.body.value = body.slice(0, pos) + body.slice(pos + entry.appended.length);
      for (const later of undoStack) {
        if (later.field === 'body' && later.offset > pos) later.offset -= entry.appended.length;
      }
      flash(ui.body);
    }
    retire(entry, at, 'Undone');
    note('You undid: ' + entry.label + '.');
    renderUndo();
    personEdited(UNDO_LINE);
  }
  ui.undo.addEventListener('click', undoLast);

  // The person's own edits tell the agents (debounced): they may want to look again.
  let editTimer = null;
  let editLine = EDIT_LINE;
  function personEdited(line) {
    editLine = line || EDIT_LINE;
    clearTimeout(editTimer);
    editTimer = setTimeout(() => {
      editTimer = null;
      notify('notifications/resources/updated', { uri: VIEW_URI, _meta: { 'relay/line': editLine } });
    }, EDIT_DEBOUNCE_MS);
  }
  ui.title.addEventListener('input', () => {
    showTitle();
    personEdited(EDIT_LINE);
  });
  ui.body.addEventListener('input', () => personEdited(EDIT_LINE));

  // ---------------------------------------------------------------- tools and resources

  class RpcError extends Error {
    constructor(code, message, data) {
      super(message);
      this.code = code;
      this.data = data;
    }
  }

  function text(t) {
    return { content: [{ type: 'text', text: t }] };
  }

  function toolError(t) {
    return { content: [{ type: 'text', text: t }], isError: true };
  }

  function viewJson() {
    const v = view();
    return JSON.stringify({ title: v.title, body: v.body, length: v.body.length });
  }

  const tools = {
    get_view() {
      const v = view();
      noteRead();
      return { content: [{ type: 'text', text: viewJson() }], structuredContent: { title: v.title, body: v.body } };
    },

    set_title(args) {
      if (typeof args.title !== 'string') return toolError('set_title needs "title", a string.');
      const before = ui.title.value;
      ui.title.value = args.title; // an <input> drops line breaks by itself
      const after = ui.title.value;
      if (after === before) return text('The title is already ' + JSON.stringify(after) + '; nothing changed.');
      const change = { field: 'title', before: before, after: after, label: 'title ' + quote(after) };
      pushUndo(change);
      showTitle();
      flash(ui.title);
      note('Agent set the title to ' + quote(after) + '.', change);
      return text('The title is now ' + JSON.stringify(after) + '. The person can undo this.');
    },

    append_text(args) {
      if (typeof args.text !== 'string') return toolError('append_text needs "text", a string.');
      if (args.text === '') return text('Nothing to append: "text" is empty.');
      const before = ui.body.value;
      const after = before + args.text;
      ui.body.value = after;
      ui.body.scrollTop = ui.body.scrollHeight;
      const change = { field: 'body', before: before, after: after, appended: args.text, offset: before.length, label: 'appended ' + quote(args.text, 24) };
      pushUndo(change);
      flash(ui.body);
      note('Agent appended ' + quote(args.text) + '.', change);
      return text('Appended ' + args.text.length + ' characters; the body is now ' + after.length +
        ' characters long. The person can undo this.');
    },
  };

  function isObject(x) {
    return x !== null && typeof x === 'object' && !Array.isArray(x);
  }

  // One request from the relay → its result, or a thrown RpcError.
  function dispatch(method, params) {
    const p = isObject(params) ? params : {};
    if (method === 'tools/call') {
      const name = p.name;
      const tool = typeof name === 'string' && Object.prototype.hasOwnProperty.call(tools, name) ? tools[name] : null;
      if (!tool) {
        // No list of the tools here: which ones an agent may see is the catalogue's to say.
        return toolError('Unknown tool ' + JSON.stringify(name === undefined ? null : name) + '.');
      }
      const args = p.arguments === undefined ? {} : p.arguments;
      if (!isObject(args)) return toolError('The arguments of ' + name + ' must be an object.');
      return tool(args);
    }
    if (method === 'resources/read') {
      if (p.uri === VIEW_URI) {
        return { contents: [{ uri: VIEW_URI, mimeType: 'application/json', text: viewJson() }] };
      }
      throw new RpcError(-32002, 'Resource not found', { uri: p.uri === undefined ? null : p.uri });
    }
    throw new RpcError(-32601, 'Method not found: ' + method);
  }

  // ---------------------------------------------------------------- the connection

  const conn = {
    ws: null,         // the socket of the current attempt
    generation: 0,    // bumped on every start/stop, so that stale async steps give up
    attempt: 0,       // failed attempts since the last good hello (for the backoff)
    retryTimer: null,
    hello: null,      // the hello's result once it came
    resume: null,     // the relay's last resume credential, and when it expires (ms)
    resumeExpires: 0,
    displaced: false,
    inFlight: new Set(),  // keys of the relay's requests not yet answered
    cancelled: new Set(), // ... of which the relay cancelled these
  };

  function setStatus(message, kind) {
    ui.status.textContent = message;
    ui.status.parentElement.className = 'state' + (kind ? ' ' + kind : '');
  }

  // The count in the panel and the badge in the header (hidden while the agent is off).
  function setAgents(count) {
    const known = typeof count === 'number';
    ui.agents.textContent = known ? String(count) : '–';
    ui.badge.hidden = !known;
    if (known) {
      ui.badgeCount.textContent = String(count);
      ui.badgeWord.textContent = count === 1 ? 'agent' : 'agents';
      ui.badge.className = 'badge' + (count === 0 ? ' none' : '');
    }
  }

  function idKey(id) {
    return typeof id + ':' + String(id);
  }

  function send(ws, message) {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
  }

  function notify(method, params) {
    if (conn.hello) send(conn.ws, { jsonrpc: '2.0', method: method, params: params });
  }

  function startAgent() {
    stopAgent(null);
    conn.attempt = 0;
    conn.displaced = false;
    connect();
  }

  // Ends the connection (and any retry) without reconnecting.
  function stopAgent(message) {
    conn.generation++;
    conn.resume = null;  // switched on again, this tab takes over with a new ticket
    clearTimeout(conn.retryTimer);
    conn.retryTimer = null;
    const ws = conn.ws;
    conn.ws = null;
    conn.hello = null;
    conn.inFlight.clear();
    conn.cancelled.clear();
    if (ws && ws.readyState <= WebSocket.OPEN) ws.close(1000, 'agent switched off');
    setAgents(null);
    if (message !== null) {
      ui.agentSwitch.checked = false;
      setStatus(message);
    }
  }

  function scheduleRetry(why) {
    // Between half and all of the backoff: the tabs of a gateway that went away, or that a busy
    // relay refused together, come back spread out rather than all again at the same instant.
    const backoff = Math.min(BACKOFF_MAX_S, BACKOFF_FIRST_S * Math.pow(2, conn.attempt));
    const delay = backoff * (0.5 + Math.random() / 2);
    conn.attempt++;
    setStatus('Agent offline — reconnecting in ' + Math.ceil(delay) + ' s. (' + why + ')', 'bad');
    const generation = conn.generation;
    conn.retryTimer = setTimeout(() => {
      if (generation === conn.generation && ui.agentSwitch.checked) connect();
    }, delay * 1000);
  }

  async function connect() {
    const generation = ++conn.generation;
    if (relay.error) {
      stopAgent(relay.error);
      return;
    }
    // Back after a lost connection: the relay's credential, while it holds (a few seconds of
    // margin for the hello's way), brings this tab back in its old place, without the API.
    const resume = conn.resume && Date.now() < conn.resumeExpires - 5000 ? conn.resume : null;
    let ticket;
    if (!resume) {
      try {
        setStatus('Getting a ticket…');
        const answer = await api('agent/ticket', 'POST', {});
        ticket = answer && answer.ticket;
        if (typeof ticket !== 'string' || ticket === '') throw new ApiError(500, 'The answer held no ticket.');
      } catch (e) {
        if (generation !== conn.generation) return;
        if (e.status === 401) {
          sessionLost();
          return;
        }
        scheduleRetry('Could not get a ticket: ' + e.message);
        return;
      }
    }
    if (generation !== conn.generation || !ui.agentSwitch.checked) return;

    setStatus('Connecting to the relay…');
    let ws;
    try {
      ws = new WebSocket(relay.ws);
    } catch (e) {
      stopAgent('Cannot open the relay address: ' + e.message);
      return;
    }
    conn.ws = ws;
    ws.onopen = () => {
      if (conn.ws !== ws) return;
      const params = resume ? { resume: resume, client: CLIENT } : { ticket: ticket, client: CLIENT };
      send(ws, { jsonrpc: '2.0', id: 1, method: 'relay/hello', params: params });
      ticket = null;
      setStatus('Saying hello to the relay…');
    };
    ws.onmessage = (event) => {
      if (conn.ws === ws) onMessage(ws, event.data);
    };
    ws.onclose = (event) => {
      if (conn.ws === ws) onClosed(event);
    };
    ws.onerror = () => {}; // a close event follows, with the code
  }

  function onClosed(event) {
    conn.ws = null;
    conn.hello = null;
    conn.inFlight.clear();
    conn.cancelled.clear();
    setAgents(null);
    if (conn.displaced || event.code === CLOSE_DISPLACED) {
      stopAgent('An agent now works in your other tab. Switch it on here to take it back.');
      return;
    }
    if (event.code === CLOSE_BAD_TICKET) conn.resume = null;
    if (event.code === CLOSE_SIGNED_OUT) {
      stopAgent('Your sign-in has ended.');
      sessionLost();
      return;
    }
    if (!ui.agentSwitch.checked) {
      setStatus('Agent off.');
      return;
    }
    const reason = event.reason ? ': ' + event.reason : '';
    scheduleRetry('The relay connection closed (code ' + event.code + reason + ').');
  }

  function onMessage(ws, data) {
    let msg;
    try { msg = JSON.parse(data); } catch (e) { return; }
    if (!isObject(msg) || msg.jsonrpc !== '2.0') return;
    const hasId = Object.prototype.hasOwnProperty.call(msg, 'id');
    if (typeof msg.method === 'string') {
      if (hasId) onRequest(ws, msg);
      else onNotification(msg.method, isObject(msg.params) ? msg.params : {});
      return;
    }
    // A response: the only request this tab makes is its hello.
    if (hasId && msg.id === 1 && !conn.hello) onHelloAnswer(msg);
  }

  function onHelloAnswer(msg) {
    if (isObject(msg.result)) {
      conn.hello = msg.result;
      conn.attempt = 0;
      const r = msg.result;
      setStatus('Connected as ' + r.account + ' (tab ' + r.tabId + '). The agent can work in this tab.', 'ok');
      setAgents(r.agents);
      if (typeof r.account === 'string') ui.who.textContent = 'Signed in as ' + r.account;
      return;
    }
    const said = isObject(msg.error) && typeof msg.error.message === 'string' ? msg.error.message : 'no reason given';
    setStatus('The relay refused this tab: ' + said + '.', 'bad');
    // The relay closes the socket next (4401); onClosed retries with a new ticket.
  }

  function onNotification(method, params) {
    if (method === 'relay/resume') {
      if (typeof params.resume === 'string' && typeof params.expiresIn === 'number') {
        conn.resume = params.resume;
        conn.resumeExpires = Date.now() + params.expiresIn * 1000;
      }
    } else if (method === 'relay/agents') {
      setAgents(typeof params.count === 'number' ? params.count : null);
    } else if (method === 'relay/displaced') {
      conn.displaced = true;
      setStatus('An agent now works in your other tab.', 'bad');
    } else if (method === 'notifications/cancelled') {
      const key = idKey(params.requestId);
      if (conn.inFlight.has(key)) conn.cancelled.add(key);
    }
  }

  function onRequest(ws, msg) {
    const key = idKey(msg.id);
    conn.inFlight.add(key);
    Promise.resolve()
      .then(() => dispatch(msg.method, msg.params))
      .then(
        (result) => ({ jsonrpc: '2.0', id: msg.id, result: result }),
        (e) => {
          const error = e instanceof RpcError
            ? { code: e.code, message: e.message }
            : { code: -32603, message: 'Internal error in the editor' };
          if (e instanceof RpcError && e.data !== undefined) error.data = e.data;
          return { jsonrpc: '2.0', id: msg.id, error: error };
        })
      .then((answer) => {
        if (conn.ws !== ws) return; // that socket is gone; so is the request
        conn.inFlight.delete(key);
        if (conn.cancelled.delete(key)) return; // the agent gave up: drop the late answer
        send(ws, answer);
      });
  }

  ui.agentSwitch.addEventListener('change', () => {
    if (ui.agentSwitch.checked) startAgent();
    else stopAgent('Agent off.');
  });

  // ---------------------------------------------------------------- agent tokens

  function shellWord(s) {
    return /^[A-Za-z0-9_.:\/@%+=,-]+$/.test(s) ? s : "'" + s.replace(/'/g, "'\\''") + "'";
  }

  function hideToken() {
    ui.tokenValue.value = '';
    ui.tokenCommand.value = '';
    ui.copyNote.textContent = '';
    ui.tokenBox.hidden = true;
  }

  function when(iso) {
    return iso ? new Date(iso).toLocaleString() : 'never';
  }

  // The account's tokens: created, expires, last used, and Revoke (which stops the token at
  // the agent's next request: the relay is told at once, HOST-API.md). A token that an agent
  // got by signing in (OAuth) carries its client's name and is marked "signed in"; revoking it
  // signs that agent out for good (it cannot refresh its way back). The name is the client's
  // own word: isolated in a <bdi>, and followed by the host that vouches for it when the
  // client is named by a metadata document (clientHost).
  async function listTokens() {
    let tokens;
    try {
      tokens = await api('agent-tokens', 'GET');
    } catch (e) {
      if (e.status === 401) return sessionLost();
      ui.tokenError.textContent = 'Could not list the tokens: ' + e.message;
      ui.tokenError.hidden = false;
      return;
    }
    ui.tokenList.textContent = '';
    for (const t of Array.isArray(tokens) ? tokens : []) {
      const row = document.createElement('tr');
      const label = t.client ? t.client + (t.clientHost ? ' (' + t.clientHost + ')' : '') : t.name;
      const name = document.createElement('td');
      if (t.client) {
        const who = document.createElement('bdi');
        who.textContent = t.client;
        name.appendChild(who);
        if (t.clientHost) name.appendChild(document.createTextNode(' (' + t.clientHost + ')'));
      } else {
        name.textContent = label;
      }
      if (t.client) {
        const how = document.createElement('span');
        how.className = 'muted small';
        how.textContent = ' — signed in';
        name.appendChild(how);
      }
      row.appendChild(name);
      for (const cell of [when(t.createdAt), when(t.expiresAt), when(t.usedAt)]) {
        const td = document.createElement('td');
        td.textContent = String(cell);
        row.appendChild(td);
      }
      const td = document.createElement('td');
      const revoke = document.createElement('button');
      revoke.type = 'button';
      revoke.textContent = 'Revoke';
      revoke.setAttribute('aria-label', 'Revoke ' + label);
      revoke.addEventListener('click', async () => {
        revoke.disabled = true;
        try {
          await api('agent-tokens/' + Number(t.id), 'DELETE');
        } catch (e) {
          if (e.status === 401) return sessionLost();
          ui.tokenError.textContent = 'Could not revoke "' + label + '": ' + e.message;
          ui.tokenError.hidden = false;
        }
        listTokens();
      });
      td.appendChild(revoke);
      row.appendChild(td);
      ui.tokenList.appendChild(row);
    }
    ui.tokenListEmpty.hidden = ui.tokenList.children.length > 0;
  }

  ui.openTokens.addEventListener('click', () => {
    hideToken();
    ui.tokenError.hidden = true;
    ui.tokensDialog.showModal();
    ui.tokenName.focus();
    listTokens();
  });
  ui.closeTokens.addEventListener('click', () => {
    hideToken();
    ui.tokensDialog.close();
  });
  ui.tokensDialog.addEventListener('close', hideToken);

  ui.tokenForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    ui.createToken.disabled = true;
    ui.tokenError.hidden = true;
    hideToken();
    const name = ui.tokenName.value.trim();
    if (name === '') {
      ui.tokenError.textContent = 'Give the token a name, e.g. the agent and the machine it runs on.';
      ui.tokenError.hidden = false;
      ui.createToken.disabled = false;
      return;
    }
    try {
      const made = await api('agent-tokens', 'POST', { name: name, days: Number(ui.tokenDays.value) });
      if (!ui.tokensDialog.open) {
        listTokens();  // closed meanwhile: the token is not shown outside the dialog
        return;
      }
      const url = relay.error ? 'RELAY_URL' : relay.http;
      ui.tokenValue.value = made.token;
      ui.tokenCommand.value = 'claude mcp add --transport http editor ' + shellWord(url) +
        ' --header "Authorization: Bearer ' + made.token + '"';
      ui.tokenExpiry.textContent = made.expiresAt
        ? 'It expires on ' + new Date(made.expiresAt).toLocaleDateString() + '.'
        : '';
      ui.tokenBox.hidden = false;
      ui.tokenName.value = '';
      ui.tokenValue.focus();
      ui.tokenValue.select();
      listTokens();
    } catch (e) {
      if (e.status === 401) {
        sessionLost();
        return;
      }
      ui.tokenError.textContent = e.status === 409
        ? 'This account already has 20 agent tokens; revoke one first.'
        : 'Could not create a token: ' + e.message;
      ui.tokenError.hidden = false;
    } finally {
      ui.createToken.disabled = false;
    }
  });

  async function copyFrom(field) {
    field.focus();
    field.select();
    let ok = false;
    try {
      if (navigator.clipboard && window.isSecureContext) {
        await navigator.clipboard.writeText(field.value);
        ok = true;
      } else {
        ok = document.execCommand('copy');
      }
    } catch (e) {
      ok = false;
    }
    ui.copyNote.textContent = ok ? 'Copied.' : 'Copying failed; the text is selected: press Ctrl+C (⌘C).';
  }
  ui.copyToken.addEventListener('click', () => copyFrom(ui.tokenValue));
  ui.copyCommand.addEventListener('click', () => copyFrom(ui.tokenCommand));
  ui.tokenDone.addEventListener('click', hideToken);

  // ---------------------------------------------------------------- start

  ui.title.value = 'Shopping list';
  ui.body.value = 'Milk\nBread\n';
  showTitle();
  renderUndo();
  function showRelay() {
    if (relay.error) {
      ui.relayUrl.textContent = '(none)';
      ui.relayError.textContent = relay.error;
      ui.relayError.hidden = false;
    } else {
      ui.relayUrl.textContent = relay.ws;
      ui.relayError.hidden = true;
    }
  }

  api('relay-config', 'GET')
    .then((config) => Array.isArray(config && config.relayUrls) ? config.relayUrls : [], () => [])
    .then((allowed) => {
      relay = relayAddress(allowed);
      showRelay();
      // Already signed in (a session cookie from before)? Any cookie route tells; this one is harmless.
      return api('agent-tokens', 'GET').then(() => showEditor(null), () => showLogin(''));
    });
})();
