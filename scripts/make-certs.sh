#!/usr/bin/env bash
# scripts/make-certs.sh DIR [NAME...]: the certificates for mutual TLS between the services
# (ARCHITECTURE.md, "Between the services"): a CA, and one certificate per role whose common name
# is the role. The servers' (router, authsvc) are valid for localhost, 127.0.0.1 and the names
# given (e.g. compose's service names; an IPv4 address, such as the fault suite's hosts have,
# becomes an IP name), for serving only; the clients' (gateway, operator) name no host and are
# for clients only, so that no client key can pose as a server. Keys are
# mode 600. Keeps what DIR holds, except a certificate that expires within 30 days, which is made
# anew (a CA that does, and everything with it); see docs/security.md for rotation.
set -euo pipefail
dir=$1
shift
mkdir -p "$dir"
chmod 700 "$dir"
umask 077
san="DNS:localhost,IP:127.0.0.1"
for name in "$@"; do
  if [[ $name =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]]; then san+=",IP:$name"; else san+=",DNS:$name"; fi
done
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
fresh() { [[ -s "$1" ]] && openssl x509 -in "$1" -noout -checkend $((30 * 86400)) >/dev/null; }
if ! fresh "$dir/ca.pem"; then
  rm -f "$dir"/*.pem "$dir"/*.key
  openssl req -x509 "${ec[@]}" -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 825 \
    -subj "/CN=mcp-tab-relay services CA" 2>/dev/null
fi
for role in router authsvc gateway operator; do
  fresh "$dir/$role.pem" && continue
  case $role in
    router | authsvc) ext=$(printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$san") ;;
    *) ext=$(printf 'extendedKeyUsage=clientAuth\n') ;;
  esac
  openssl req "${ec[@]}" -keyout "$dir/$role.key" -out "$dir/$role.csr" -subj "/CN=$role" 2>/dev/null
  openssl x509 -req -in "$dir/$role.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 825 -out "$dir/$role.pem" \
    -extfile <(printf '%s\n' "$ext") 2>/dev/null
  rm -f "$dir/$role.csr"
done
chmod 600 "$dir"/*.key
chmod 644 "$dir"/*.pem
