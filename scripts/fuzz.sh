#!/usr/bin/env bash
# The soak: every fuzz target for SECONDS (default 600) each, one after the other, on a
# scratch copy of its seed corpus; prints executions per second and what it found.
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
bash scripts/setup.sh --tests >/dev/null
for target in jsonrpc dispatcher tab_message session_id catalogue http_request \
    link_to_router link_to_gateway host_answer; do
  echo "== fuzz_$target, $seconds s"
  bash tests/fuzz/run.sh "$PWD/build/fuzz/fuzz_$target" "$PWD/tests/fuzz/corpus/$target" "$seconds"
done
