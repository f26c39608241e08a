#!/usr/bin/env bash
# Builds the relay and runs every test (unit, host API, end-to-end, compose) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests
cd build
# No retries: a test that fails once is a bug to find, not to hide.
ctest --output-on-failure --timeout 600
