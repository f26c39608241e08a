// The seeded parts of a fault run: a small PRNG, where each account's agent and tab sit,
// which hosts no fault may touch, and the fault schedule itself. Everything here is a pure
// function of the seed (and the run's length), so a failing run is replayed by its seed:
// the same placement and the same faults at the same offsets (the timing of the services
// themselves of course differs from run to run).

// mulberry32: 32 bits of state, good enough to pick faults, and the same in every Node.
export function mulberry32(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  next.uniform = (lo, hi) => lo + (hi - lo) * next();
  next.int = (n) => Math.floor(next() * n);
  next.pick = (list) => list[Math.floor(next() * list.length)];
  // Log-uniform: as many short values as long ones, on a log scale.
  next.logUniform = (lo, hi) => Math.exp(Math.log(lo) + (Math.log(hi) - Math.log(lo)) * next());
  next.fork = () => mulberry32(Math.floor(next() * 4294967296));
  return next;
}

export const GATEWAYS = ['gw1', 'gw2', 'gw3'];
export const ROUTERS = ['router0', 'router1'];

// The gateway and the router host that no fault touches for the whole run: accounts whose
// agent, tab and shard all sit there are the control group (invariant 5).
export function pickUntouched(rng) {
  return { gateway: rng.pick(GATEWAYS), router: rng.pick(ROUTERS) };
}

// Each account's agent and tab hosts: the tab on any gateway, the agent beside it 60% of the
// time and on another gateway otherwise (so that many calls cross two gateways).
export function placeAccounts(rng, names) {
  const placement = {};
  for (const name of names) {
    const tabGw = rng.pick(GATEWAYS);
    const agentGw = rng() < 0.6 ? tabGw : rng.pick(GATEWAYS.filter((g) => g !== tabGw));
    placement[name] = { agentGw, tabGw };
  }
  return placement;
}

// What each kind of fault does, and how long it lasts (ms). A path is one gateway's
// connections to one router host (through that host's delaying proxy); a host is a
// gateway or router namespace.
export const FAULT_KINDS = {
  latency: { on: 'path', weight: 2, duration: [4000, 12000] },  // extra one-way delay, both ways
  stall: { on: 'path', weight: 2, duration: [1000, 12000] },    // no byte moves; > 4 s: a hung peer, > 10 s: past call_timeout
  reset: { on: 'path', weight: 1.5, duration: [0, 0] },         // every connection reset at once
  cut: { on: 'path', weight: 1, duration: [1500, 5000] },       // reset, and new connections refused
  iptables: { on: 'host', weight: 1, duration: [2000, 6000] },  // INPUT DROP (but loopback)
  linkdown: { on: 'host', weight: 1, duration: [2000, 6000] },  // the host's veth down
  hang: { on: 'host', weight: 1.5, duration: [1500, 6000] },    // SIGSTOP … SIGCONT
  kill: { on: 'host', weight: 1.5, duration: [200, 2000] },     // kill -9, restarted after this
  // A gateway partitioned (iptables) while the person reopens the editor of 1–3 of the
  // accounts whose tab sits there through another gateway: when the partition heals, the old
  // gateway re-announces the old tabs, which must not displace the newer ones.
  takeover: { on: 'gateway', weight: 1, duration: [3000, 6000] },
};

// The schedule: faults from `startMs` to `endMs` (offsets from the start of the load), one
// every 2.5–7 s, each on a target that is not already under a fault of the same family
// (a host, or a path), never on the untouched hosts. Returns [{ id, at, kind, ms, ... }].
// placement (account -> { tabGw }) lets takeovers pick accounts; each account moves once.
export function makeSchedule({ seed, startMs, endMs, untouched, placement = {} }) {
  const rng = mulberry32(seed ^ 0x5eed5eed);
  const faultyGateways = GATEWAYS.filter((g) => g !== untouched.gateway);
  const faultyRouters = ROUTERS.filter((r) => r !== untouched.router);
  // A path fault touches its gateway (and the link at the router's end, which the router
  // shares with the other gateways): paths from the faulty gateways to either router.
  const paths = faultyGateways.flatMap((gw) => ROUTERS.map((router) => ({ gw, router })));
  const hosts = [...faultyGateways, ...faultyRouters];
  const tabAt = Object.fromEntries(Object.entries(placement).map(([a, p]) => [a, p.tabGw]));
  const moved = new Set();
  const kinds = Object.entries(FAULT_KINDS);
  const totalWeight = kinds.reduce((sum, [, k]) => sum + k.weight, 0);
  const busyUntil = new Map();  // target key -> offset at which it is free again
  const faults = [];
  for (let at = startMs + rng.uniform(0, 2000); at < endMs; at += rng.uniform(2500, 7000)) {
    let r = rng() * totalWeight;
    const [kind, spec] = kinds.find(([, k]) => (r -= k.weight) < 0) ?? kinds[kinds.length - 1];
    const targets = spec.on === 'path' ? paths : spec.on === 'gateway' ? faultyGateways : hosts;
    const key = (t) => (spec.on === 'path' ? `${t.gw}>${t.router}` : t);
    const free = targets.filter((t) => (busyUntil.get(key(t)) ?? 0) <= at);
    if (free.length === 0) continue;
    const target = rng.pick(free);
    // Nothing may outlast the schedule: the heal comes at endMs.
    const ms = Math.min(Math.round(rng.uniform(...spec.duration)), Math.max(0, Math.round(endMs - at)));
    const fault = { id: faults.length + 1, at: Math.round(at), kind, ms };
    if (spec.on === 'path') Object.assign(fault, { gw: target.gw, router: target.router });
    else fault.host = target;
    if (kind === 'latency') fault.delayMs = Math.round(rng.logUniform(20, 400));
    if (kind === 'takeover') {
      const here = Object.keys(tabAt).filter((a) => tabAt[a] === target && !moved.has(a)).sort();
      fault.to = rng.pick(GATEWAYS.filter((g) => g !== target));
      fault.accounts = [];
      for (let n = 1 + rng.int(3); n > 0 && here.length; n--) {
        const account = here.splice(rng.int(here.length), 1)[0];
        fault.accounts.push(account);
        moved.add(account);
        tabAt[account] = fault.to;
      }
    }
    busyUntil.set(key(target), at + ms + 1000);
    faults.push(fault);
  }
  return faults;
}

// The hosts a fault touches (for attributing failures to faults).
export function faultHosts(fault) {
  return fault.host ? [fault.host] : [fault.gw, fault.router];
}
