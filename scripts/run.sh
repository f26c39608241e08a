#!/usr/bin/env bash
# Runs the whole relay on loopback for a person to try: the reference host API with a
# demo account and its editor page, authsvc, the router and one gateway. Ctrl-C stops it all.
#   scripts/run.sh     (ports: RELAY_DEMO_HOSTAPI_PORT=8000, RELAY_DEMO_GATEWAY_PORT=8080;
#                       its secrets and logs: RELAY_DEMO_STATE=.run)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bash scripts/setup.sh

api_port=${RELAY_DEMO_HOSTAPI_PORT:-8000}
gw_port=${RELAY_DEMO_GATEWAY_PORT:-8080}
router_port=${RELAY_DEMO_ROUTER_PORT:-7001}
link_port=${RELAY_DEMO_ROUTER_LINK_PORT:-7003}
auth_port=${RELAY_DEMO_AUTHSVC_PORT:-7002}
auth_ops_port=${RELAY_DEMO_AUTHSVC_METRICS_PORT:-9102}
state=${RELAY_DEMO_STATE:-$root/.run}  # secrets and demo data, mode 0700 (.run is git-ignored)
mkdir -p "$state" && chmod 700 "$state"
state=$(cd "$state" && pwd)
shown=${state#"$root"/}                # as the printed lines name it: from the checkout if inside it
export HOSTAPI_DATA="$state/hostapi-data" HOSTAPI_RELAY_KEY_FILE="$state/relay.key"
[[ -s "$state/relay.key" ]] || (umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$state/relay.key")
[[ -s "$state/session.secret" ]] || (umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$state/session.secret")
# Mutual TLS between the services: a CA and one certificate per role (scripts/make-certs.sh).
bash scripts/make-certs.sh "$state/tls"
for role in authsvc router gateway; do
  declare -a "tls_$role=(--grpc_tls_ca=\"\$state/tls/ca.pem\" --grpc_tls_cert=\"\$state/tls/$role.pem\" --grpc_tls_key=\"\$state/tls/$role.key\")"
done
if [[ ! -s "$state/demo.password" ]]; then
  (umask 077; head -c 9 /dev/urandom | base64 | tr '+/' 'xy' > "$state/demo.password")
fi
password=$(cat "$state/demo.password")
hostapi/bin/hostapi user:add demo - <<<"$password" 2>/dev/null || hostapi/bin/hostapi user:passwd demo - <<<"$password" 2>/dev/null

pids=()
stop() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "relay stopped"
}
trap 'stop; exit 0' INT TERM
trap stop EXIT
start() {  # start NAME CMD...: its own process group, logs under $state/NAME.log
  local name=$1; shift
  setsid "$@" >"$state/$name.log" 2>&1 &
  pids+=($!)
}
wait_listening() {  # wait_listening LOG: the first log line says "listening on"
  for _ in $(seq 200); do grep -q 'listening on\|started' "$1" 2>/dev/null && return 0; sleep 0.05; done
  echo "failed to start; see $1:"; tail -5 "$1"; exit 1
}

# The relay the editor page may use, from the host API's own configuration.
# A revoked token is forgotten by authsvc at once (its POST /forget, hostapi/src/relay_hook.php).
# Agents sign in at the host API (its issuer) for the relay at its MCP URL (the resource).
HOSTAPI_RELAY_URLS="ws://127.0.0.1:$gw_port/mcp ws://localhost:$gw_port/mcp" \
HOSTAPI_ISSUER="http://127.0.0.1:$api_port" HOSTAPI_RESOURCES="http://127.0.0.1:$gw_port/mcp" \
HOSTAPI_RELAY_FORGET_URLS="http://127.0.0.1:$auth_ops_port/forget" \
  start hostapi php -S "127.0.0.1:$api_port" -t hostapi/public hostapi/serve.php
wait_listening "$state/hostapi.log"
start relay-authsvc build/bin/relay-authsvc --listen="127.0.0.1:$auth_port" \
  --api_base="http://127.0.0.1:$api_port/api/index.php" --relay_key_file="$state/relay.key" "${tls_authsvc[@]}" \
  --metrics_listen="127.0.0.1:$auth_ops_port" --sched_batch
start relay-router build/bin/relay-router --listen="127.0.0.1:$router_port" \
  --link_listen="127.0.0.1:$link_port" "${tls_router[@]}" --sched_batch
start relay-gateway build/bin/relay-gateway --listen="127.0.0.1:$gw_port" "${tls_gateway[@]}" \
  --router_addrs="127.0.0.1:$router_port" --authsvc_addr="127.0.0.1:$auth_port" \
  --session_secret_file="$state/session.secret" --catalogue=hostapi/public/editor/tools.json \
  --allowed_origins="http://127.0.0.1:$api_port,http://localhost:$api_port" \
  --public_url="http://127.0.0.1:$gw_port/mcp" --authorization_server="http://127.0.0.1:$api_port" \
  --sched_batch
for s in relay-authsvc relay-router relay-gateway; do wait_listening "$state/$s.log"; done

token=$(hostapi/bin/hostapi token:mint demo "demo $(date +%F)" 2>/dev/null)
cat <<MSG

  The relay is running (logs in $shown/*.log).

  MCP URL:      http://127.0.0.1:$gw_port/mcp
  Agent token:  $token   (account "demo"; shown once, revocable in the editor)

  Add it to Claude Code, which signs in (\`claude mcp login editor\`, or /mcp in a session):
    claude mcp add --transport http editor http://127.0.0.1:$gw_port/mcp
  or with the token:
    claude mcp add --transport http editor http://127.0.0.1:$gw_port/mcp --header "Authorization: Bearer $token"

  Get a tab on: open http://127.0.0.1:$api_port/editor/
  log in as demo / $password and switch "Let an AI agent work in this tab" on.

  Look at it as an operator (mutual TLS, the operator's certificate):
    RELAY_GRPC_TLS_CA=$shown/tls/ca.pem RELAY_GRPC_TLS_CERT=$shown/tls/operator.pem \\
    RELAY_GRPC_TLS_KEY=$shown/tls/operator.key build/bin/relayctl --router=127.0.0.1:$router_port tabs

  Ctrl-C stops everything.
MSG
wait -n "${pids[@]}" || true
echo "a service exited; see $shown/*.log"
