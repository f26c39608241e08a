#!/usr/bin/env bash
# Measures the relay's throughput and latency on this machine; see bench/bench.mjs.
#   bench/run.sh [seconds=10] [connections=64]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests >/dev/null
command -v wrk >/dev/null || { apt-get install -y -qq wrk >/dev/null; }
exec tests/node_modules/.bin/node bench/bench.mjs "$@"
