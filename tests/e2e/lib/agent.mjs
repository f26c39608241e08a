// A bare-bones MCP agent over fetch, for the transport details the SDK hides.
export class RawAgent {
  constructor(url, token) {
    this.url = url;
    this.token = token;
    this.nextId = 1;
  }

  headers(extra = {}) {
    const h = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${this.token}`,
      ...extra,
    };
    if (this.session) h['mcp-session-id'] = this.session;
    return h;
  }

  async initialize() {
    const res = await this.post({ jsonrpc: '2.0', id: this.nextId++, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    if (res.status !== 200) throw new Error(`initialize: ${res.status}`);
    this.session = res.headers.get('mcp-session-id');
    await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return this.session;
  }

  post(body, { headers = {}, signal } = {}) {
    return fetch(this.url, { method: 'POST', headers: this.headers(headers), body: typeof body === 'string' ? body : JSON.stringify(body), signal });
  }

  // A request; resolves with the JSON-RPC answer, read from JSON or from the SSE stream.
  async request(method, params, options = {}) {
    const id = this.nextId++;
    const res = await this.post({ jsonrpc: '2.0', id, method, params }, options);
    const type = res.headers.get('content-type') ?? '';
    if (type.startsWith('text/event-stream')) {
      const events = await readSse(res.body, (e) => e.data?.id === id);
      return { status: res.status, events, message: events[events.length - 1].data };
    }
    return { status: res.status, message: await res.json() };
  }

  async callTool(name, args = {}, meta, options = {}) {
    const params = { name, arguments: args };
    if (meta) params._meta = meta;
    return this.request('tools/call', params, options);
  }

  delete() {
    return fetch(this.url, { method: 'DELETE', headers: this.headers() });
  }

  // Opens the session's GET stream; returns { res, events (async iterator helper) }.
  async openStream(lastEventId) {
    const controller = new AbortController();
    const headers = this.headers({ accept: 'text/event-stream' });
    if (lastEventId !== undefined) headers['last-event-id'] = String(lastEventId);
    const res = await fetch(this.url, { method: 'GET', headers, signal: controller.signal });
    return { res, stream: new SseReader(res.body), close: () => controller.abort() };
  }
}

// Reads server-sent events from a fetch body, including comment lines.
export class SseReader {
  constructor(body) {
    this.reader = body.getReader();
    this.decoder = new TextDecoder();
    this.buffer = '';
    this.queue = [];
  }

  // The next event or comment: { id, data, comment }.
  async next() {
    for (;;) {
      const end = this.buffer.indexOf('\n\n');
      if (end >= 0) {
        const block = this.buffer.slice(0, end);
        this.buffer = this.buffer.slice(end + 2);
        const event = {};
        const data = [];
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) event.comment = line.slice(1).trim();
          else if (line.startsWith('id:')) event.id = line.slice(3).trim();
          // As the SSE spec reads them: an event's data lines joined by "\n".
          else if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
        }
        if (data.length > 0) event.data = JSON.parse(data.join('\n'));
        return event;
      }
      const { value, done } = await this.reader.read();
      if (done) return null;
      this.buffer += this.decoder.decode(value, { stream: true });
    }
  }

  // Events until one satisfies until(event); comments skipped.
  async collect(until, timeoutMs = 10000) {
    const out = [];
    const timer = setTimeout(() => this.reader.cancel(), timeoutMs);
    try {
      for (;;) {
        const event = await this.next();
        if (event === null) throw new Error(`stream ended before the expected event; got ${JSON.stringify(out)}`);
        if (event.data === undefined) continue;
        out.push(event);
        if (until(event)) return out;
      }
    } finally {
      clearTimeout(timer);
    }
  }
}

export async function readSse(body, until) {
  return new SseReader(body).collect(until);
}
