// The relay's throughput, measured: one tool call crosses the agent's gateway, the router and
// the tab's gateway to a tab and back. wrk drives the agent side over keep-alive connections;
// a Node tab answers at once. Prints figures; asserts nothing.
//   bench/run.sh [seconds] [connections]
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { startStack } from '../tests/e2e/lib/stack.mjs';
import { ScriptedTab } from '../tests/e2e/lib/tab.mjs';
import { RawAgent } from '../tests/e2e/lib/agent.mjs';

const seconds = Number(process.argv[2] ?? 10);
const connections = Number(process.argv[3] ?? 64);
const stack = await startStack({ gateways: 2, users: ['bench'], authsvcArgs: ['--verify_ttl=60s'] });
try {
  const tab = new ScriptedTab(stack.gateways[0].wsUrl);
  const answer = { content: [{ type: 'text', text: 'The document "Plan" is open.' }] };
  tab.handlers['tools/call'] = () => answer;
  await tab.hello(await stack.ticket('bench'));
  const token = await stack.mintToken('bench');
  const agent = new RawAgent(stack.gateways[1].url, token);
  await agent.initialize();
  const check = await agent.callTool('get_view');
  if (check.message.result?.content?.[0]?.text !== answer.content[0].text) throw new Error('the path does not work');

  // CPU seconds (user + system) a process has used so far, from /proc.
  const cpu = (pid) => {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  };
  const procs = () => [...stack.procs.filter((p) => !p.exited).map((p) => [p.name, p.child.pid]), ['tab (node)', process.pid]];
  // wrk runs as a child process, asynchronously: the tab in this process must keep answering.
  const run = async (method, url) => {
    const before = procs().map(([name, pid]) => [name, pid, cpu(pid)]);
    const out = await new Promise((resolve, reject) => {
      const child = spawn('wrk', ['-t2', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', new URL('./call.lua', import.meta.url).pathname, url], {
        env: { ...process.env, BENCH_TOKEN: token, BENCH_SESSION: agent.session, BENCH_METHOD: method },
      });
      let text = '';
      child.stdout.on('data', (d) => { text += d; });
      child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`wrk exited ${code}`))));
    });
    const usage = before.map(([name, pid, start]) => `${name} ${(100 * (cpu(pid) - start) / seconds).toFixed(0)}%`).join(', ');
    const line = out.split('\n').find((l) => l.startsWith('calls:'));
    const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? '0';
    const timeouts = /timeout (\d+)/.exec(out)?.[1] ?? '0';
    return `${line}\n    non-2xx: ${non2xx}, timeouts: ${timeouts}; CPU: ${usage}`;
  };
  const rss = () => stack.procs.filter((p) => p.child?.pid && !p.exited).map((p) => {
    const kb = Number(execFileSync('ps', ['-o', 'rss=', '-p', String(p.child.pid)]).toString().trim() || 0);
    return `${p.name} ${(kb / 1024).toFixed(1)} MiB`;
  }).join(', ');

  console.log(`relay benchmark: ${seconds} s per run, ${connections} keep-alive connections, 2 wrk threads, ${(await import('node:os')).cpus().length} cores`);
  console.log(`ping (the agent's gateway alone, bearer checked through authsvc's cache):\n  ${await run('ping', stack.gateways[1].url)}`);
  console.log(`tools/call (agent gateway -> router -> tab gateway -> tab and back):\n  ${await run('tools/call', stack.gateways[1].url)}`);
  console.log(`resident memory after the runs: ${rss()}`);
  tab.close();
} finally {
  await stack.stop();
}
