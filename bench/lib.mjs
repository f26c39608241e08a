// What the benchmark's modes share: the peers, the load tools, /proc readings, accounts.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { binDir, repoRoot, startProcess } from '../tests/e2e/lib/stack.mjs';

export const shared = resolve(repoRoot, '..', 'shared', 'bench');
export const modules = join(repoRoot, 'tests', 'node_modules');
export const node = process.execPath;
export const nodeEnv = { BENCH_MODULES: modules };
export const origin = 'http://editor.test';
export const wrkScript = join(shared, 'tools-call.lua');
export const callBody = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}';

// The fields of /proc/PID/stat after the command's name (state first), or null if it is gone.
function statFields(pid) {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  } catch {
    return null;
  }
}

// A command and its arguments, run on CPU cpu alone from its start when cpu is not null
// (taskset execs the command: the pid is the command's).
export const onCpu = (cpu, command, args) => (cpu === null ? [command, args] : ['taskset', ['-c', String(cpu), command, ...args]]);

// Moves a running process, every thread of it, to the CPUs in list ("0", "1", "0,1"), and
// checks that each thread took it: a thread the move missed would run where it liked.
export function pin(pid, list) {
  execFileSync('taskset', ['-a', '-p', '-c', list, String(pid)], { stdio: 'ignore' });
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const allowed = /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8'))?.[1];
    if (allowed !== list.replace(/^0,1$/, '0-1')) throw new Error(`thread ${tid} of ${pid} runs on CPUs ${allowed}, not ${list}`);
  }
}

// CPU seconds (user + system) a process has used so far, from /proc.
export function cpuSeconds(pid) {
  const fields = statFields(pid);
  return fields ? (Number(fields[11]) + Number(fields[12])) / 100 : 0;
}
// CPU milliseconds a process's live threads have run so far, from the scheduler's own
// nanosecond count (/proc/PID/task/TID/schedstat): cpuSeconds' ticks are 10 ms, too coarse for
// a burst of a hundred. A thread that has ended no longer counts.
export function threadsCpuMs(pid) {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // ended meanwhile
    }
  }
  return ns / 1e6;
}

// Context switches a process's threads have made so far, from /proc: [voluntary (it slept),
// involuntary (it was put off its core while it could still run)]. Each is a wake-up paid for;
// on this paravirtualised machine one costs more than the work of a call (docs/performance.md).
// (A thread that ended takes its count with it: the services' threads live as long as they do.)
export function contextSwitches(pid) {
  const counts = [0, 0];
  let tasks = [];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return counts;  // gone
  }
  for (const task of tasks) {
    try {
      const status = readFileSync(`/proc/${pid}/task/${task}/status`, 'utf8');
      counts[0] += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      counts[1] += Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    } catch {
      // this thread ended between the listing and the read
    }
  }
  return counts;
}
// The same for a process and its children (nginx's workers, the PHP server's), which /proc
// counts apart from their parent until it has waited for them.
export function treeCpuSeconds(pid) {
  let total = cpuSeconds(pid);
  for (const entry of readdirSync('/proc')) {
    if (/^\d+$/.test(entry) && Number(statFields(entry)?.[1]) === pid) total += cpuSeconds(entry);
  }
  return total;
}
// The kernel's TCP counters (/proc/net/snmp's Tcp and /proc/net/netstat's TcpExt), by name: the
// bench prints what moved during a storm (resets sent and why, listen queues overflowed).
export function tcpCounters() {
  const counters = {};
  for (const file of ['/proc/net/snmp', '/proc/net/netstat']) {
    const lines = readFileSync(file, 'utf8').split('\n');
    for (let i = 0; i + 1 < lines.length; i += 2) {
      const [names, values] = [lines[i].split(/\s+/), lines[i + 1].split(/\s+/)];
      if (!/^Tcp(Ext)?:$/.test(names[0])) continue;
      names.slice(1).forEach((name, k) => { counters[`${names[0].slice(0, -1)}${name}`] = Number(values[k + 1]); });
    }
  }
  return counters;
}
export const rssKiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

// Runs a command to its end; input, if given, is its standard input (secrets go there).
export async function run(command, args, env = {}, input = undefined) {
  return new Promise((resolveRun, reject) => {
    const child = spawn(command, args, { env: { ...process.env, ...env } });
    child.stdin.end(input ?? '');
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    child.on('exit', (code) => (code === 0 ? resolveRun({ out, pid: child.pid }) : reject(new Error(`${command} exited ${code}: ${out}`))));
  });
}

export function ms(text) {
  const m = /([\d.]+)(us|ms|s)/.exec(text);
  if (!m) return NaN;
  return Number(m[1]) * (m[2] === 'us' ? 0.001 : m[2] === 's' ? 1000 : 1);
}

// Starts a Node peer and waits for its "listening on" line.
export async function startPeer(name, script, args) {
  const proc = startProcess(name, node, [join(shared, script), ...args], { env: nodeEnv });
  const match = await proc.waitForLine((l) => /listening on 127\.0\.0\.1:(\d+)/.exec(l), `${name} listening`);
  proc.port = Number(match[1]);
  return proc;
}

