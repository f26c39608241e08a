#!/bin/sh
# The image's HEALTHCHECK: asks the service this container runs (its PID 1) for its own health,
# on the port its configuration names. Exit 0 healthy, 1 not.
set -u
get() {
  php -r '$c = stream_context_create(["http" => ["timeout" => 2, "ignore_errors" => false]]);
          exit(@file_get_contents($argv[1], false, $c) === false ? 1 : 0);' "$1"
}
port_of() { echo "${1##*:}"; }  # host:port -> port
case "$(tr '\0' ' ' </proc/1/cmdline)" in
  *relay-gateway*) get "http://127.0.0.1:$(port_of "${RELAY_LISTEN:-0.0.0.0:8080}")/healthz" ;;
  *relay-router*) get "http://127.0.0.1:$(port_of "${RELAY_METRICS_LISTEN:?the router needs --metrics_listen for its health}")/healthz" ;;
  *relay-authsvc*) get "http://127.0.0.1:$(port_of "${RELAY_METRICS_LISTEN:?authsvc needs --metrics_listen for its health}")/healthz" ;;
  *nginx*) get "http://127.0.0.1:8080/healthz" ;;
  *php*) get "http://127.0.0.1:8000/editor/" ;;
  *) exit 0 ;;  # a one-off (init, relayctl): nothing to watch
esac
