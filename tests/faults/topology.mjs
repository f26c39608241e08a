// The fault suite's network: every service a host of its own. A "switch" namespace holds a
// Linux bridge; each host namespace is joined to it by a veth pair (eth0 inside the host,
// the host's name on the switch side), with an address in one /24. Nothing is configured
// in the root namespace and no traffic leaves these namespaces. Partitions: iptables INPUT
// DROP inside a host (loopback spared, so that the agents and tabs beside a gateway still
// reach it: they are the person's machine, not the network), or the host's veth down.
import { execFileSync } from 'node:child_process';
import { onExit } from './cleanup.mjs';

function run(args, what) {
  try {
    return execFileSync(args[0], args.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
  } catch (error) {
    throw new Error(`${what ?? args.join(' ')}: ${error.stderr?.toString().trim() || error.message}`);
  }
}

export class Topology {
  // hosts: names (e.g. ['hostapi', 'authsvc', 'router0', …]); prefix: unique per run.
  constructor(prefix, hosts) {
    this.prefix = prefix;
    this.hosts = hosts;
    this.created = [];  // namespaces made so far, deleted by destroy()
    // One /24 among a few, at random, so that two runs side by side (each with its own
    // namespaces anyway) are easy to tell apart in a capture.
    this.subnet = `10.${200 + Math.floor(Math.random() * 50)}.${Math.floor(Math.random() * 250)}`;
    this.addresses = Object.fromEntries(hosts.map((h, i) => [h, `${this.subnet}.${i + 2}`]));
    this.partitioned = new Set();
    this.linksDown = new Set();
  }

  ns(host) { return `${this.prefix}${host}`; }
  ip(host) { return this.addresses[host]; }

  // The host a source address belongs to (the proxies name connections by it).
  hostOf(address) {
    return Object.entries(this.addresses).find(([, a]) => a === address)?.[0];
  }

  // Builds it all; fails with a clear message where the machine cannot (not root, no netns).
  create() {
    if (process.getuid?.() !== 0) {
      throw new Error('the fault suite needs root: it makes network namespaces, veth pairs and a bridge (run it as root)');
    }
    onExit(() => this.destroy());
    const sw = this.ns('sw');
    try {
      this.addNs(sw);
    } catch (error) {
      throw new Error(`this machine cannot make network namespaces (${error.message}); the fault suite needs them`);
    }
    run(['ip', '-n', sw, 'link', 'set', 'lo', 'up']);
    run(['ip', '-n', sw, 'link', 'add', 'br0', 'type', 'bridge']);
    run(['ip', '-n', sw, 'link', 'set', 'br0', 'up']);
    for (const host of this.hosts) {
      const ns = this.ns(host);
      this.addNs(ns);
      // Both ends are created directly in their namespaces: nothing appears in the root one.
      run(['ip', 'link', 'add', 'eth0', 'netns', ns, 'type', 'veth', 'peer', 'name', host, 'netns', sw]);
      run(['ip', '-n', sw, 'link', 'set', host, 'master', 'br0', 'up']);
      run(['ip', '-n', ns, 'addr', 'add', `${this.ip(host)}/24`, 'dev', 'eth0']);
      run(['ip', '-n', ns, 'link', 'set', 'eth0', 'up']);
      run(['ip', '-n', ns, 'link', 'set', 'lo', 'up']);
    }
  }

  addNs(ns) {
    run(['ip', 'netns', 'add', ns]);
    this.created.push(ns);
  }

  // The command line that runs argv inside host's namespace.
  exec(host, argv) {
    return ['ip', 'netns', 'exec', this.ns(host), ...argv];
  }

  // Partition by firewall: every packet arriving from the network is dropped (loopback is not).
  partition(host) {
    run(['ip', 'netns', 'exec', this.ns(host), 'iptables', '-A', 'INPUT', '!', '-i', 'lo', '-j', 'DROP']);
    this.partitioned.add(host);
  }

  unpartition(host) {
    run(['ip', 'netns', 'exec', this.ns(host), 'iptables', '-F', 'INPUT']);
    this.partitioned.delete(host);
  }

  // Partition by link: the host's veth down (its routes go with it; up brings them back).
  linkDown(host) {
    run(['ip', '-n', this.ns(host), 'link', 'set', 'eth0', 'down']);
    this.linksDown.add(host);
  }

  linkUp(host) {
    run(['ip', '-n', this.ns(host), 'link', 'set', 'eth0', 'up']);
    this.linksDown.delete(host);
  }

  healAll() {
    for (const host of [...this.partitioned]) this.unpartition(host);
    for (const host of [...this.linksDown]) this.linkUp(host);
  }

  // Synchronous, so that it also runs from a process 'exit' handler. Deleting a namespace
  // takes its veth ends with it (a veth pair dies with either end) and the bridge.
  destroy() {
    for (const ns of this.created.reverse()) {
      try { execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' }); } catch {}
    }
    this.created = [];
  }
}

// Whether iptables can be used inside a namespace (the suite fails, not skips, without it).
export function checkIptables() {
  try {
    execFileSync('iptables', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('iptables is not installed (apt-get install iptables); the fault suite partitions hosts with it');
  }
}
