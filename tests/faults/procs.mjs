// A process the suite starts inside a namespace: its output goes to a log file and is
// scanned line by line (waitForLine, onLine); it is ended by its pid (a php -S server with
// its workers by its process group), also from the exit handler if the suite dies.
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { onExit } from './cleanup.mjs';

const sanitizerReport = /ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: UndefinedBehaviorSanitizer/;

export class Proc {
  // argv: the full command line (usually `ip netns exec NS binary …`, which execs in place,
  // so the child's pid is the service's own).
  // logStdout false: only stderr goes to the log file (a driver's stdout is the events file).
  constructor(name, argv, { env = {}, group = false, logFile, stdin = false, logStdout = true } = {}) {
    this.name = name;
    this.argv = argv;
    this.group = group;
    this.tailLines = [];
    this.waiters = [];
    this.listeners = [];
    this.sanitizerLines = [];
    this.exited = false;
    this.stoppedBySignal = false;
    this.log = logFile ? createWriteStream(logFile, { flags: 'a' }) : null;
    this.child = spawn(argv[0], argv.slice(1), {
      env: { ...process.env, ...env },
      stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      detached: group,
    });
    this.pid = this.child.pid;
    onExit(() => this.killSync());
    for (const stream of [this.child.stdout, this.child.stderr]) {
      let partial = '';
      const logged = logStdout || stream === this.child.stderr;
      stream.setEncoding('utf8');
      stream.on('data', (chunk) => {
        if (logged) this.log?.write(chunk);
        partial += chunk;
        const parts = partial.split('\n');
        partial = parts.pop();
        for (const line of parts) this.onLine(line);
      });
    }
    this.exitPromise = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.exited = true;
        this.exitCode = code;
        this.exitSignal = signal;
        for (const w of this.waiters) w.reject(new Error(`${name} exited (${code ?? signal}) before: ${w.what}\n${this.tail()}`));
        this.waiters = [];
        resolve({ code, signal });
      });
    });
    this.child.on('error', () => {});
  }

  onLine(line) {
    this.tailLines.push(line);
    if (this.tailLines.length > 40) this.tailLines.shift();
    if (sanitizerReport.test(line)) this.sanitizerLines.push(line);
    for (const fn of this.listeners) fn(line);
    this.waiters = this.waiters.filter((w) => {
      const match = w.test(line);
      if (match) w.resolve(match);
      return !match;
    });
  }

  tail() {
    return this.tailLines.slice(-20).join('\n');
  }

  // Resolves with the first line for which test returns a truthy value: a future one, or
  // with past, also one of the last 40 already printed (start-up lines come in any order).
  waitForLine(test, what, timeoutMs = 20000, { past = false } = {}) {
    if (past) {
      for (const line of this.tailLines) {
        const match = test(line);
        if (match) return Promise.resolve(match);
      }
    }
    if (this.exited) return Promise.reject(new Error(`${this.name} has exited: ${what}\n${this.tail()}`));
    return new Promise((resolve, reject) => {
      const waiter = { test, what };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`${this.name}: timed out waiting for ${what}\n${this.tail()}`));
      }, timeoutMs);
      waiter.resolve = (v) => { clearTimeout(timer); resolve(v); };
      waiter.reject = (e) => { clearTimeout(timer); reject(e); };
      this.waiters.push(waiter);
    });
  }

  // The relay's binaries print `listening on HOST:PORT` in the msg of a JSON line.
  async listeningPort() {
    const match = await this.waitForLine((line) => {
      try {
        return /^listening on .*:(\d+)$/.exec(JSON.parse(line).msg ?? '');
      } catch {
        return null;
      }
    }, 'listening on HOST:PORT', 20000, { past: true });
    return Number(match[1]);
  }

  signal(sig) {
    if (this.exited) return;
    try { process.kill(this.group ? -this.pid : this.pid, sig); } catch {}
  }

  // Ends it (SIGTERM, SIGKILL after 5 s); a stopped process is continued first.
  async stop(sig = 'SIGTERM') {
    if (this.exited) return this.exitPromise;
    this.signal('SIGCONT');
    this.signal(sig);
    const timer = setTimeout(() => this.signal('SIGKILL'), 5000);
    await this.exitPromise;
    clearTimeout(timer);
    this.log?.end();
    return this.exitPromise;
  }

  killSync() {
    if (this.exited) return;
    try { process.kill(this.group ? -this.pid : this.pid, 'SIGKILL'); } catch {}
  }

  send(obj) {
    this.child.stdin.write(JSON.stringify(obj) + '\n');
  }
}
