// A delaying, stalling, resetting TCP proxy: this kernel has no netem, so the suite puts this
// between the gateways and each router host. It runs inside the router's namespace
// (`ip netns exec <router ns> node proxy.mjs CONFIG`), listens on the host's address on the
// same port numbers as the router's gRPC and link ports (the router binds them on 127.0.0.1),
// and forwards each connection to the router. The gateway learns the link port from
// OpenLink and dials it on the host it reached gRPC on, so the ports must be the same.
//
// What it can do, per source host (the gateway a connection comes from, by its address):
// - delay: a one-way delay added in each direction. Bytes keep their order: each direction
//   is a queue of chunks with release times that never go backwards.
// - stall: nothing moves for a while (reading paused, so TCP back-pressure builds up as on a
//   stuck network); TCP cannot lose bytes, so loss is modelled as stalls and resets.
// - reset: every connection reset (RST) at once, both sides.
// - cut: reset, and new connections reset at once until healed (a partition at this hop).
//
// Control: one JSON command per line on stdin, each acknowledged with {"ack": id, …} on
// stdout once it has taken effect: {"id", "op": "delay"|"stall"|"reset"|"cut"|"heal", "from":
// host or "*", "ms"}; "stats" answers how late delayed chunks left (and starts counting anew);
// "listen" {"port"} forwards one more port (the latency test's plain TCP chain).
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';

const config = JSON.parse(process.argv[2]);  // { listen: [{host, port, targetPort}], peers: {ip: host} }
const now = () => performance.now();
const HIGH_WATER = 4 << 20;  // bytes queued in one direction before its reading pauses

// Per source host: { delay, stalledUntil, cut }.
const rules = new Map();
const rule = (from) => {
  if (!rules.has(from)) rules.set(from, { delay: 0, stalledUntil: 0, cut: false });
  return rules.get(from);
};
const connections = new Set();
let lateness = { count: 0, sum: 0, max: 0 };

// One direction of one connection: src's bytes to dst, each after its release time.
class Direction {
  constructor(conn, src, dst) {
    this.conn = conn;
    this.src = src;
    this.dst = dst;
    this.queue = [];
    this.head = 0;
    this.bytes = 0;
    this.lastRelease = 0;
    this.ended = false;       // src sent FIN: end dst once the queue is out
    this.timer = null;
    this.waitingDrain = false;
    src.on('data', (chunk) => this.push(chunk));
    src.on('end', () => { this.ended = true; this.pump(); });
  }

  push(chunk) {
    const r = rule(this.conn.from);
    const arrival = now();
    const release = Math.max(arrival + r.delay, this.lastRelease);
    this.lastRelease = release;
    this.queue.push({ chunk, release, arrival });
    this.bytes += chunk.length;
    if (this.bytes > HIGH_WATER) this.src.pause();
    this.pump();
  }

  cancelTimer() {
    if (!this.timer) return;
    if (this.timerIsImmediate) clearImmediate(this.timer);
    else clearTimeout(this.timer);
    this.timer = null;
  }

  wake(ms) {
    this.timerIsImmediate = ms === 0;
    this.timer = ms === 0 ? setImmediate(() => { this.timer = null; this.pump(); })
      : setTimeout(() => { this.timer = null; this.pump(); }, ms);
  }

  pump() {
    this.cancelTimer();
    if (this.conn.closed || this.waitingDrain) return;
    const r = rule(this.conn.from);
    let t = now();
    if (r.stalledUntil > t) {
      this.src.pause();
      this.wake(r.stalledUntil - t + 1);
      return;
    }
    while (this.head < this.queue.length) {
      const item = this.queue[this.head];
      if (item.release > t) {
        // Timers are late by up to a millisecond or more: wake 1.5 ms early, then spin on
        // setImmediate, so that a 10 ms delay is 10 ms and not 11 (the latency test measures
        // the relay's own added time against this delay, to the millisecond).
        const wait = item.release - t;
        this.wake(wait > 2 ? wait - 1.5 : 0);
        return;
      }
      this.head++;
      this.bytes -= item.chunk.length;
      // How late each chunk leaves against its release time (a delayed chunk only: a stall
      // is lateness on purpose): the latency test reports it, to tell the proxy's error
      // from the relay's.
      if (item.release > item.arrival) {
        lateness.count++;
        lateness.sum += t - item.release;
        lateness.max = Math.max(lateness.max, t - item.release);
      }
      const more = this.dst.write(item.chunk);
      if (!more) {
        this.waitingDrain = true;
        this.dst.once('drain', () => { this.waitingDrain = false; this.pump(); });
        break;
      }
      t = now();
    }
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    if (this.bytes <= HIGH_WATER / 2 && !this.waitingDrain && !this.ended) this.src.resume();
    if (this.ended && this.head >= this.queue.length && !this.waitingDrain) this.dst.end();
  }
}

