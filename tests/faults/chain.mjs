// Plain TCP forwarders in the relay's place, for the latency test's yardstick: the same hosts,
// the same proxies and the same shape as a call from an agent on gw1 to a tab on gw2:
//
//   client ─lo─ in (gw1) ══proxy══► router (router host) ◄══proxy══ out (gw2) ─lo─ echo (gw2)
//
// `in` and `out` dial the router host through its proxy, as gateways dial their links, and
// the router pipes the two together. What 10 ms each way add to this chain is what the
// network emulation and the machine add by themselves (ideally 40 ms; on a virtual machine
// whose idle cores wake slowly, a little more): the relay must add no more than that.
//
// Roles (each a process of its own, run inside its host's namespace; each prints one JSON
// line once ready, with the port it listens on):
//   echo                   the tab: sends back what it gets
//   router                 pairs the connection that says "A" with the one that says "B"
//   out HOST:PORT ECHOPORT gw2's side: dials the router ("B") and the echo, pipes them
//   in HOST:PORT           gw1's side: for the client's connection, dials the router ("A")
//   client PORT            reads {"n", "tag"} lines, makes n round trips of 200 bytes one
//                          after the other, answers {"tag", "durations"} (ms)
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';

const [role, a, b] = process.argv.slice(2);
const say = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const hostPort = (s) => { const i = s.lastIndexOf(':'); return { host: s.slice(0, i), port: Number(s.slice(i + 1)) }; };
const tcp = (socket) => { socket.setNoDelay(true); socket.on('error', () => process.exit(1)); return socket; };
const pipe = (x, y) => { x.on('data', (d) => y.write(d)); y.on('data', (d) => x.write(d)); };
const listen = (server) => server.listen(0, '127.0.0.1', () => say({ ready: true, port: server.address().port }));

switch (role) {
  case 'echo':
    listen(net.createServer((s) => { tcp(s).on('data', (d) => s.write(d)); }));
    break;
  case 'router': {
    const sides = {};
    listen(net.createServer((s) => {
      tcp(s).once('data', (d) => {
        sides[d.toString('latin1', 0, 1)] = s;
        if (d.length > 1) s.unshift(d.subarray(1));
        if (sides.A && sides.B) pipe(sides.A, sides.B);
      });
    }));
    break;
  }
  case 'out': {
    const router = tcp(net.connect(hostPort(a)));
    const echo = tcp(net.connect({ host: '127.0.0.1', port: Number(b) }));
    router.write('B');
    pipe(router, echo);
    let up = 0;
    for (const s of [router, echo]) s.once('connect', () => { if (++up === 2) say({ ready: true }); });
    break;
  }
  case 'in':
    listen(net.createServer((client) => {
      const router = tcp(net.connect(hostPort(a)));
      router.write('A');
      pipe(tcp(client), router);
    }));
    break;
  case 'client': {
    const socket = tcp(net.connect({ host: '127.0.0.1', port: Number(a) }));
    const message = Buffer.alloc(200, 'x');
    let waiting = null;
    let got = 0;
    socket.on('data', (d) => {
      got += d.length;
      if (got >= message.length && waiting) { got -= message.length; const w = waiting; waiting = null; w(); }
    });
    socket.once('connect', () => say({ ready: true }));
    createInterface({ input: process.stdin }).on('line', async (line) => {
      const { n, tag } = JSON.parse(line);
      const durations = [];
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        await new Promise((resolve) => { waiting = resolve; socket.write(message); });
        durations.push(performance.now() - t);
      }
      say({ tag, durations });
    });
    break;
  }
  default:
    throw new Error(`unknown role ${role}`);
}
