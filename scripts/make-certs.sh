#!/usr/bin/env bash
# scripts/make-certs.sh DIR [DNS_NAME...]: the certificates for mutual TLS between the services
# (ARCHITECTURE.md, "Between the services"): a CA, and one certificate per role (router, authsvc,
# gateway, operator) whose common name is the role, valid for localhost, 127.0.0.1 and the DNS
# names given (e.g. compose's service names). Keys are mode 600. Keeps what DIR already holds;
# to rotate, make the new files elsewhere and swap them in (docs/security.md).
set -euo pipefail
dir=$1
shift
mkdir -p "$dir"
chmod 700 "$dir"
umask 077
san="DNS:localhost,IP:127.0.0.1"
for name in "$@"; do san+=",DNS:$name"; done
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
if [[ ! -s "$dir/ca.pem" ]]; then
  openssl req -x509 "${ec[@]}" -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 825 \
    -subj "/CN=mcp-tab-relay services CA" 2>/dev/null
fi
for role in router authsvc gateway operator; do
  [[ -s "$dir/$role.pem" ]] && continue
  openssl req "${ec[@]}" -keyout "$dir/$role.key" -out "$dir/$role.csr" -subj "/CN=$role" 2>/dev/null
  openssl x509 -req -in "$dir/$role.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 825 -out "$dir/$role.pem" \
    -extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san") 2>/dev/null
  rm -f "$dir/$role.csr"
done
chmod 600 "$dir"/*.key
chmod 644 "$dir"/*.pem