class Connection {
  constructor(client, from, targetPort) {
    this.from = from;
    this.client = client;
    this.closed = false;
    this.upstream = net.connect({ host: '127.0.0.1', port: targetPort, allowHalfOpen: true });
    client.setNoDelay(true);
    this.upstream.setNoDelay(true);
    connections.add(this);
    this.up = new Direction(this, client, this.upstream);
    this.down = new Direction(this, this.upstream, client);
    // A reset or error on one side resets the other; a clean close of both ends is a close.
    for (const [a, b] of [[client, this.upstream], [this.upstream, client]]) {
      a.on('error', () => this.reset());
      a.on('close', (hadError) => {
        if (hadError) this.reset();
        else if (b.destroyed || b.readableEnded) this.finish();
      });
    }
  }

  reset() {
    if (this.closed) return;
    this.finish();
    for (const s of [this.client, this.upstream]) {
      if (!s.destroyed) s.resetAndDestroy();
    }
  }

  finish() {
    this.closed = true;
    connections.delete(this);
  }
}

// Listens on host:port and forwards to the same port on 127.0.0.1 (or targetPort).
function listen({ host, port, targetPort }) {
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    const address = client.remoteAddress?.replace(/^::ffff:/, '');
    const from = config.peers[address] ?? address;
    if (rule(from).cut || rule('*').cut) {
      client.on('error', () => {});
      client.resetAndDestroy();
      return;
    }
    new Connection(client, from, targetPort ?? port);
  });
  return new Promise((resolve, reject) => {
    server.once('error', (error) => reject(new Error(`listen ${host}:${port}: ${error.message}`)));
    server.listen({ host, port }, resolve);
  });
}

Promise.all(config.listen.map(listen)).then(
  () => process.stdout.write(JSON.stringify({ listening: true }) + '\n'),
  (error) => {
    process.stdout.write(JSON.stringify({ fatal: error.message }) + '\n');
    process.exit(1);
  });

const matches = (conn, from) => from === '*' || conn.from === from;
// "*": every host the configuration names (the gateways), every host seen, and the rest.
const targets = (from) => (from === '*' ? [...new Set(['*', ...Object.values(config.peers), ...rules.keys()])] : [from]);

function apply(cmd) {
  let affected = 0;
  switch (cmd.op) {
    case 'delay':
      for (const f of targets(cmd.from)) rule(f).delay = cmd.ms;
      break;
    case 'stall': {
      const until = now() + cmd.ms;
      for (const f of targets(cmd.from)) rule(f).stalledUntil = until;
      for (const conn of connections) {
        if (!matches(conn, cmd.from)) continue;
        affected++;
        conn.up.pump();
        conn.down.pump();
      }
      break;
    }
    case 'reset':
    case 'cut':
      if (cmd.op === 'cut') for (const f of targets(cmd.from)) rule(f).cut = true;
      for (const conn of [...connections]) {
        if (!matches(conn, cmd.from)) continue;
        affected++;
        conn.reset();
      }
      break;
    case 'stats':
      affected = { chunks: lateness.count, meanLateMs: lateness.count ? lateness.sum / lateness.count : 0, maxLateMs: lateness.max };
      lateness = { count: 0, sum: 0, max: 0 };
      break;
    case 'heal':
      for (const f of targets(cmd.from ?? '*')) Object.assign(rule(f), { delay: 0, stalledUntil: 0, cut: false });
      for (const conn of connections) { conn.up.pump(); conn.down.pump(); }
      break;
    default:
      throw new Error(`unknown op ${cmd.op}`);
  }
  return affected;
}

createInterface({ input: process.stdin }).on('line', async (line) => {
  if (!line.trim()) return;
  const cmd = JSON.parse(line);
  try {
    // "listen": one more port, on the host's address, to the same port on 127.0.0.1.
    const affected = cmd.op === 'listen' ? await listen({ host: config.listen[0].host, port: cmd.port }) ?? 0 : apply(cmd);
    process.stdout.write(JSON.stringify({ ack: cmd.id, affected, connections: connections.size }) + '\n');
  } catch (error) {
    process.stdout.write(JSON.stringify({ ack: cmd.id, error: error.message }) + '\n');
  }
});
process.stdin.on('end', () => process.exit(0));
