#!/usr/bin/env bash
# Tests of the reference host API (hostapi/): starts `php -S` on a free port with a
# temporary data folder and exercises every route of HOST-API.md with curl, and its OAuth
# authorization server ("Agents that sign in"), with a second host API on other settings and
# a third `php -S` serving client ID metadata documents.
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
EXTRA_PIDS=()
cleanup() {
    # php -S with workers forks; the workers outlive a killed parent, so end the
    # whole process group (each server was started as its own job).
    for pid in $PHP_PID "${EXTRA_PIDS[@]}"; do
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- start the server: port 0 lets the OS pick; php -S prints the real port ----------
set -m # own process group for the server and its workers
PHP_CLI_SERVER_WORKERS=4 php -S 127.0.0.1:0 -t "$HOSTAPI/public" "$HOSTAPI/serve.php" >"$TMP/server.log" 2>&1 &
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
count_tokens() { # JAR: prints how many tokens the account lists
    req GET agent-tokens '' -b "$1" >/dev/null
    php -r 'echo count(json_decode(file_get_contents($argv[1]), true));' "$TMP/body"
}
TOKENS_OF_ALICE=$(count_tokens "$A")
check_match "alice's tokens are listed from her own index" '^[0-9]+$' "$TOKENS_OF_ALICE"
check "the index is one file per account, named by SHA-256" yes "$([ -f "$HOSTAPI_DATA/token-index/$(printf '%s' alice | sha256sum | cut -d' ' -f1).json" ] && echo yes)"
# Data written before the index existed: one scan indexes every account's tokens at once and
# leaves a marker, after which an account without an index has none (no scan per new account).
check "one scan indexed the data this folder started with" yes "$([ -f "$HOSTAPI_DATA/token-index/scanned.json" ] && echo yes)"
rm -rf "$HOSTAPI_DATA/token-index"
check "after an upgrade from data without the index, alice still lists all her tokens" "$TOKENS_OF_ALICE" "$(count_tokens "$A")"
check "and the scan that rebuilt the index is marked done" yes "$([ -f "$HOSTAPI_DATA/token-index/scanned.json" ] && echo yes)"
"$CLI" user:add dave 'dave-pw' 2>/dev/null
login dave dave-pw "$TMP/dave.jar" >/dev/null
check "a new account after the scan lists no tokens" 0 "$(count_tokens "$TMP/dave.jar")"
check "its first token is minted: 201" 201 "$(mint "$TMP/dave.jar" first)"
check "and listed" 1 "$(count_tokens "$TMP/dave.jar")"

# ---- OAuth 2.1: the authorization server (HOST-API.md "Agents that sign in") ------------------
ORIGIN="http://127.0.0.1:$PORT"
SECRETS=() # every token, refresh token and code seen below, for the leak check at the end

# oreq METHOD URL [CURL ARGS...]: prints the status; body in $TMP/body, headers in $TMP/headers
oreq() {
    local method=$1 url=$2
    shift 2
    curl -s -o "$TMP/body" -D "$TMP/headers" -w '%{http_code}' -X "$method" "$@" "$url"
}
# (`--` before the arguments: a random value may start with "-", which php would take for an option)
urlenc() { php -r 'echo rawurlencode($argv[1]);' -- "$1"; }
qparam() { # URL NAME: a query parameter of the URL
    php -r '$q = []; parse_str((string) parse_url($argv[1], PHP_URL_QUERY), $q); echo $q[$argv[2]] ?? "";' -- "$1" "$2"
}
jsonof() { # NAME=VALUE...: a JSON object of strings
    php -r 'array_shift($argv); $o = []; foreach ($argv as $a) { [$k, $v] = explode("=", $a, 2); $o[$k] = $v; } echo json_encode($o, JSON_UNESCAPED_SLASHES);' -- "$@"
}
pkce() { # sets VERIFIER and CHALLENGE (S256)
    VERIFIER=$(php -r 'echo rtrim(strtr(base64_encode(random_bytes(32)), "+/", "-_"), "=");')
    CHALLENGE=$(php -r 'echo rtrim(strtr(base64_encode(hash("sha256", $argv[1], true)), "+/", "-_"), "=");' -- "$VERIFIER")
}
STATE='st-1 &x=y' # a state with characters that must come back encoded
authz() { # BASE CLIENT REDIRECT [EXTRA QUERY]: the URL of an authorization request with PKCE S256
    printf '%s/oauth/authorize?response_type=code&client_id=%s&redirect_uri=%s&code_challenge=%s&code_challenge_method=S256&state=%s%s' \
        "$1" "$(urlenc "$2")" "$(urlenc "$3")" "$CHALLENGE" "$(urlenc "$STATE")" "${4-}"
}
consent() { # BASE JAR DECISION CLIENT REDIRECT [NAME=VALUE...]: status of the page's POST; the URL in $TMP/body
    local base=$1 jar=$2 decision=$3 client=$4 redirect=$5
    shift 5
    local cookie=()
    [ -n "$jar" ] && cookie=(-b "$jar")
    oreq POST "$base/oauth/authorize" "${cookie[@]}" -H 'Content-Type: application/json' --data-binary \
        "$(jsonof response_type=code "client_id=$client" "redirect_uri=$redirect" "code_challenge=$CHALLENGE" \
            code_challenge_method=S256 "state=$STATE" "decision=$decision" "$@")"
}
exchange() { # BASE CODE VERIFIER CLIENT REDIRECT [CURL ARGS]: status of the token request
    local base=$1 code=$2 verifier=$3 client=$4 redirect=$5
    shift 5
    oreq POST "$base/oauth/token" --data-urlencode grant_type=authorization_code --data-urlencode "code=$code" \
        --data-urlencode "code_verifier=$verifier" --data-urlencode "client_id=$client" --data-urlencode "redirect_uri=$redirect" "$@"
}
refresh() { # BASE REFRESH_TOKEN CLIENT [CURL ARGS]: status of a refresh
    local base=$1 token=$2 client=$3
    shift 3
    oreq POST "$base/oauth/token" --data-urlencode grant_type=refresh_token --data-urlencode "refresh_token=$token" \
        --data-urlencode "client_id=$client" "$@"
}
sign_in() { # BASE JAR CLIENT REDIRECT [NAME=VALUE...]: consent and exchange; sets CODE, ACCESS, REFRESH (empty on failure)
    local base=$1 jar=$2 client=$3 redirect=$4
    shift 4
    pkce
    CODE= ACCESS= REFRESH=
    consent "$base" "$jar" allow "$client" "$redirect" "$@" >/dev/null
    CODE=$(qparam "$(json redirect)" code)
    [ -n "$CODE" ] || return 1
    exchange "$base" "$CODE" "$VERIFIER" "$client" "$redirect" >/dev/null
    ACCESS=$(json access_token)
    REFRESH=$(json refresh_token)
    SECRETS+=("$CODE" "$ACCESS" "$REFRESH")
}
vfy() { verify "$1" "198.18.$((RANDOM % 250)).$((RANDOM % 250))"; } # agent/verify from a fresh address
sha() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
past() { # KIND SHA256 FIELD: sets FIELD of the record to a time in the past
    php -r '$f = $argv[1]; $d = json_decode(file_get_contents($f), true); $d[$argv[2]] = time() - 1; file_put_contents($f, json_encode($d));' \
        "$HOSTAPI_DATA/$1/$2.json" "$3"
}
# serve LOG [NAME=VALUE...] -- PHP -S ARGS: starts another `php -S 127.0.0.1:0` as its own group; sets SERVED_PORT
serve() {
    local log=$1
    shift
    local vars=()
    while [ "$1" != -- ]; do vars+=("$1"); shift; done
    shift
    set -m
    env "${vars[@]}" PHP_CLI_SERVER_WORKERS=2 php -S 127.0.0.1:0 "$@" >"$log" 2>&1 &
    EXTRA_PIDS+=($!)
    set +m
    SERVED_PORT=
    for _ in $(seq 1 500); do
        SERVED_PORT=$(grep -o -m1 'Development Server (http://127\.0\.0\.1:[0-9]*' "$log" 2>/dev/null | grep -o '[0-9]*$')
        [ -n "$SERVED_PORT" ] && return 0
        sleep 0.02
    done
    echo "php -S did not start:"
    cat "$log"
    exit 1
}

"$CLI" user:add dana 'dana-pw' 2>/dev/null
D="$TMP/dana.jar"
login dana dana-pw "$D" >/dev/null

# -- metadata (RFC 8414)
check "metadata: 200" 200 "$(oreq GET "$ORIGIN/.well-known/oauth-authorization-server")"
check_match "metadata is application/json" '^application/json' "$(header content-type)"
check "metadata may be read from any origin (CORS)" '*' "$(header access-control-allow-origin)"
check "metadata has exactly the fields of HOST-API.md (and revocation_endpoint_auth_methods_supported)" \
    'authorization_endpoint authorization_response_iss_parameter_supported client_id_metadata_document_supported code_challenge_methods_supported grant_types_supported issuer registration_endpoint response_types_supported revocation_endpoint revocation_endpoint_auth_methods_supported token_endpoint token_endpoint_auth_methods_supported' \
    "$(php -r '$k = array_keys(json_decode(file_get_contents($argv[1]), true)); sort($k); echo implode(" ", $k);' "$TMP/body")"
check "metadata: issuer is the request's origin" "$ORIGIN" "$(json issuer)"
check "... so not cacheable: no-store (HOSTAPI_ISSUER unset, the issuer comes from Host)" no-store "$(header cache-control)"
check "metadata: endpoints under /oauth/" "$ORIGIN/oauth/authorize $ORIGIN/oauth/token $ORIGIN/oauth/register $ORIGIN/oauth/revoke" \
    "$(json authorization_endpoint) $(json token_endpoint) $(json registration_endpoint) $(json revocation_endpoint)"
check "metadata: code, both grants, S256, public clients" \
    '["code"] ["authorization_code","refresh_token"] ["S256"] ["none"] ["none"]' \
    "$(json response_types_supported) $(json grant_types_supported) $(json code_challenge_methods_supported) $(json token_endpoint_auth_methods_supported) $(json revocation_endpoint_auth_methods_supported)"
check "metadata: client ID metadata documents and iss supported" "1 1" \
    "$(json client_id_metadata_document_supported) $(json authorization_response_iss_parameter_supported)"
check "metadata: POST is 405" 405 "$(oreq POST "$ORIGIN/.well-known/oauth-authorization-server")"
check "an unknown /oauth/ path: 404" 404 "$(oreq GET "$ORIGIN/oauth/nothing")"
check "the editor page is still served beside the router script" 200 "$(oreq GET "$ORIGIN/editor/")"
check "the API is still served beside the router script" 200 "$(oreq GET "$ORIGIN/api/index.php?r=relay-config")"
check "a CORS preflight of the registration endpoint: 204" 204 \
    "$(oreq OPTIONS "$ORIGIN/oauth/register" -H 'Origin: https://inspector.example' -H 'Access-Control-Request-Method: POST')"
check_match "the preflight allows Content-Type and MCP-Protocol-Version" 'Content-Type.*MCP-Protocol-Version' "$(header access-control-allow-headers)"

# -- dynamic registration (RFC 7591)
register() { oreq POST "$ORIGIN/oauth/register" -H 'Content-Type: application/json' --data-binary "$1"; }
R1=http://127.0.0.1/callback
R2='https://app.example/cb?from=oauth'
check "register a client: 201" 201 "$(register "{\"client_name\":\"Test client\",\"redirect_uris\":[\"$R1\",\"$R2\"],\"grant_types\":[\"authorization_code\",\"refresh_token\"],\"response_types\":[\"code\"],\"token_endpoint_auth_method\":\"none\"}")"
CID=$(json client_id)
check_match "client_id is dyn_ + 32 hex" '^dyn_[0-9a-f]{32}$' "$CID"
check_match "the answer has client_id_issued_at and the metadata" '^[0-9]+ Test client none \["code"\]$' \
    "$(json client_id_issued_at) $(json client_name) $(json token_endpoint_auth_method) $(json response_types)"
check "registration answers any origin (CORS)" '*' "$(header access-control-allow-origin)"
check "register an http redirect off loopback: 400 invalid_redirect_uri" "400 invalid_redirect_uri" \
    "$(register '{"redirect_uris":["http://app.example/cb"]}') $(json error)"
check "register a redirect with a fragment: 400 invalid_redirect_uri" "400 invalid_redirect_uri" \
    "$(register '{"redirect_uris":["https://app.example/cb#x"]}') $(json error)"
check "register a javascript: redirect: 400 invalid_redirect_uri" "400 invalid_redirect_uri" \
    "$(register '{"redirect_uris":["javascript:alert(1)"]}') $(json error)"
check "register without redirect_uris: 400 invalid_redirect_uri" "400 invalid_redirect_uri" "$(register '{"client_name":"x"}') $(json error)"
check "register a confidential client (client_secret_basic): 400 invalid_client_metadata" "400 invalid_client_metadata" \
    "$(register "{\"redirect_uris\":[\"$R1\"],\"token_endpoint_auth_method\":\"client_secret_basic\"}") $(json error)"
check "register with grant client_credentials: 400 invalid_client_metadata" "400 invalid_client_metadata" \
    "$(register "{\"redirect_uris\":[\"$R1\"],\"grant_types\":[\"client_credentials\"]}") $(json error)"
check "register with a 101-character name: 400 invalid_client_metadata" "400 invalid_client_metadata" \
    "$(register "{\"redirect_uris\":[\"$R1\"],\"client_name\":\"$(printf 'n%.0s' $(seq 101))\"}") $(json error)"
check "register with malformed JSON: 400 invalid_client_metadata" "400 invalid_client_metadata" "$(register '{') $(json error)"
check "register a native app's private-use scheme: 201" 201 "$(register '{"redirect_uris":["com.example.app:/oauth/cb"]}')"
check "register a client that will stay unused: 201" 201 "$(register "{\"redirect_uris\":[\"$R1\"]}")"
STALE=$(json client_id)
php -r '$f = $argv[1]; $d = json_decode(file_get_contents($f), true); $d["createdAt"] = time() - 86401; file_put_contents($f, json_encode($d));' \
    "$HOSTAPI_DATA/oauth-clients/$STALE.json"
rm -f "$HOSTAPI_DATA/stamps/purge-oauth-clients" # the hourly purge is due
register "{\"redirect_uris\":[\"$R1\"]}" >/dev/null
check "a registration never used for a day is purged" no "$([ -f "$HOSTAPI_DATA/oauth-clients/$STALE.json" ] && echo yes || echo no)"
php -r 'for ($i = 0; $i < 10000; $i++) { file_put_contents(sprintf("%s/dyn_fill%05d.json", $argv[1], $i), "{\"createdAt\":" . time() . "}"); }' \
    "$HOSTAPI_DATA/oauth-clients"
check "registration 10,001: 503" "503 temporarily_unavailable" "$(register "{\"redirect_uris\":[\"$R1\"]}") $(json error)"
check_match "... with an error_description" 'too many registered clients' "$(json error_description)"
rm -f "$HOSTAPI_DATA"/oauth-clients/dyn_fill*.json
check "register a name with a bidi override (U+202E): 400 invalid_client_metadata" "400 invalid_client_metadata" \
    "$(register "{\"redirect_uris\":[\"$R1\"],\"client_name\":\"Good \\u202eevil\"}") $(json error)"
check "register a name with a zero-width joiner (U+200D): 400 invalid_client_metadata" "400 invalid_client_metadata" \
    "$(register "{\"redirect_uris\":[\"$R1\"],\"client_name\":\"Go\\u200dod\"}") $(json error)"
RATE_REGISTER="$HOSTAPI_DATA/rate/$(sha 'register 127.0.0.1').json" # the limit's record for this address
rm -f "$RATE_REGISTER"
statuses=
for i in $(seq 1 31); do statuses+="$(register "{\"redirect_uris\":[\"$R1\"]}") "; done
check "31 registrations from one address: 201 for 30 (in 10 minutes), then 429" "$(printf '201 %.0s' $(seq 30))429 " "$statuses"
check "... whose body is temporarily_unavailable, with Retry-After (<= 600 s)" "temporarily_unavailable yes" \
    "$(json error) $([[ "$(header retry-after)" =~ ^[1-9][0-9]{0,2}$ ]] && [ "$(header retry-after)" -le 600 ] && echo yes)"
rm -f "$RATE_REGISTER"
check "... counted per address, as rate/<sha256 of \"register ADDRESS\">: without it, 201 again" 201 "$(register "{\"redirect_uris\":[\"$R1\"]}")"

# -- sign-in is off until the host API names its relay (HOSTAPI_RESOURCES, else the file resources)
pkce
check "authorize without HOSTAPI_RESOURCES: 400 page, no redirect, invalid_target" "400  invalid_target" \
    "$(oreq GET "$(authz "$ORIGIN" "$CID" "$R1")" -b "$D") $(header location) $(grep -o invalid_target "$TMP/body" | head -1)"
check_match "... telling the operator to set HOSTAPI_RESOURCES to the relay's public MCP URL" \
    'Sign-in is off.*set HOSTAPI_RESOURCES to the relay&apos;s public MCP URL' "$(body)"
check "... also for a client that does not exist (checked first)" 400 "$(oreq GET "$(authz "$ORIGIN" dyn_00000000000000000000000000000000 "$R1")")"
check_match "... saying the same" 'Sign-in is off' "$(body)"
check "the consent without HOSTAPI_RESOURCES: 400 invalid_target, no redirect" "400 invalid_target " \
    "$(consent "$ORIGIN" "$D" allow "$CID" "$R1") $(json error) $(json redirect)"
printf 'https://relay.example.org/mcp\n' >"$HOSTAPI_DATA/resources" # read per request: sign-in is on from here

# -- the authorization endpoint: what is shown on the page, what goes back to the client
pkce
check "authorize for an unknown client: 400 page" 400 "$(oreq GET "$(authz "$ORIGIN" dyn_00000000000000000000000000000000 "$R1")")"
check "... HTML, no redirect" "text/html;charset=utf-8 " "$(header content-type) $(header location)"
check_match "... saying why" 'Unknown client_id' "$(body)"
check "authorize with a redirect URI the client did not register: 400 page" "400 " \
    "$(oreq GET "$(authz "$ORIGIN" "$CID" https://evil.example/cb)") $(header location)"
check "authorize with a registered https redirect on another path: 400 page" 400 \
    "$(oreq GET "$(authz "$ORIGIN" "$CID" 'https://app.example/cb?from=other')")"
check "authorize with a loopback redirect on another port (RFC 8252): 200" 200 "$(oreq GET "$(authz "$ORIGIN" "$CID" http://127.0.0.1:53123/callback)")"
check "... without a session: the sign-in form" 3 "$(grep -oE 'id="(username|password|login)"' "$TMP/body" | wc -l)"
check_match "... names the client (isolated in <bdi>), unverified" 'id="client-name"><bdi>Test client</bdi> \(unverified\)' "$(body)"
check "the page may not be framed" "DENY" "$(header x-frame-options)"
csp=$(grep -i '^content-security-policy:' "$TMP/headers")
check_match "... its CSP forbids framing" "frame-ancestors 'none'" "$csp"
check_match "... and allows only its own script (by hash), nothing else" "default-src 'none'; script-src 'sha256-[A-Za-z0-9+/=]+';" "$csp"
check "... no-store, no referrer, no CORS" "no-store no-referrer " \
    "$(header cache-control) $(header referrer-policy) $(header access-control-allow-origin)"
check "authorize with a loopback redirect on another path: 400 page" 400 "$(oreq GET "$(authz "$ORIGIN" "$CID" http://127.0.0.1:53123/other)")"
NOPKCE="$ORIGIN/oauth/authorize?response_type=code&client_id=$CID&redirect_uri=$(urlenc "$R1")&state=$(urlenc "$STATE")"
check "authorize without PKCE: 302" 302 "$(oreq GET "$NOPKCE")"
LOC=$(header location)
check "... to the redirect URI with invalid_request, the state and iss" "$R1 invalid_request $STATE $ORIGIN" \
    "${LOC%%\?*} $(qparam "$LOC" error) $(qparam "$LOC" state) $(qparam "$LOC" iss)"
check_match "... saying PKCE is required" 'PKCE is required' "$(qparam "$LOC" error_description)"
oreq GET "$NOPKCE&code_challenge=$CHALLENGE&code_challenge_method=plain" >/dev/null
check "authorize with code_challenge_method=plain: invalid_request" invalid_request "$(qparam "$(header location)" error)"
oreq GET "$NOPKCE&code_challenge=$CHALLENGE" >/dev/null
check "authorize without code_challenge_method (plain): invalid_request" invalid_request "$(qparam "$(header location)" error)"
oreq GET "$NOPKCE&code_challenge=short&code_challenge_method=S256" >/dev/null
check "authorize with a malformed challenge: invalid_request" invalid_request "$(qparam "$(header location)" error)"
oreq GET "$(authz "$ORIGIN" "$CID" "$R1" '&resource=relay')" >/dev/null
check "authorize with a resource that is no URL: invalid_target" invalid_target "$(qparam "$(header location)" error)"
oreq GET "$(authz "$ORIGIN" "$CID" "$R1" "&resource=$(urlenc 'https://relay.example.org/mcp#x')")" >/dev/null
check "authorize with a resource with a fragment: invalid_target" invalid_target "$(qparam "$(header location)" error)"
oreq GET "$(authz "$ORIGIN" "$CID" "$R1" '&response_type=token')" >/dev/null
check "authorize with response_type twice: invalid_request" invalid_request "$(qparam "$(header location)" error)"
oreq GET "${NOPKCE/response_type=code/response_type=token}&code_challenge=$CHALLENGE&code_challenge_method=S256" >/dev/null
check "authorize with response_type=token: unsupported_response_type" unsupported_response_type "$(qparam "$(header location)" error)"
oreq GET "$(authz "$ORIGIN" "$CID" "$R2" '&code_challenge_method=plain')" >/dev/null
check_match "an error for a redirect URI with a query: appended with &" '^https://app\.example/cb\?from=oauth&error=invalid_request&' "$(header location)"
check "authorize with a state over 1024 characters: 400 page" 400 "$(oreq GET "$(authz "$ORIGIN" "$CID" "$R1")$(printf 's%.0s' $(seq 1025))")"
RES=https://relay.example.org/mcp
check "authorize with a session: 200" 200 "$(oreq GET "$(authz "$ORIGIN" "$CID" "$R1" "&resource=$(urlenc "$RES")")" -b "$D")"
check "... the consent screen: client, redirect, account, allow, deny" 5 "$(grep -oE 'id="(client-name|redirect-uri|account|allow|deny)"' "$TMP/body" | wc -l)"
check_match "... for dana's account" 'id="account">dana<' "$(body)"
check_match "... that says what the agent may do" 'see and change what you see' "$(body)"

# -- the consent (the page's POST, JSON)
check "consent without a session: 401" 401 "$(consent "$ORIGIN" '' allow "$CID" "$R1")"
check "consent as a cross-site form, with the cookie: 415" 415 \
    "$(oreq POST "$ORIGIN/oauth/authorize" -b "$D" --data-urlencode "client_id=$CID" --data-urlencode "redirect_uri=$R1" --data-urlencode decision=allow)"
check "consent with neither allow nor deny: 400 invalid_request" "400 invalid_request" "$(consent "$ORIGIN" "$D" maybe "$CID" "$R1") $(json error)"
check "consent for a redirect URI the client did not register: 400" "400 " "$(consent "$ORIGIN" "$D" allow "$CID" https://evil.example/cb) $(json redirect)"
check "consent answers no CORS" "" "$(header access-control-allow-origin)"
check "deny: 200" 200 "$(consent "$ORIGIN" "$D" deny "$CID" "$R1")"
LOC=$(json redirect)
check "... back with access_denied, the state and iss" "$R1 access_denied $STATE $ORIGIN" \
    "${LOC%%\?*} $(qparam "$LOC" error) $(qparam "$LOC" state) $(qparam "$LOC" iss)"
check "allow: 200" 200 "$(consent "$ORIGIN" "$D" allow "$CID" "$R1" "resource=$RES")"
LOC=$(json redirect)
CODE=$(qparam "$LOC" code)
SECRETS+=("$CODE")
check_match "... back with a code (256 bits, base64url), the state and iss" "^$R1 [A-Za-z0-9_-]{43} $STATE $ORIGIN\$" \
    "${LOC%%\?*} $CODE $(qparam "$LOC" state) $(qparam "$LOC" iss)"
check "the code is kept as its SHA-256 only" yes "$([ -f "$HOSTAPI_DATA/oauth-codes/$(sha "$CODE").json" ] && echo yes)"

# -- the token endpoint
GOOD_VERIFIER=$VERIFIER
check "token with a JSON body: 400 invalid_request" "400 invalid_request" \
    "$(oreq POST "$ORIGIN/oauth/token" -H 'Content-Type: application/json' --data-binary '{"grant_type":"authorization_code"}') $(json error)"
check "token without code_verifier: 400 invalid_request" "400 invalid_request" \
    "$(oreq POST "$ORIGIN/oauth/token" --data-urlencode grant_type=authorization_code --data-urlencode "code=$CODE" --data-urlencode "client_id=$CID" --data-urlencode "redirect_uri=$R1") $(json error)"
check "token with grant_type=password: 400 unsupported_grant_type" "400 unsupported_grant_type" \
    "$(oreq POST "$ORIGIN/oauth/token" -d grant_type=password -d username=dana) $(json error)"
check "token with a client_secret: 401 invalid_client" "401 invalid_client" \
    "$(exchange "$ORIGIN" "$CODE" "$GOOD_VERIFIER" "$CID" "$R1" --data-urlencode client_secret=s) $(json error)"
check "exchange the code: 200" 200 "$(exchange "$ORIGIN" "$CODE" "$GOOD_VERIFIER" "$CID" "$R1")"
ACCESS=$(json access_token)
REFRESH=$(json refresh_token)
SECRETS+=("$ACCESS" "$REFRESH")
check_match "... an agent token and a refresh token" '^fwa_[0-9a-f]{64} fwr_[0-9a-f]{64}$' "$ACCESS $REFRESH"
check "... Bearer, for an hour" "Bearer 3600" "$(json token_type) $(json expires_in)"
check "... no-store, any origin" "no-store *" "$(header cache-control) $(header access-control-allow-origin)"
check "agent/verify of the access token: dana, for the resource asked for" "200 dana $RES" "$(vfy "$ACCESS") $(json user) $(json resource)"
check "the same code again: 400 invalid_grant" "400 invalid_grant" "$(exchange "$ORIGIN" "$CODE" "$GOOD_VERIFIER" "$CID" "$R1") $(json error)"
check "... which ends what the code gave (a used code is a stolen one)" 401 "$(vfy "$ACCESS")"
check "... and its refresh token" "400 invalid_grant" "$(refresh "$ORIGIN" "$REFRESH" "$CID") $(json error)"
# A second use that comes while the first is still starting its family finds none to end yet:
# the family, chosen before the code is consumed, then ends itself (driven by hand, in order).
check "a code used again before its family is started: the family ends as it starts" "invalid_grant seen no-family" \
    "$(php -r 'require $argv[1];
        $store = HostApi\Store::fromEnv(); $users = new HostApi\Users($store); $codes = new HostApi\AuthorizationCodes($store);
        $families = new HostApi\TokenFamilies($store, $users, new HostApi\Tokens($store, $users)); $u = $users->get("dana");
        $code = $codes->mint(["client" => ["id" => "x", "name" => "x"], "redirectUri" => "r", "challenge" => "c",
            "resource" => "https://relay.example.org/mcp", "user" => "dana", "uid" => $u["uid"], "generation" => $u["generation"]]);
        $handle = HostApi\TokenFamilies::newHandle(); $id = HostApi\TokenFamilies::idOf($handle);
        $grant = $codes->take($code, $id); $second = $codes->reuse($code);
        try { $families->start($grant, $handle, fn(): bool => $codes->reused($code)); echo "started"; }
        catch (HostApi\OAuthError $e) { echo $e->error; }
        echo $second === null ? " unseen" : " seen", is_file($store->path("oauth-families", "$id.json")) ? " family" : " no-family";' \
        "$HOSTAPI/src/bootstrap.php")"
req GET agent-tokens '' -b "$D" >/dev/null
listed=$(body | tr -d '\n')
survived=0
for round in 1 2 3 4 5; do
    pkce
    consent "$ORIGIN" "$D" allow "$CID" "$R1" >/dev/null
    C=$(qparam "$(json redirect)" code)
    SECRETS+=("$C")
    pids=()
    for i in 1 2; do
        curl -s -o "$TMP/race.$i" --data-urlencode grant_type=authorization_code --data-urlencode "code=$C" --data-urlencode "code_verifier=$VERIFIER" \
            --data-urlencode "client_id=$CID" --data-urlencode "redirect_uri=$R1" "$ORIGIN/oauth/token" &
        pids+=($!)
    done
    wait "${pids[@]}"
    for i in 1 2; do
        cp "$TMP/race.$i" "$TMP/body"
        SECRETS+=("$(json access_token)" "$(json refresh_token)")
    done
    req GET agent-tokens '' -b "$D" >/dev/null
    [ "$(body | tr -d '\n')" = "$listed" ] || survived=$((survived + 1))
done
rm -f "$TMP"/race.*
check "two exchanges of one code at once: nothing the code gave survives (5 rounds)" 0 "$survived"

sign_in "$ORIGIN" "$D" "$CID" "$R1" "resource=$RES"
check "another sign-in: an agent token" 200 "$(vfy "$ACCESS")"
pkce
consent "$ORIGIN" "$D" allow "$CID" "$R1" >/dev/null
C2=$(qparam "$(json redirect)" code)
SECRETS+=("$C2")
check "a wrong code_verifier: 400 invalid_grant" "400 invalid_grant" "$(exchange "$ORIGIN" "$C2" "${VERIFIER}x" "$CID" "$R1") $(json error)"
check "... and the code is used up: the right one then fails too" "400 invalid_grant" "$(exchange "$ORIGIN" "$C2" "$VERIFIER" "$CID" "$R1") $(json error)"
consent "$ORIGIN" "$D" allow "$CID" "$R1" >/dev/null
C3=$(qparam "$(json redirect)" code)
SECRETS+=("$C3")
past oauth-codes "$(sha "$C3")" expiresAt
check "a code past its 60 seconds: 400 invalid_grant" "400 invalid_grant" "$(exchange "$ORIGIN" "$C3" "$VERIFIER" "$CID" "$R1") $(json error)"
consent "$ORIGIN" "$D" allow "$CID" "$R1" >/dev/null
C4=$(qparam "$(json redirect)" code)
SECRETS+=("$C4")
check "a redirect_uri other than the request's: 400 invalid_grant" "400 invalid_grant" \
    "$(exchange "$ORIGIN" "$C4" "$VERIFIER" "$CID" http://127.0.0.1:9/callback) $(json error)"
consent "$ORIGIN" "$D" allow "$CID" http://127.0.0.1:8123/callback >/dev/null
C5=$(qparam "$(json redirect)" code)
SECRETS+=("$C5")
check "another client's client_id: 400 invalid_grant" "400 invalid_grant" \
    "$(exchange "$ORIGIN" "$C5" "$VERIFIER" "$STALE" http://127.0.0.1:8123/callback) $(json error)"
consent "$ORIGIN" "$D" allow "$CID" "$R1" "resource=$RES" >/dev/null
C6=$(qparam "$(json redirect)" code)
SECRETS+=("$C6")
check "a resource other than the request's: 400 invalid_target" "400 invalid_target" \
    "$(exchange "$ORIGIN" "$C6" "$VERIFIER" "$CID" "$R1" --data-urlencode resource=https://other.example/mcp) $(json error)"

# -- what the person sees, refresh, reuse, revocation
req GET agent-tokens '' -b "$D" >/dev/null
check "agent-tokens lists the sign-in under the client's name" "1 Test client Test client" \
    "$(php -r '$l = json_decode(file_get_contents($argv[1]), true); echo count($l), " ", $l[0]["name"], " ", $l[0]["client"];' "$TMP/body")"
LISTED_ID=$(php -r 'echo json_decode(file_get_contents($argv[1]), true)[0]["id"];' "$TMP/body")
check "refresh: 200" 200 "$(refresh "$ORIGIN" "$REFRESH" "$CID")"
A2=$(json access_token)
R2T=$(json refresh_token)
SECRETS+=("$A2" "$R2T")
check_match "... new tokens, both" '^fwa_[0-9a-f]{64} fwr_[0-9a-f]{64} new$' "$A2 $R2T $([ "$A2" != "$ACCESS" ] && [ "$R2T" != "$REFRESH" ] && echo new)"
check "... the old access token: 401" 401 "$(vfy "$ACCESS")"
check "... the new one: 200, same resource" "200 $RES" "$(vfy "$A2") $(json resource)"
req GET agent-tokens '' -b "$D" >/dev/null
check "... still one entry in the list, under the same id" "1 $LISTED_ID" \
    "$(php -r '$l = json_decode(file_get_contents($argv[1]), true); echo count($l), " ", $l[0]["id"];' "$TMP/body")"
check "refresh for another client_id: 400 invalid_grant" "400 invalid_grant" "$(refresh "$ORIGIN" "$R2T" "$STALE") $(json error)"
past tokens "$(sha "$A2")" accessExpiresAt
check "an access token past its hour: 401" 401 "$(vfy "$A2")"
req GET agent-tokens '' -b "$D" >/dev/null
check "... while the sign-in stays listed (a refresh renews it)" 1 "$(php -r 'echo count(json_decode(file_get_contents($argv[1]), true));' "$TMP/body")"
statuses=
for i in 1 2 3 4 5 6; do statuses+="$(verify "$A2" 198.51.100.77) "; done
check "a lapsed access token is no guess: six from one address, 401 each, no lockout" "401 401 401 401 401 401 " "$statuses"
check "... a good token from that address still works" 200 "$(verify "$TN" 198.51.100.77)"
check "refresh after the hour: 200" 200 "$(refresh "$ORIGIN" "$R2T" "$CID")"
A3=$(json access_token)
R3T=$(json refresh_token)
SECRETS+=("$A3" "$R3T")
check "... the new access token works" 200 "$(vfy "$A3")"
check "an old refresh token again (reuse): 400 invalid_grant" "400 invalid_grant" "$(refresh "$ORIGIN" "$REFRESH" "$CID") $(json error)"
check "... the family's access token is dead" 401 "$(vfy "$A3")"
check "... and its latest refresh token" "400 invalid_grant" "$(refresh "$ORIGIN" "$R3T" "$CID") $(json error)"
req GET agent-tokens '' -b "$D" >/dev/null
check "... and the list is empty" "[]" "$(body | tr -d '\n')"

sign_in "$ORIGIN" "$D" "$CID" "$R1"
check "a sign-in without a resource: the first of HOSTAPI_RESOURCES" "200 $RES" "$(vfy "$ACCESS") $(json resource)"
printf 'https://elsewhere.example/mcp\n' >"$HOSTAPI_DATA/resources"
check "a refresh once HOSTAPI_RESOURCES no longer names its resource: 400 invalid_target" "400 invalid_target" \
    "$(refresh "$ORIGIN" "$REFRESH" "$CID") $(json error)"
printf '%s\n' "$RES" >"$HOSTAPI_DATA/resources"
check "... the sign-in stands: named again, the same refresh token works" 200 "$(refresh "$ORIGIN" "$REFRESH" "$CID")"
ACCESS=$(json access_token)
REFRESH=$(json refresh_token)
SECRETS+=("$ACCESS" "$REFRESH")
check "revoke the refresh token (RFC 7009): 200" 200 "$(oreq POST "$ORIGIN/oauth/revoke" --data-urlencode "token=$REFRESH" --data-urlencode token_type_hint=refresh_token --data-urlencode "client_id=$CID")"
check "... the access token is dead" 401 "$(vfy "$ACCESS")"
check "... and the refresh token" "400 invalid_grant" "$(refresh "$ORIGIN" "$REFRESH" "$CID") $(json error)"
sign_in "$ORIGIN" "$D" "$CID" "$R1"
check "revoke by the access token: 200" 200 "$(oreq POST "$ORIGIN/oauth/revoke" --data-urlencode "token=$ACCESS" --data-urlencode "client_id=$CID")"
check "... the family ends: refresh fails" "400 invalid_grant" "$(refresh "$ORIGIN" "$REFRESH" "$CID") $(json error)"
locks=$(ls "$HOSTAPI_DATA/locks" | grep -c '^family-')
check "a made-up refresh token: 400 invalid_grant" "400 invalid_grant" "$(refresh "$ORIGIN" "fwr_$(php -r 'echo bin2hex(random_bytes(32));')" "$CID") $(json error)"
check "... which leaves no lock file behind" "$locks" "$(ls "$HOSTAPI_DATA/locks" | grep -c '^family-')"
check "revoke an unknown token: 200" 200 "$(oreq POST "$ORIGIN/oauth/revoke" -d token=fwr_nothing)"
check "revoke without a token: 400 invalid_request" "400 invalid_request" "$(oreq POST "$ORIGIN/oauth/revoke" -d client_id=x) $(json error)"
sign_in "$ORIGIN" "$D" "$CID" "$R1"
req GET agent-tokens '' -b "$D" >/dev/null
FLOW_ID=$(php -r 'echo json_decode(file_get_contents($argv[1]), true)[0]["id"] ?? "";' "$TMP/body")
check "DELETE agent-tokens/{id} of a sign-in: 204" 204 "$(req DELETE "agent-tokens/$FLOW_ID" '' -b "$D")"
check "... its access token: 401" 401 "$(vfy "$ACCESS")"
check "... and the client cannot refresh its way back" "400 invalid_grant" "$(refresh "$ORIGIN" "$REFRESH" "$CID") $(json error)"
# Revoke while the client refreshes (which replaces the token under the same id): the sign-in ends.
ended=0
for round in 1 2 3 4 5; do
    sign_in "$ORIGIN" "$D" "$CID" "$R1"
    req GET agent-tokens '' -b "$D" >/dev/null
    id=$(php -r 'echo json_decode(file_get_contents($argv[1]), true)[0]["id"] ?? "";' "$TMP/body")
    curl -s -o "$TMP/race.refresh" --data-urlencode grant_type=refresh_token --data-urlencode "refresh_token=$REFRESH" \
        --data-urlencode "client_id=$CID" "$ORIGIN/oauth/token" &
    rpid=$!
    deleted=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE -b "$D" "$BASE?r=agent-tokens/$id")
    wait "$rpid"
    cp "$TMP/race.refresh" "$TMP/body"
    A9=$(json access_token)
    SECRETS+=("$A9" "$(json refresh_token)")
    req GET agent-tokens '' -b "$D" >/dev/null
    [ "$deleted $(body | tr -d '\n') $(vfy "$ACCESS") $(vfy "$A9")" = "204 [] 401 401" ] && ended=$((ended + 1))
done
rm -f "$TMP/race.refresh"
check "DELETE of a sign-in while its client refreshes: 204, and the sign-in has ended (5 rounds)" 5 "$ended"
sign_in "$ORIGIN" "$D" "$CID" "$R1"
"$CLI" user:passwd dana 'dana-pw-2' 2>/dev/null
check "after dana's password change her client's refresh: 400 invalid_grant" "400 invalid_grant" "$(refresh "$ORIGIN" "$REFRESH" "$CID") $(json error)"
check "... and its access token: 401" 401 "$(vfy "$ACCESS")"
login dana dana-pw-2 "$D" >/dev/null
sign_in "$ORIGIN" "$D" "$CID" "$R1"
"$CLI" user:del dana 2>/dev/null
check "after dana's account is deleted her client's refresh: 400 invalid_grant" "400 invalid_grant" "$(refresh "$ORIGIN" "$REFRESH" "$CID") $(json error)"

# -- the limit of 20 tokens (alice has 20 from the limits above)
login alice alice-pw-2 "$A" >/dev/null
pkce
check "consent for an account with 20 tokens: back with access_denied" "200 access_denied" \
    "$(consent "$ORIGIN" "$A" allow "$CID" "$R1") $(qparam "$(json redirect)" error)"
req GET agent-tokens '' -b "$A" >/dev/null
req DELETE "agent-tokens/$(php -r 'echo json_decode(file_get_contents($argv[1]), true)[0]["id"];' "$TMP/body")" '' -b "$A" >/dev/null
consent "$ORIGIN" "$A" allow "$CID" "$R1" >/dev/null
C7=$(qparam "$(json redirect)" code)
SECRETS+=("$C7")
mint "$A" twentieth >/dev/null
check "a code exchanged when the account has 20 tokens: 400 invalid_grant (RFC 6749 has no access_denied there)" "400 invalid_grant" \
    "$(exchange "$ORIGIN" "$C7" "$VERIFIER" "$CID" "$R1") $(json error)"
check_match "... saying what to do" 'delete one in Agent tokens first' "$(json error_description)"

# -- client ID metadata documents, from a third php -S; a second host API allows http on loopback
DOCS="$TMP/docs"
mkdir -p "$DOCS"
serve "$TMP/docs.log" -- -t "$DOCS"
DOCS_URL="http://127.0.0.1:$SERVED_PORT"
doc() { # FILE CLIENT_ID [EXTRA JSON MEMBERS]
    printf '{"client_id":"%s","client_name":"Doc Client","redirect_uris":["http://127.0.0.1/callback"]%s}\n' "$2" "${3-}" >"$DOCS/$1"
}
doc good.json "$DOCS_URL/good.json"
doc big.json "$DOCS_URL/big.json" ",\"padding\":\"$(head -c 17000 /dev/zero | tr '\0' 'x')\""
doc other.json "$DOCS_URL/someone-else.json"
printf '<?php sleep(8); header("Content-Type: application/json"); echo "{}";\n' >"$DOCS/slow.php"
printf '<?php header("Location: /good.json", true, 302);\n' >"$DOCS/moved.php"
RESOURCES="https://relay.example.org/mcp https://relay2.example.org/mcp"
serve "$TMP/server2.log" HOSTAPI_OAUTH_HTTP_LOOPBACK=1 "HOSTAPI_RESOURCES=$RESOURCES" HOSTAPI_ISSUER=https://app.example.org/ \
    HOSTAPI_ACCESS_TOKEN_SECONDS=120 -- -t "$HOSTAPI/public" "$HOSTAPI/serve.php"
LOOP="http://127.0.0.1:$SERVED_PORT"
"$CLI" user:add erin 'erin-pw' 2>/dev/null
E="$TMP/erin.jar"
req POST login '{"username":"erin","password":"erin-pw"}' -c "$E" >/dev/null
CB=http://127.0.0.1:40001/callback
pkce
check "a metadata document over http without the loopback flag: 400 page" 400 "$(oreq GET "$(authz "$ORIGIN" "$DOCS_URL/good.json" "$CB")" -b "$E")"
check_match "... saying https" 'must be served over https' "$(body)"
# Addresses that are not public, in every spelling; port 9 has no listener, and none is connected to.
PRIVATE_MSG='client metadata document is on a private address'
check "a document at https://[::ffff:7f00:1]:9 (127.0.0.1, IPv4-mapped in hex): 400 page" 400 "$(oreq GET "$(authz "$ORIGIN" "https://[::ffff:7f00:1]:9/x" "$CB")" -b "$E")"
check_match "... on a private address" "$PRIVATE_MSG" "$(body)"
check "a document at https://[::ffff:a9fe:a9fe] (169.254.169.254, the cloud metadata address): 400 page" 400 "$(oreq GET "$(authz "$ORIGIN" "https://[::ffff:a9fe:a9fe]/x" "$CB")" -b "$E")"
check_match "... on a private address" "$PRIVATE_MSG" "$(body)"
check "a document at https://100.64.0.1 (shared address space): 400 page" 400 "$(oreq GET "$(authz "$ORIGIN" "https://100.64.0.1/x" "$CB")" -b "$E")"
check_match "... on a private address" "$PRIVATE_MSG" "$(body)"
refused=
waited=
for host in '[::ffff:0:7f00:1]' '[::7f00:1]' '[64:ff9b::a9fe:a9fe]' '[2002:a00:1::1]' '[fec0::1]' '[fd00::1]' '[ff02::1]' '[2001:db8::1]' \
    '[2001::1]' '[::]' 198.18.0.1 192.0.0.8 0.0.0.0 240.0.0.1 224.0.0.1 10.1.2.3; do
    started=$(date +%s%N)
    oreq GET "$(authz "$ORIGIN" "https://$host:9/x" "$CB")" -b "$E" >/dev/null
    grep -q "$PRIVATE_MSG" "$TMP/body" || refused+="$host "
    # A connection attempt to these would wait out the 5 s connect bound; a refusal made on
    # the address alone takes milliseconds, however busy the machine (each request is judged
    # on its own, so a slow machine does not add sixteen requests' worth of delay up).
    (( ($(date +%s%N) - started) / 1000000 >= 4500 )) && waited+="$host "
done
check "mapped, compatible, NAT64, 6to4, site-local, ULA, multicast, documentation, Teredo; 198.18/15, 192.0.0/24, 0/8, 240/4, 224/4: all private" "" "$refused"
check "... each refused without a connection attempt (none waited for the 5 s connect bound)" "" "$waited"
check "addressKind, by inet_pton: every form judged as the address it reaches" \
    "private private private private private private private private private private private private private loopback loopback loopback public public public public public" \
    "$(php -r 'require $argv[1]; foreach (array_slice($argv, 2) as $a) { echo HostApi\ClientMetadata::addressKind($a), " "; }' -- "$HOSTAPI/src/bootstrap.php" \
        ::ffff:7f00:1 ::FFFF:127.0.0.1 ::ffff:0:a00:1 ::a9fe:a9fe 64:ff9b::7f00:1 2002:c0a8:101:: 3fff::1 fe80::1%eth0 \
        169.254.169.254 172.31.255.255 192.168.0.1 255.255.255.255 not-an-ip 127.0.0.1 127.9.9.9 0:0:0:0:0:0:0:1 \
        8.8.8.8 ::ffff:808:808 64:ff9b::808:808 2002:808:808::1 2606:4700:4700::1111 | sed 's/ $//')"
check "with the flag: HOSTAPI_ISSUER is the issuer (its trailing / dropped)" "200 https://app.example.org" \
    "$(oreq GET "$LOOP/.well-known/oauth-authorization-server") $(json issuer)"
check "... and, the issuer being configured, the metadata is cacheable for 5 minutes" "public,max-age=300" "$(header cache-control)"
check "with the flag, loopback in another form is still private: https://[::ffff:7f00:1]:9" 400 \
    "$(oreq GET "$(authz "$LOOP" "https://[::ffff:7f00:1]:9/flag" "$CB")" -b "$E")"
check_match "... on a private address" "$PRIVATE_MSG" "$(body)"
check "a good metadata document: the consent screen" 200 "$(oreq GET "$(authz "$LOOP" "$DOCS_URL/good.json" "$CB")" -b "$E")"
check_match "... with the document's name (in <bdi>) and its host" 'id="client-name"><bdi>Doc Client</bdi> \(127\.0\.0\.1\)<' "$(body)"
check "... the document is cached, by the SHA-256 of its URL" yes \
    "$([ -f "$HOSTAPI_DATA/oauth-metadata/$(sha "$DOCS_URL/good.json").json" ] && echo yes)"
check "a redirect URI the document does not list: 400 page" 400 "$(oreq GET "$(authz "$LOOP" "$DOCS_URL/good.json" https://evil.example/cb)" -b "$E")"
sign_in "$LOOP" "$E" "$DOCS_URL/good.json" "$CB"
check "sign in with the document's client: an access token for HOSTAPI_ACCESS_TOKEN_SECONDS" "fwa_ 120" "${ACCESS:0:4} $(json expires_in)"
check "... whose resource is the first of HOSTAPI_RESOURCES" "200 erin https://relay.example.org/mcp" "$(vfy "$ACCESS") $(json user) $(json resource)"
req GET agent-tokens '' -b "$E" >/dev/null
check "... listed in agent-tokens with the client's name and the host of its document" "Doc Client 127.0.0.1" \
    "$(php -r '$t = json_decode(file_get_contents($argv[1]), true)[0]; echo $t["client"], " ", $t["clientHost"];' "$TMP/body")"
consent "$LOOP" "$E" allow "$DOCS_URL/good.json" "$CB" >/dev/null
check "... and the redirect carries iss = HOSTAPI_ISSUER" https://app.example.org "$(qparam "$(json redirect)" iss)"
check "a configured second resource: allowed" "200 yes" \
    "$(consent "$LOOP" "$E" allow "$DOCS_URL/good.json" "$CB" resource=https://relay2.example.org/mcp) $([ -n "$(qparam "$(json redirect)" code)" ] && echo yes)"
check "a resource not in HOSTAPI_RESOURCES: invalid_target" "200 invalid_target" \
    "$(consent "$LOOP" "$E" allow "$DOCS_URL/good.json" "$CB" resource=https://relay.example.org/other) $(qparam "$(json redirect)" error)"
TE2=$("$CLI" token:mint erin)
SECRETS+=("$TE2")
check "a dialog token's resource: the first of HOSTAPI_RESOURCES" "200 https://relay.example.org/mcp" \
    "$(oreq POST "$LOOP/api/index.php?r=agent/verify" -H @"$TMP/key.header" -H 'Content-Type: application/json' \
        --data-binary "{\"token\":\"$TE2\",\"address\":\"198.19.0.1\"}") $(json resource)"
check "a document over 16 KiB: 400 page" 400 "$(oreq GET "$(authz "$LOOP" "$DOCS_URL/big.json" "$CB")" -b "$E")"
check_match "... saying so" 'larger than 16 KiB' "$(body)"
check "a document whose client_id is another URL: 400 page" 400 "$(oreq GET "$(authz "$LOOP" "$DOCS_URL/other.json" "$CB")" -b "$E")"
check_match "... saying so" 'names another client_id' "$(body)"
check "a document URL that redirects: 400 page" 400 "$(oreq GET "$(authz "$LOOP" "$DOCS_URL/moved.php" "$CB")" -b "$E")"
check_match "... saying redirects are not followed" 'redirects are not followed' "$(body)"
check "a missing document: 400 page" 400 "$(oreq GET "$(authz "$LOOP" "$DOCS_URL/none.json" "$CB")" -b "$E")"
doc none.json "$DOCS_URL/none.json"
check "... remembered for a minute: refused again although it is there now" 400 "$(oreq GET "$(authz "$LOOP" "$DOCS_URL/none.json" "$CB")" -b "$E")"
check_match "... with the same message" 'could not be fetched \(HTTP 404\)' "$(body)"
check "... kept as oauth-metadata-failed/<sha256 of URL>.json" yes "$([ -f "$HOSTAPI_DATA/oauth-metadata-failed/$(sha "$DOCS_URL/none.json").json" ] && echo yes)"
past oauth-metadata-failed "$(sha "$DOCS_URL/none.json")" expiresAt
check "... and fetched again after the minute: the consent screen" 200 "$(oreq GET "$(authz "$LOOP" "$DOCS_URL/none.json" "$CB")" -b "$E")"
printf '{"client_id":"%s","client_name":"Good \\u202e\\u2066evil","redirect_uris":["%s"]}\n' "$DOCS_URL/bidi.json" "$CB" >"$DOCS/bidi.json"
check "a document whose client_name has bidi controls: the consent screen" 200 "$(oreq GET "$(authz "$LOOP" "$DOCS_URL/bidi.json" "$CB")" -b "$E")"
check_match "... shows the host alone, as for a document without a name" 'id="client-name"><bdi>127\.0\.0\.1</bdi><' "$(body)"
started=$(date +%s)
check "a document that takes 8 seconds: 400 page (our own wait is bounded at 15 s)" 400 \
    "$(oreq GET "$(authz "$LOOP" "$DOCS_URL/slow.php" "$CB")" -b "$E" --max-time 15)"
took=$(($(date +%s) - started))
check_match "... the server gave up by itself, after about 5 seconds" '^[4-7]$' "$took"
check_match "... saying so" 'longer than 5 seconds' "$(body)"
started=$(date +%s)
check "the slow document again within the minute: 400 page" 400 "$(oreq GET "$(authz "$LOOP" "$DOCS_URL/slow.php" "$CB")" -b "$E" --max-time 15)"
check "... at once (no worker held 5 s), with the same message" "yes yes" \
    "$([ $(($(date +%s) - started)) -le 1 ] && echo yes) $(grep -q 'longer than 5 seconds' "$TMP/body" && echo yes)"
RATE_FETCH="$HOSTAPI_DATA/rate/$(sha 'metadata 127.0.0.1').json" # the limit's record for this address
rm -f "$RATE_FETCH"
statuses=
for i in $(seq 1 31); do
    oreq GET "$(authz "$LOOP" "$DOCS_URL/missing-$i.json" "$CB")" -b "$E" >/dev/null
    statuses+="$(grep -q 'Too many client metadata documents' "$TMP/body" && echo limited || echo fetched) "
done
check "31 documents fetched for one address: 30 are (404 each), the 31st is refused" "$(printf 'fetched %.0s' $(seq 30))limited " "$statuses"
check_match "... on the page (400), saying when to try again" 'try again in [0-9]+ minutes' "$(body)"
check "... while a cached document still works" 200 "$(oreq GET "$(authz "$LOOP" "$DOCS_URL/good.json" "$CB")" -b "$E")"
rm -f "$RATE_FETCH"
check "the lock files of families are those of live families" \
    "$(ls "$HOSTAPI_DATA/oauth-families" | sed 's/\.json$//' | sort | tr '\n' ' ')" \
    "$(ls "$HOSTAPI_DATA/locks" | grep '^family-' | sed 's/^family-//; s/\.lock$//' | sort | tr '\n' ' ')"

# ---- nothing secret on disk or in the log --------------------------------------------------------------
leaks=0
for secret in "$T1" "$T2" "$T3" "$TC" "$TN" "$TK" "$TB" "$KEY" "${SECRETS[@]}"; do
    [ -n "$secret" ] || continue
    grep -rqF -- "$secret" "$HOSTAPI_DATA" "$TMP/server.log" "$TMP/server2.log" && leaks=$((leaks + 1))
done
check "no token, refresh token, code, ticket or key in the data records or the server logs" 0 "$leaks"
check "the OAuth checks saw secrets to look for" yes "$([ "${#SECRETS[@]}" -gt 20 ] && echo yes)"
check "no PHP warnings or errors in the server logs" 0 "$(cat "$TMP/server.log" "$TMP/server2.log" | grep -ciE 'php (warning|notice|fatal|deprecated)|hostapi:')"
cat "$TMP/server.log" "$TMP/server2.log" | grep -iE 'php (warning|notice|fatal|deprecated)|hostapi:' | head -5

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