export async function startEchoTab(name, wsUrl, ticket) {
  const proc = startProcess(name, node, [join(shared, 'echo-tab.mjs'), wsUrl, origin, ticket], { env: nodeEnv });
  await proc.waitForLine((l) => l.startsWith('tab on as'), `${name} on`);
  return proc;
}

export async function initialize(url, token) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '0' } } }),
  });
  const sid = res.headers.get('mcp-session-id');
  await res.text();
  await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  }).then((r) => r.text());
  return sid;
}

// The p-th percentile of latencies in ms (p in 0..1), as relay-loadgen computes it.
export function percentile(values, p) {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.round(p * (sorted.length - 1)))];
}

// The load generator's sleeping thread: how often the machine woke it late during the point.
export const stallText = (p) => `sleeper woken ≥ 2 ms late ${p.stalls_2ms}× (longest ${p.stall_max_ms.toFixed(1)} ms)`;

// relay-loadgen against a system ({url, sid, token}; the token by standard input): open loop at
// rate, or closed (each connection again once answered) with { closed: true }. sessions: many
// [sid, token] pairs instead, a connection each.
// cpu: the generator runs on that CPU alone. calls: the figures add every answered call as
// [due, latency] (due in ms since the epoch, latency in ms), to pick those of a moment.
export async function openLoop(system, rate, loadSeconds, { connections = 64, closed = false, sessions = null, cpu = null, calls = false } = {}) {
  const headers = ['Accept: application/json, text/event-stream', 'MCP-Protocol-Version: 2025-11-25'];
  const line = ([sid, token]) => [...(sid ? [`Mcp-Session-Id: ${sid}`] : []), ...(token ? [`Authorization: Bearer ${token}`] : [])].join('|');
  const lines = sessions ?? [[system.sid, system.token]];
  const { out } = await run(...onCpu(cpu, join(binDir, 'relay-loadgen'), [`--url=${system.url}`, `--rate=${Math.round(rate)}`, `--seconds=${loadSeconds}`, `--connections=${sessions ? sessions.length : connections}`, `--body=${callBody}`, `--headers=${headers.join('|')}`, '--stdin_headers', ...(closed ? ['--closed'] : []), ...(calls ? ['--calls'] : [])]), {}, lines.map(line).join('\n') + '\n');
  return JSON.parse(out.trim().split('\n').pop());
}


// n accounts named prefix0…, each with a tab ticket and an agent token (either may be left out),
// made in one PHP process of the reference host API: [{ name, ticket, token }]. The password is
// hashed once and the record copied: hashing it n times would take a minute per 1,000 accounts.
// Tickets live 60 s: use them at once.
export function makeAccounts(stack, n, prefix, { tickets = true, tokens = true } = {}) {
  const php = `require '${join(repoRoot, 'hostapi', 'src', 'bootstrap.php')}';
    $store = HostApi\\Store::fromEnv(); $users = new HostApi\\Users($store);
    $tickets = new HostApi\\Tickets($store, $users); $tokens = new HostApi\\Tokens($store, $users);
    $users->add("${prefix}0", bin2hex(random_bytes(12)), "user"); $template = $users->get("${prefix}0");
    $made = [];
    for ($i = 0; $i < ${n}; $i++) {
      if ($i > 0) { $store->write('users', "${prefix}$i", [...$template, 'name' => "${prefix}$i", 'uid' => bin2hex(random_bytes(8))]); }
      $made[] = ${tokens ? `$tokens->mint("${prefix}$i", 'bench', null)[1]` : "'-'"};
    }
    // Tickets last, in a pass of their own: they live 60 s, and tokens take 8 ms each to mint.
    for ($i = 0; $i < ${n}; $i++) {
      echo ${tickets ? `$tickets->mint($users->get("${prefix}$i"))` : "'-'"}, ' ', $made[$i], "\\n";
    }`;
  const lines = execFileSync('php', ['-r', php], { env: { ...process.env, ...stack.hostapiEnv }, maxBuffer: 256 << 20 }).toString().trim().split('\n');
  return lines.map((line, i) => {
    const [ticket, token] = line.split(' ');
    stack.secrets.push(...[ticket, token].filter((s) => s !== '-'));
    return { name: `${prefix}${i}`, ticket: tickets ? ticket : null, token: tokens ? token : null };
  });
}

// A fresh ticket for each of the accounts prefix0 … prefix(n-1) (made by makeAccounts), in one
// PHP process: for tabs that connect again. They live 60 s.
export function mintTickets(stack, prefix, n) {
  const php = `require '${join(repoRoot, 'hostapi', 'src', 'bootstrap.php')}';
    $store = HostApi\\Store::fromEnv(); $users = new HostApi\\Users($store);
    $tickets = new HostApi\\Tickets($store, $users);
    for ($i = 0; $i < ${n}; $i++) { echo $tickets->mint($users->get("${prefix}$i")), "\\n"; }`;
  const tickets = execFileSync('php', ['-r', php], { env: { ...process.env, ...stack.hostapiEnv }, maxBuffer: 256 << 20 }).toString().trim().split('\n');
  stack.secrets.push(...tickets);
  return tickets;
}
