#!/usr/bin/env bash
# The multi-container deployment (compose.yml) on this machine, as root, with podman standing in
# for Docker: Debian's podman, its Docker-compatible API socket, and Debian's docker-compose
# driving it, exactly as a user's `docker compose` would drive Docker. Idempotent.
#
#   scripts/containers.sh up [N]   install what is missing, make the base images if they are
#                                  missing, build the relay's image from the Dockerfile (layer
#                                  cache allowed) and start the project with N gateways (3)
#   scripts/containers.sh down     stop it (volumes kept: `down -v` removes them too)
#   scripts/containers.sh compose ARGS...   any docker-compose command against podman
#   scripts/containers.sh env      print the DOCKER_HOST line to use docker-compose directly
#
# Why each step (docs/operations.md "Containers on podman"): crun refuses this kernel's hybrid
# cgroups, so runc runs the containers; this machine may not set the default open-files limit,
# so podman sets none; container names resolve through CNI's dnsname plugin; no registry is
# reachable, so debian:bookworm and debian:bookworm-slim are made from Debian's own packages
# (debootstrap) under the names the Dockerfile uses, and the Dockerfile is built unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."

project=${RELAY_COMPOSE_PROJECT:-mcp-tab-relay}
# Docker's image format, not OCI's: OCI has no HEALTHCHECK, and buildah drops it there.
export BUILDAH_FORMAT=docker
socket=/run/podman/podman.sock
export DOCKER_HOST="unix://$socket"
mirror=${RELAY_DEBIAN_MIRROR:-http://deb.debian.org/debian}

say() { echo "containers: $*" >&2; }

need_root() {
  if [[ $(id -u) -ne 0 ]]; then
    say "run me as root (podman rootful, iptables, network namespaces)"
    exit 2
  fi
}

install() {
  local packages=(podman runc debootstrap containernetworking-plugins
    golang-github-containernetworking-plugin-dnsname docker-compose iptables)
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  # runc, not crun; no default ulimits (this machine may not raise the open-files limit).
  mkdir -p /etc/containers/containers.conf.d
  cat >/etc/containers/containers.conf.d/50-mcp-tab-relay.conf <<'CONF'
[containers]
default_ulimits = []
[engine]
runtime = "runc"
CONF
}

# The Docker-compatible API, for docker-compose.
serve() {
  if [[ -S $socket ]] && curl -sf --unix-socket "$socket" http://d/_ping >/dev/null 2>&1; then
    return
  fi
  mkdir -p "$(dirname "$socket")"
  rm -f "$socket"
  say "starting podman's API on $socket"
  # Started from /: the service outlives this script, and if its working directory were this
  # checkout, deleting the checkout would break every later container start ("write child:
  # broken pipe" from runc), for any checkout.
  env -C / nohup podman system service --time=0 "unix://$socket" </dev/null >/var/log/podman-service.log 2>&1 &
  for _ in $(seq 100); do
    curl -sf --unix-socket "$socket" http://d/_ping >/dev/null 2>&1 && return
    sleep 0.1
  done
  say "podman's API did not come up; see /var/log/podman-service.log"
  exit 1
}

# debian:bookworm and debian:bookworm-slim, from Debian's packages: one minimal root file
# system (debootstrap's minbase), without documentation for the slim one, as Debian's images are.
base_images() {
  # Made once; RELAY_REMAKE_BASE=1 makes them again (after a change of how they are made).
  if [[ -z ${RELAY_REMAKE_BASE:-} ]] && podman image exists debian:bookworm &&
    podman image exists debian:bookworm-slim; then
    return
  fi
  local root
  root=$(mktemp -d /var/tmp/relay-rootfs.XXXXXX)
  trap 'rm -rf "$root"' RETURN
  say "making debian:bookworm from Debian's packages (debootstrap, a few minutes once)"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >/var/log/relay-debootstrap.log 2>&1 || {
    tail -n 20 /var/log/relay-debootstrap.log
    exit 1
  }
  cat >"$root/etc/apt/sources.list" <<SOURCES
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${mirror%/debian}/debian-security bookworm-security main
SOURCES
  # As Debian's own images are configured: apt keeps no downloaded package in a layer.
  cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'APT'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
APT
  echo 'Acquire::GzipIndexes "true";' >"$root/etc/apt/apt.conf.d/docker-gzip-indexes"
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
  tar -C "$root" -c . | podman import -q --change 'CMD ["bash"]' - debian:bookworm >/dev/null
  # -slim: as Debian's, documentation and translations are never installed.
  cat >"$root/etc/dpkg/dpkg.cfg.d/docker" <<'DPKG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
DPKG
  find "$root"/usr/share/doc -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
  rm -rf "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/*
  tar -C "$root" -c . | podman import -q --change 'CMD ["bash"]' - debian:bookworm-slim >/dev/null
}

compose() { docker-compose -p "$project" "$@"; }

case "${1:-up}" in
  up)
    need_root
    install
    serve
    base_images
    gateways=${2:-3}
    say "building the image and starting $gateways gateways"
    compose up -d --build --scale "gateway=$gateways"
    ;;
  down)
    need_root
    serve
    compose down "${@:2}"
    ;;
  compose)
    need_root
    install
    serve
    base_images
    compose "${@:2}"
    ;;
  env)
    echo "export DOCKER_HOST=$DOCKER_HOST"
    ;;
  *)
    sed -n '2,16p' "$0" >&2
    exit 2
    ;;
esac
