#!/usr/bin/env bash
# Builds the relay and runs every test (unit, host API, end-to-end, conformance, fuzz,
# compose) through ctest, then the end-to-end and conformance suites again, and the fault
# suite, on an AddressSanitizer + UndefinedBehaviorSanitizer build of the services.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests
# No retries: a test that fails once is a bug to find, not to hide. The fault suite runs below,
# on the sanitizer build.
ctest --test-dir build --output-on-failure --timeout 600 -E '^faults$'

# The containers test's figures (image build and size, up to the first call, the faults).
if [[ -f build/containers-last.json ]]; then
  echo "test: the containers test's figures (tests/containers/):"
  cat build/containers-last.json
fi

echo "test: building the services with ASan and UBSan into build-asan/"
# -O1 -g1 and unity sources: what the sanitizers check is the same, and the build from nothing
# takes half the time (19.5 -> 9.4 minutes on two cores; docs/decisions.md "Fuzzing and
# sanitizers in the test command"). -g1 keeps the line tables the reports' stacks are read with.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRELAY_SANITIZE=ON \
  '-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG' -DCMAKE_UNITY_BUILD=ON >/dev/null
# Unit tests whose failure is memory misuse that only the sanitizers see run here too, and the
# fault suite: kills, resets and partitions reach paths no other test does.
if ! cmake --build build-asan -j2 --target relay-gateway relay-router relay-authsvc relayctl \
    gateway_tab_writer_test gateway_tab_reader_test gateway_close_lingering_test gateway_request_reader_test gateway_lasting_calls_test common_link_endpoint_test common_link_socket_test relay_in_process_test \
    common_slab_pool_test gateway_gathered_posts_test \
    >build-asan/build.log 2>&1; then
  tail -n 60 build-asan/build.log
  echo "test: the sanitizer build failed; the whole log is build-asan/build.log"
  exit 1
fi
# A sanitizer report in any process's output fails its test file (tests/e2e/lib/stack.mjs).
# A small quarantine: freed memory is held back to catch use after free, and the limits
# suite measures the gateway's memory.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:quarantine_size_mb=16
export UBSAN_OPTIONS=print_stacktrace=1
ctest --test-dir build-asan --output-on-failure --timeout 900 \
  -R '^(e2e_|conformance$|faults$|gateway_tab_writer_test$|gateway_tab_reader_test$|gateway_close_lingering_test$|gateway_request_reader_test$|gateway_lasting_calls_test$|common_link_endpoint_test$|common_link_socket_test$|relay_in_process_test$|common_slab_pool_test$|gateway_gathered_posts_test$)'
# The fault suite's figures (its seed, faults by kind, errors, cancellations, the latency).
if [[ -f build/faults-last.log ]]; then
  echo "test: the fault suite's figures (tests/faults/, scripts/faults.sh, on build-asan/):"
  grep -E "faults: |latency|calls: |faults injected|errors by kind|cancellations at|longest from|from the heal|tabs closed|violations: |relay: median|plain TCP chain|the relay's own" \
    build/faults-last.log || true
fi
