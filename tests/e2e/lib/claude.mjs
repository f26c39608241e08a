// Claude Code itself, pinned in tests/claude/ (scripts/setup.sh --tests installs it), run the way
// the e2e tests need: a throwaway HOME and project folder, no login, its model a fake Messages
// API on loopback, no traffic elsewhere.
import { execFile, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const claudeBin = join(here, '..', '..', 'claude', 'node_modules', '.bin', 'claude');

// A fake Anthropic Messages API: the first turn calls TOOL, the second quotes its result; each
// request is recorded in modelTurns ({tools, result}).
export function startFakeModel(TOOL, modelTurns) {
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

// A Claude Code of its own: HOME and project folders made for it, the model at apiUrl.
export class ClaudeCode {
  constructor(apiUrl, extraEnv = {}) {
    this.home = mkdtempSync(join(tmpdir(), 'relay-claude-home-'));
    this.project = mkdtempSync(join(tmpdir(), 'relay-claude-project-'));
    this.env = {
      PATH: process.env.PATH,
      HOME: this.home,
      ANTHROPIC_BASE_URL: apiUrl,
      ANTHROPIC_API_KEY: 'fake-key-for-the-fake-model',
      // No traffic but to the fake model and the relay.
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_AUTOUPDATER: '1',
      // MCP tools in the first request (not deferred behind a tool search).
      ENABLE_TOOL_SEARCH: 'false',
      ...extraEnv,
    };
  }

  // Runs a command to its end: {code, stdout, stderr}.
  run(args, { timeout = 120000 } = {}) {
    return new Promise((resolve) => {
      execFile(claudeBin, args, { cwd: this.project, timeout, env: this.env },
        (error, stdout, stderr) => resolve({ code: error ? (error.code ?? 1) : 0, stdout, stderr }));
    });
  }

  // Removes its HOME and project folders.
  remove() {
    rmSync(this.home, { recursive: true, force: true });
    rmSync(this.project, { recursive: true, force: true });
  }

  // Starts a command that talks on its standard input and output (the caller ends it). With
  // tty, on a pseudo-terminal (util-linux's script), wide enough that no line is wrapped: what
  // asks the person something (`claude mcp login --no-browser`) refuses to run without one.
  spawn(args, { tty = false } = {}) {
    if (!tty) {
      return spawn(claudeBin, args, { cwd: this.project, env: this.env, stdio: ['pipe', 'pipe', 'pipe'] });
    }
    const quoted = [claudeBin, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
    return spawn('script', ['-qfec', `stty cols 4000 rows 50; exec ${quoted}`, '/dev/null'], {
      cwd: this.project, env: this.env, stdio: ['pipe', 'pipe', 'pipe'],
    });
  }
}
