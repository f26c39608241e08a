#!/usr/bin/env bash
# Tests of the reference host API (hostapi/): starts `php -S` on a free port with a
# temporary data folder and exercises every route of HOST-API.md with curl.
# Prints one line per check and ends with "N passed, M failed"; exits non-zero on failure.
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HOSTAPI="$ROOT/hostapi"
CLI="$HOSTAPI/bin/hostapi"
for tool in php curl; do
    command -v "$tool" >/dev/null || { echo "missing $tool"; exit 2; }
done

TMP=$(mktemp -d)
export HOSTAPI_DATA="$TMP/data"
export HOSTAPI_RELAY_KEY_FILE="$TMP/relay.key"
KEY=$(php -r 'echo bin2hex(random_bytes(32));')
printf '%s\n' "$KEY" >"$HOSTAPI_RELAY_KEY_FILE" # the trailing newline must be trimmed
printf 'X-Relay-Key: %s\n' "$KEY" >"$TMP/key.header"
printf 'X-Relay-Key: %s\n' "wrong-$KEY" >"$TMP/badkey.header"

PHP_PID=
cleanup() {
    if [ -n "$PHP_PID" ]; then
        # php -S with workers forks; the workers outlive a killed parent, so end the
        # whole process group (the server was started as its own job).
        kill -TERM -- "-$PHP_PID" 2>/dev/null || kill -TERM "$PHP_PID" 2>/dev/null
        wait "$PHP_PID" 2>/dev/null
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- start the server: port 0 lets the OS pick; php -S prints the real port ----------
set -m # own process group for the server and its workers
PHP_CLI_SERVER_WORKERS=4 php -S 127.0.0.1:0 -t "$HOSTAPI/public" >"$TMP/server.log" 2>&1 &
PHP_PID=$!
set +m

PORT=
for _ in $(seq 1 500); do
    PORT=$(grep -o -m1 'Development Server (http://127\.0\.0\.1:[0-9]*' "$TMP/server.log" 2>/dev/null | grep -o '[0-9]*$')
    [ -n "$PORT" ] && break
    kill -0 "$PHP_PID" 2>/dev/null || break
    sleep 0.02
done
if [ -z "$PORT" ]; then
    echo "php -S did not start:"
    cat "$TMP/server.log"
    exit 1
fi
BASE="http://127.0.0.1:$PORT/api/index.php"
for _ in $(seq 1 500); do
    curl -s -o /dev/null "$BASE?r=ping" && break
    sleep 0.02
done

# ---- helpers --------------------------------------------------------------------------
PASS=0
FAIL=0
check() { # NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then
        PASS=$((PASS + 1))
        echo "ok   - $1"
    else
        FAIL=$((FAIL + 1))
        echo "FAIL - $1: expected '$2', got '$3'"
    fi
}
check_match() { # NAME REGEX ACTUAL
    if [[ "$3" =~ $2 ]]; then
        PASS=$((PASS + 1))
        echo "ok   - $1"
    else
        FAIL=$((FAIL + 1))
        echo "FAIL - $1: '$3' does not match /$2/"
    fi
}

# req METHOD ROUTE [BODY [CURL ARGS...]]: prints the status; body in $TMP/body, headers in $TMP/headers
req() {
    local method=$1 route=$2 body=${3-}
    shift $(($# < 3 ? $# : 3))
    local data=()
    [ -n "$body" ] && data=(--data-binary "$body" -H 'Content-Type: application/json')
    curl -s -o "$TMP/body" -D "$TMP/headers" -w '%{http_code}' -X "$method" "${data[@]}" "$@" "$BASE?r=$route"
}
body() { cat "$TMP/body"; }
json() { # FIELD: a field of the last body
    php -r '$d = json_decode(file_get_contents($argv[1]), true); $v = is_array($d) ? ($d[$argv[2]] ?? "") : ""; echo is_scalar($v) ? $v : json_encode($v);' "$TMP/body" "$1"
}
header() { # NAME: a header of the last answer
    grep -i "^$1:" "$TMP/headers" | head -1 | cut -d: -f2- | tr -d ' \r'
}
verify() { # TOKEN ADDRESS [CURL ARGS]: status of agent/verify with the relay key
    local token=$1 address=$2
    shift 2
    req POST agent/verify "{\"token\":\"$token\",\"address\":\"$address\"}" -H @"$TMP/key.header" "$@"
}
redeem() { # TICKET
    req POST agent/redeem "{\"ticket\":\"$1\"}" -H @"$TMP/key.header"
}
counter() { cat "$HOSTAPI_DATA/counters/$1" 2>/dev/null || echo 0; }
login() { # NAME PASSWORD JAR
    req POST login "{\"username\":\"$1\",\"password\":\"$2\"}" -c "$3"
}
mint() { # JAR NAME [DAYS]: prints status; the token is in the body
    if [ -n "${3-}" ]; then
        req POST agent-tokens "{\"name\":\"$2\",\"days\":$3}" -b "$1"
    else
        req POST agent-tokens "{\"name\":\"$2\"}" -b "$1"
    fi
}

echo "php -S on port $PORT (port 0 chosen by the OS), data in $HOSTAPI_DATA"

# ---- accounts and login ---------------------------------------------------------------
"$CLI" user:add alice 'alice-pw' 2>/dev/null
check "cli user:add alice" 0 $?
printf 'bob-pw\n' | "$CLI" user:add bob - admin 2>/dev/null
check "cli user:add bob (password from stdin, role admin)" 0 $?
"$CLI" user:add alice other 2>/dev/null
check "cli user:add of an existing user fails" 1 $?
check_match "data folder is mode 0700" '^700$' "$(stat -c %a "$HOSTAPI_DATA")"

A="$TMP/alice.jar"
B="$TMP/bob.jar"
check "login with a wrong password: 401" 401 "$(login alice nope "$TMP/x.jar")"
check "login of an unknown user: 401" 401 "$(login nobody nope "$TMP/x.jar")"
check "login alice: 200" 200 "$(login alice alice-pw "$A")"
check "login answers the user" alice "$(json user)"
check "login answers the role" user "$(json role)"
check_match "login sets an HttpOnly session cookie" 'hostapi_session=.*HttpOnly' "$(grep -i '^set-cookie' "$TMP/headers")"
check "login bob: 200, role admin" "200 admin" "$(login bob bob-pw "$B") $(json role)"
check "login with malformed JSON: 400" 400 "$(req POST login '{"username":')"
check "login with GET: 405" 405 "$(req GET login)"

# ---- tokens -----------------------------------------------------------------------------
check "GET agent-tokens without a session: 401" 401 "$(req GET agent-tokens)"
check "GET agent-tokens: 200 []" "200 []" "$(req GET agent-tokens '' -b "$A") $(body | tr -d '\n')"
check "POST agent-tokens: 201" 201 "$(mint "$A" laptop)"
T1=$(json token)
check_match "token is fwa_ + 64 lowercase hex" '^fwa_[0-9a-f]{64}$' "$T1"
check "first token has id 1" 1 "$(json id)"
check "token answer has usedAt null" "" "$(json usedAt)"
check "POST agent-tokens without a session: 401" 401 "$(req POST agent-tokens '{"name":"x"}')"
check "GET agent-tokens lists one token" 200 "$(req GET agent-tokens '' -b "$A")"
check "the list names it" laptop "$(php -r 'echo json_decode(file_get_contents($argv[1]), true)[0]["name"];' "$TMP/body")"
check "the list never holds a token" 0 "$(grep -c 'fwa_' "$TMP/body")"

# ---- agent/verify -----------------------------------------------------------------------
check "verify good token: 200" 200 "$(verify "$T1" 203.0.113.7)"
check "verify answers user and role" '{"user":"alice","role":"user"}' "$(body | tr -d '\n')"
req GET agent-tokens '' -b "$A" >/dev/null
check_match "verify sets usedAt" '"usedAt":"[0-9]{4}-' "$(body)"
check "verify without the relay key: 404" 404 "$(req POST agent/verify "{\"token\":\"$T1\",\"address\":\"1.1.1.1\"}")"
nokey_body=$(body)
check "verify with a wrong relay key: 404" 404 "$(req POST agent/verify "{\"token\":\"$T1\"}" -H @"$TMP/badkey.header")"
req GET no/such/route >/dev/null
check "the 404 without key looks like an unknown route" "$(body)" "$nokey_body"
check "unknown route: 404 JSON error" 404 "$(req GET no/such/route)"
check_match "404 is application/json" 'application/json' "$(header content-type)"
check "verify wrong token: 401" 401 "$(verify "fwa_$(printf '0%.0s' $(seq 64))" 192.0.2.50)"
check_match "401 has an error" '"error":' "$(body)"
check "verify malformed token: 401" 401 "$(verify "not-a-token" 192.0.2.51)"
check "verify malformed JSON: 400" 400 "$(req POST agent/verify '{"token":' -H @"$TMP/key.header")"
check "verify with a JSON array body: 400" 400 "$(req POST agent/verify '[1,2]' -H @"$TMP/key.header")"
check "verify with GET: 405" 405 "$(req GET agent/verify '' -H @"$TMP/key.header")"
check "verify with GET and no key: 404" 404 "$(req GET agent/verify)"

# ---- the brake ----------------------------------------------------------------------------
BAD="fwa_$(printf 'f%.0s' $(seq 64))"
statuses=
for i in 1 2 3 4 5; do statuses+="$(verify "$BAD" 198.51.100.9) "; done
check "five wrong tokens from one address: 401 each" "401 401 401 401 401 " "$statuses"
check "then the good token from that address: 429" 429 "$(verify "$T1" 198.51.100.9)"
retry=$(header retry-after)
check_match "429 has Retry-After in seconds (<= 900)" '^([1-9][0-9]?|[1-8][0-9][0-9]|900)$' "$retry"
check_match "429 has an error" '"error":' "$(body)"
check "a wrong token while locked: 429" 429 "$(verify "$BAD" 198.51.100.9)"
check "another address is not locked: 200" 200 "$(verify "$T1" 198.51.100.10)"
statuses=
for i in 1 2 3 4 5; do statuses+="$(req POST agent/verify "{\"token\":\"$BAD\"}" -H @"$TMP/key.header") "; done
check "five wrong without address (counts as 'unknown'): 401 each" "401 401 401 401 401 " "$statuses"
check "good token with an empty address: 429" 429 "$(verify "$T1" '')"
check "good token with an address: 200" 200 "$(verify "$T1" 198.51.100.11)"

# ---- revocation ---------------------------------------------------------------------------
check "mint a second token: 201, id 2" "201 2" "$(mint "$A" desktop) $(json id)"
T2=$(json token)
check "bob cannot delete alice's token: 404" 404 "$(req DELETE agent-tokens/2 '' -b "$B")"
check "alice's token still works" 200 "$(verify "$T2" 198.51.100.12)"
check "DELETE agent-tokens/1: 204" 204 "$(req DELETE agent-tokens/1 '' -b "$A")"
check "the revoked token: 401" 401 "$(verify "$T1" 198.51.100.12)"
check "the other token still works" 200 "$(verify "$T2" 198.51.100.12)"
check "DELETE it again: 404" 404 "$(req DELETE agent-tokens/1 '' -b "$A")"
check "DELETE without a session: 401" 401 "$(req DELETE agent-tokens/2)"
check "DELETE agent-tokens/abc: 404" 404 "$(req DELETE agent-tokens/abc '' -b "$A")"

# ---- expiry -------------------------------------------------------------------------------
check "mint a third token: 201" 201 "$(mint "$A" expiring 1)"
T3=$(json token)
check "it works" 200 "$(verify "$T3" 198.51.100.13)"
T3FILE="$HOSTAPI_DATA/tokens/$(printf '%s' "$T3" | sha256sum | cut -d' ' -f1).json"
check "the token file is named after its SHA-256" yes "$([ -f "$T3FILE" ] && echo yes)"
php -r '$f = $argv[1]; $d = json_decode(file_get_contents($f), true); $d["expiresAt"] = time() - 1; file_put_contents($f, json_encode($d));' "$T3FILE"
check "an expired token: 401" 401 "$(verify "$T3" 198.51.100.13)"

# ---- tickets --------------------------------------------------------------------------------
check "agent/ticket without a session: 401" 401 "$(req POST agent/ticket '{}')"
check "agent/ticket: 200" 200 "$(req POST agent/ticket '{}' -b "$A")"
TK=$(json ticket)
check_match "ticket is 43+ url-safe characters" '^[A-Za-z0-9_-]{43,}$' "$TK"
check "expiresIn is 60" 60 "$(json expiresIn)"
check "redeem without the relay key: 404" 404 "$(req POST agent/redeem "{\"ticket\":\"$TK\"}")"
check "redeem: 200 alice" "200 alice user" "$(redeem "$TK") $(json user) $(json role)"
check "redeem the same ticket again: 401" 401 "$(redeem "$TK")"
check "redeem an unknown ticket: 401" 401 "$(redeem "$(php -r 'echo str_repeat("A", 43);')")"
check "redeem malformed JSON: 400" 400 "$(req POST agent/redeem 'nope' -H @"$TMP/key.header")"
TB=$("$CLI" ticket:mint bob)
check_match "cli ticket:mint prints only the ticket" '^[A-Za-z0-9_-]{43,}$' "$TB"
check "redeem bob's ticket: 200 bob admin" "200 bob admin" "$(redeem "$TB") $(json user) $(json role)"
TE=$("$CLI" ticket:mint alice)
TEFILE="$HOSTAPI_DATA/tickets/$(printf '%s' "$TE" | sha256sum | cut -d' ' -f1).json"
php -r '$f = $argv[1]; $d = json_decode(file_get_contents($f), true); $d["expiresAt"] = time() - 1; file_put_contents($f, json_encode($d));' "$TEFILE"
check "an expired ticket: 401" 401 "$(redeem "$TE")"

# concurrent redemption of one ticket (4 server workers): exactly one wins
wins_ok=0
for round in 1 2 3 4 5; do
    t=$("$CLI" ticket:mint alice)
    pids=()
    for i in 1 2 3 4 5 6 7 8; do
        curl -s -o /dev/null -w '%{http_code}\n' -H @"$TMP/key.header" -H 'Content-Type: application/json' \
            --data-binary "{\"ticket\":\"$t\"}" "$BASE?r=agent/redeem" >"$TMP/race.$i" &
        pids+=($!)
    done
    wait "${pids[@]}"
    wins=$(cat "$TMP"/race.* | grep -c '^200$')
    losses=$(cat "$TMP"/race.* | grep -c '^401$')
    [ "$wins" = 1 ] && [ "$losses" = 7 ] && wins_ok=$((wins_ok + 1))
    rm -f "$TMP"/race.*
done
check "8 concurrent redeems of one ticket: exactly one 200, seven 401 (5 rounds)" 5 "$wins_ok"

# ---- counters ---------------------------------------------------------------------------------
v0=$(counter agent-verify)
r0=$(counter agent-redeem)
verify "$T2" 198.51.100.14 >/dev/null
verify "$BAD" 198.51.100.14 >/dev/null
req POST agent/verify "{\"token\":\"$T2\"}" >/dev/null                     # no key
req POST agent/verify "{\"token\":\"$T2\"}" -H @"$TMP/badkey.header" >/dev/null # wrong key
redeem "$("$CLI" ticket:mint alice)" >/dev/null
req POST agent/redeem '{"ticket":"x"}' >/dev/null # no key
check "counters/agent-verify counts every request, refused ones too" $((v0 + 4)) "$(counter agent-verify)"
check "counters/agent-redeem counts every request, refused ones too" $((r0 + 2)) "$(counter agent-redeem)"

# ---- password change ----------------------------------------------------------------------------
check "token works before the password change" 200 "$(verify "$T2" 198.51.100.15)"
"$CLI" user:passwd alice 'alice-pw-2' 2>/dev/null
check "cli user:passwd: 0" 0 $?
check "after the password change the token: 401" 401 "$(verify "$T2" 198.51.100.15)"
check "after the password change the old session: 401" 401 "$(req GET agent-tokens '' -b "$A")"
check "login with the old password: 401" 401 "$(login alice alice-pw "$A")"
check "login with the new password: 200" 200 "$(login alice alice-pw-2 "$A")"
check "no tokens left" "200 []" "$(req GET agent-tokens '' -b "$A") $(body | tr -d '\n')"

# ---- limits ----------------------------------------------------------------------------------------
name60=$(printf 'n%.0s' $(seq 60))
check "name of 61 characters: 422" 422 "$(mint "$A" "${name60}x")"
check "name of 60 multibyte characters: 201" 201 "$(mint "$A" "$(printf 'é%.0s' $(seq 60))")"
check "days 0: 422" 422 "$(mint "$A" short 0)"
check "days 366: 422" 422 "$(mint "$A" long 366)"
check "days \"30\" (a string): 422" 422 "$(mint "$A" str '"30"')"
check "empty name: 422" 422 "$(mint "$A" '')"
check "days 365: 201" 201 "$(mint "$A" year 365)"
check "POST agent-tokens malformed JSON: 400" 400 "$(req POST agent-tokens '{' -b "$A")"
ids=
for i in $(seq 3 20); do
    s=$(mint "$A" "t$i")
    [ "$s" = 201 ] || ids+="[$i:$s]"
done
check "tokens 3..20: 201 each" "" "$ids"
check "the 21st token: 409" 409 "$(mint "$A" t21)"
req GET agent-tokens '' -b "$A" >/dev/null
check "the list has 20 tokens, ids increasing" "20 yes" "$(php -r '$l = json_decode(file_get_contents($argv[1]), true); $ids = array_column($l, "id"); $s = $ids; sort($s); echo count($l), " ", ($ids === $s && count(array_unique($ids)) === count($ids)) ? "yes" : "no";' "$TMP/body")"
first_id=$(php -r 'echo json_decode(file_get_contents($argv[1]), true)[0]["id"];' "$TMP/body")
max_id=$(php -r 'echo max(array_column(json_decode(file_get_contents($argv[1]), true), "id"));' "$TMP/body")
check "delete the oldest: 204" 204 "$(req DELETE "agent-tokens/$first_id" '' -b "$A")"
check "then a new one: 201 with an id above all earlier ones" "201 $((max_id + 1))" "$(mint "$A" again) $(json id)"

# ---- CLI tokens, deletion, relay key file -----------------------------------------------------------
TC=$("$CLI" token:mint bob demo 7)
check_match "cli token:mint prints only the token" '^fwa_[0-9a-f]{64}$' "$TC"
check "the cli token works" 200 "$(verify "$TC" 198.51.100.16)"
"$CLI" token:mint bob demo 0 >/dev/null 2>&1
check "cli token:mint with 0 days fails" 1 $?
"$CLI" user:del bob 2>/dev/null
check "cli user:del: 0" 0 $?
check "the deleted user's token: 401" 401 "$(verify "$TC" 198.51.100.16)"
check "the deleted user's session: 401" 401 "$(req POST agent/ticket '{}' -b "$B")"
"$CLI" user:add bob 'bob-pw' 2>/dev/null
check "a re-created bob does not revive the old token" 401 "$(verify "$TC" 198.51.100.16)"
mv "$HOSTAPI_RELAY_KEY_FILE" "$HOSTAPI_RELAY_KEY_FILE.off"
TN=$("$CLI" token:mint bob)
check "no relay key file: verify 404 even with the key" 404 "$(verify "$TN" 198.51.100.17)"
check "no relay key file: redeem 404 even with the key" 404 "$(redeem "$("$CLI" ticket:mint bob)")"
mv "$HOSTAPI_RELAY_KEY_FILE.off" "$HOSTAPI_RELAY_KEY_FILE"
check "key file back: verify 200" 200 "$(verify "$TN" 198.51.100.17)"

# ---- the browser routes' defences -------------------------------------------------------
form() { # ROUTE CONTENT-TYPE BODY [CURL ARGS]: status of a POST as a cross-site form sends it
    local route=$1 type=$2 data=$3
    shift 3
    curl -s -o /dev/null -w '%{http_code}' -X POST -H "Content-Type: $type" --data-binary "$data" "$@" "$BASE?r=$route"
}
check "login as a cross-site text/plain form: 415" 415 "$(form login text/plain '{"username":"bob","password":"bob-pw"}')"
check "minting a token as a urlencoded form, with the cookie: 415" 415 "$(form agent-tokens application/x-www-form-urlencoded 'name=x' -b "$A")"
check "a ticket as a multipart form, with the cookie: 415" 415 "$(form agent/ticket 'multipart/form-data; boundary=b' $'--b\r\nContent-Disposition: form-data; name="x"\r\n\r\n1\r\n--b--\r\n' -b "$A")"
check "application/json with a charset is JSON" 200 "$(form login 'application/json; charset=utf-8' '{"username":"bob","password":"bob-pw"}')"
login bob bob-pw "$TMP/plain.jar" >/dev/null
check_match "the session cookie is HttpOnly and SameSite=Lax" 'HttpOnly; SameSite=Lax' "$(grep -i '^set-cookie' "$TMP/headers")"
check "no Secure flag over plain HTTP" "" "$(grep -i '^set-cookie' "$TMP/headers" | grep -io 'secure')"
req POST login '{"username":"bob","password":"bob-pw"}' -c "$TMP/tls.jar" -H 'X-Forwarded-Proto: https' >/dev/null
check_match "Secure behind TLS (X-Forwarded-Proto: https)" 'SameSite=Lax; Secure' "$(grep -i '^set-cookie' "$TMP/headers")"
"$CLI" user:add carol 'carol-pw' 2>/dev/null
for i in 1 2 3 4 5; do
    check "wrong password $i for carol: 401" 401 "$(login carol "nope-$i" "$TMP/x.jar")"
done
check "the sixth attempt, even with the right password: 429" 429 "$(login carol carol-pw "$TMP/x.jar")"
check_match "with a Retry-After of up to 15 minutes" '^([1-9][0-9]{0,2})$' "$(header Retry-After)"
check "another account from the same address still logs in" 200 "$(login bob bob-pw "$TMP/x.jar")"
TOKENS_OF_ALICE=$(req GET agent-tokens '' -b "$A" >/dev/null; php -r 'echo count(json_decode(file_get_contents($argv[1]), true));' "$TMP/body")
check_match "alice's tokens are listed from her own index" '^[0-9]+$' "$TOKENS_OF_ALICE"
check "the index is one file per account, named by SHA-256" yes "$([ -f "$HOSTAPI_DATA/token-index/$(printf '%s' alice | sha256sum | cut -d' ' -f1).json" ] && echo yes)"

# ---- nothing secret on disk or in the log --------------------------------------------------------------
leaks=0
for secret in "$T1" "$T2" "$T3" "$TC" "$TN" "$TK" "$TB" "$KEY"; do
    grep -rqF -- "$secret" "$HOSTAPI_DATA" "$TMP/server.log" && leaks=$((leaks + 1))
done
check "no token, ticket or key in the data records or the server log" 0 "$leaks"
check "no PHP warnings or errors in the server log" 0 "$(grep -ciE 'php (warning|notice|fatal|deprecated)|hostapi:' "$TMP/server.log")"
grep -iE 'php (warning|notice|fatal|deprecated)|hostapi:' "$TMP/server.log" | head -5

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
