#!/usr/bin/env bash
# Runs one fuzz target for a bounded time on a scratch copy of its seed corpus (new inputs
# never land in the repository); a crash, a leak or undefined behaviour fails the run and
# prints the report.
#   tests/fuzz/run.sh BINARY SEED_DIR SECONDS
set -euo pipefail
binary=$1 seeds=$2 seconds=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus"
cp -r "$seeds"/. "$work/corpus"/
cd "$work"  # crash files (crash-*) go here, not into the tree
status=0
"$binary" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
  corpus >log 2>&1 || status=$?
grep -E "^(Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added)" log || true
if ((status != 0)); then
  tail -n 80 log
  echo "fuzz: $(basename "$binary") failed; the input is in the report above (base64 with -print_final_stats)"
fi
exit "$status"
