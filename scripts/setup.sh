#!/usr/bin/env bash
# Installs what building, running and testing the relay need (Debian 12, as root),
# then builds it. Idempotent: a second run installs nothing and rebuilds only
# what changed.
#   scripts/setup.sh          build deps + runtime deps, then build
#   scripts/setup.sh --tests  also the test deps (npm packages, pinned by tests/package-lock.json)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ccache pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev libboost1.81-dev nlohmann-json3-dev
  libabsl-dev libgtest-dev libgmock-dev libssl-dev
  php-cli curl
)
if [[ "${1:-}" == "--tests" ]]; then
  packages+=(nginx docker-compose nodejs npm chromium wrk clang libclang-rt-14-dev util-linux prometheus
    iptables iproute2)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# nodejs/npm may come from elsewhere than Debian (a newer Node): any npm will do.
if command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ "${1:-}" == "--tests" ]]; then
  # npm ci only when the lock file changed since the last install.
  if [[ ! -f tests/node_modules/.package-lock.json || tests/package-lock.json -nt tests/node_modules/.package-lock.json ]]; then
    (cd tests && npm ci --no-audit --no-fund --loglevel=error)
  fi
  # Claude Code (a native binary of some 400 MB) for its own end-to-end test, apart.
  if [[ ! -f tests/claude/node_modules/.package-lock.json || tests/claude/package-lock.json -nt tests/claude/node_modules/.package-lock.json ]]; then
    (cd tests/claude && npm ci --no-audit --no-fund --loglevel=error)
  fi
fi

echo "setup: building into build/ (the first build takes several minutes)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if ! cmake --build build -j2 >build/build.log 2>&1; then
  tail -n 60 build/build.log
  echo "setup: the build failed; the whole log is build/build.log"
  exit 1
fi
