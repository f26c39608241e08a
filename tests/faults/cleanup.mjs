// What must be undone however the suite ends (a failed assertion, an exception, Ctrl-C):
// the processes it started (ended by their pids) and the namespaces it made. Handlers are
// synchronous so that they also run from the process 'exit' event; each runs once.
const handlers = [];
let ran = false;

export function onExit(fn) {
  handlers.push(fn);
}

export function runCleanup() {
  if (ran) return;
  ran = true;
  // Last registered first: processes go before the namespaces they run in.
  for (const fn of handlers.reverse()) {
    try { fn(); } catch (error) { process.stderr.write(`faults: cleanup: ${error.message}\n`); }
  }
}

process.on('exit', runCleanup);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    runCleanup();
    process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1));
  });
}
