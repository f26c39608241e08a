#!/usr/bin/env bash
# The relay beside its peers (../shared/bench) in one run; bench/run.sh --help lists the options
# (the comment at the top of bench/bench.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests >/dev/null
command -v wrk >/dev/null || { apt-get install -y -qq wrk >/dev/null; }
exec tests/node_modules/.bin/node bench/bench.mjs "$@"
