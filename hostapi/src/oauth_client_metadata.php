<?php
declare(strict_types=1);

namespace HostApi;

/**
 * Clients named by a client ID metadata document (draft-ietf-oauth-client-id-metadata-document):
 * the client_id is an https URL, and the JSON document there says the client's name and
 * redirect URIs. The document is fetched by this server on a person's request, from a URL
 * anyone can choose, so the fetch is bounded in every way: 5 seconds in all (resolving the
 * name aside: PHP cannot bound that), 16 KiB, no redirects, https only (http on loopback
 * only with HOSTAPI_OAUTH_HTTP_LOOPBACK=1), and never to an address that is not public
 * unicast (loopback too with that flag), so that a client_id cannot make this server reach
 * inside its own network.
 *
 * Cached as oauth-metadata/<sha256 of URL>.json = {url, client, expiresAt} for 10 minutes.
 * A failure is remembered for a minute as oauth-metadata-failed/<sha256 of URL>.json = {url,
 * error, expiresAt} and answered from there at once, so that a URL that is slow to fail cannot
 * hold the server's few workers request after request. And at most RATE_MAX fetches per
 * address in RATE_WINDOW seconds (Brake::rate): a cached document or failure does not count.
 */
final class ClientMetadata
{
    public const MAX_BYTES = 16384;
    public const MAX_HEADER_BYTES = 8192;
    public const TIMEOUT = 5.0;
    public const CACHE_SECONDS = 600;
    public const FAILURE_SECONDS = 60;
    public const MAX_FAILURES = 10000;
    public const MAX_REDIRECT_URIS = 20;
    public const MAX_NAME = 100;

    /**
     * IPv6 forms that carry an IPv4 address, and where it starts: such an address is as
     * public as the IPv4 address inside (a socket connects to the mapped and compatible ones
     * over IPv4; NAT64 and 6to4 gateways pass the others on to it).
     */
    private const V4_IN_V6 = [
        '::ffff:0:0/96' => 12,   // IPv4-mapped (RFC 4291)
        '::ffff:0:0:0/96' => 12, // IPv4-translated (RFC 2765)
        '::/96' => 12,           // IPv4-compatible, deprecated (:: and ::1 are in it too)
        '64:ff9b::/96' => 12,    // NAT64, well-known prefix (RFC 6052)
        '2002::/16' => 2,        // 6to4 (RFC 3056)
    ];

    /** IPv4 blocks that are not public unicast (RFC 6890 and the IANA registry), 127/8 aside. */
    private const NOT_PUBLIC_V4 = [
        '0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '169.254.0.0/16', '172.16.0.0/12',
        '192.0.0.0/24', '192.0.2.0/24', '192.88.99.0/24', '192.168.0.0/16', '198.18.0.0/15',
        '198.51.100.0/24', '203.0.113.0/24', '224.0.0.0/4', '240.0.0.0/4',
    ];

    /**
     * Blocks of global unicast (2000::/3) that are not public: IETF protocol assignments
     * (Teredo 2001::/32, whose IPv4 address is obfuscated, benchmarking, ORCHID), and the
     * documentation prefixes.
     */
    private const NOT_PUBLIC_V6 = ['2001::/23', '2001:db8::/32', '3fff::/20'];

    private readonly Brake $rate;

    public function __construct(private readonly Store $store)
    {
        $this->rate = Brake::rate($store);
    }

    /** Whether $clientId names a metadata document rather than a registered client. */
    public static function isUrl(string $clientId): bool
    {
        return (bool) preg_match('~^https?://~i', $clientId);
    }

    /**
     * The client of the document at $url: {id, name, host, kind, redirectUris}, fetched on
     * behalf of the person at $address. Fails with invalid_client, with a message for the
     * person's page.
     *
     * @return array<string,mixed>
     */
    public function client(string $url, string $address): array
    {
        self::checkUrl($url);
        $name = hash('sha256', $url);
        $cached = $this->store->read('oauth-metadata', $name);
        if ($cached !== null && ($cached['url'] ?? null) === $url
            && (int) ($cached['expiresAt'] ?? 0) > time()) {
            return (array) $cached['client'];
        }
        $failed = $this->store->read('oauth-metadata-failed', $name);
        if ($failed !== null && ($failed['url'] ?? null) === $url
            && (int) ($failed['expiresAt'] ?? 0) > time()) {
            throw self::refused((string) ($failed['error'] ?? 'the document failed'));
        }
        $key = 'metadata ' . Brake::normalise($address);
        $locked = $this->rate->lockedFor($key);
        if ($locked > 0) {
            throw self::refused('too many client metadata documents were fetched for your address;'
                . ' try again in ' . (int) ceil($locked / 60) . ' minutes');
        }
        $this->rate->fail($key); // every fetch counts, good or bad: each may hold a worker 5 s
        $this->purgeExpired();
        try {
            $client = self::fromDocument($url, $this->fetch($url));
        } catch (OAuthError $e) {
            $this->rememberFailure($name, $url, $e->getMessage());
            throw $e;
        }
        $this->store->write('oauth-metadata', $name, ['url' => $url, 'client' => $client, 'expiresAt' => time() + self::CACHE_SECONDS]);
        return $client;
    }

    /**
     * What $address is to the fetch: "public" (global unicast), "loopback" (127.0.0.0/8 and
     * ::1 as such, not in another form) or "private" (anything else, malformed included).
     * Parsed with inet_pton, so that every spelling of an address (hex, compressed, an IPv4
     * address inside an IPv6 one) is judged the same.
     */
    public static function addressKind(string $address): string
    {
        $bin = @inet_pton($address);
        if (!is_string($bin)) {
            return 'private';
        }
        if (strlen($bin) === 4) {
            if (self::within($bin, '127.0.0.0/8')) {
                return 'loopback';
            }
            foreach (self::NOT_PUBLIC_V4 as $block) {
                if (self::within($bin, $block)) {
                    return 'private';
                }
            }
            return 'public';
        }
        if ($bin === inet_pton('::1')) {
            return 'loopback';
        }
        foreach (self::V4_IN_V6 as $block => $at) {
            if (self::within($bin, $block)) {
                $v4 = (string) inet_ntop(substr($bin, $at, 4));
                return self::addressKind($v4) === 'public' ? 'public' : 'private';
            }
        }
        if (!self::within($bin, '2000::/3')) {
            return 'private'; // unique local, link-local, site-local, multicast, reserved
        }
        foreach (self::NOT_PUBLIC_V6 as $block) {
            if (self::within($bin, $block)) {
                return 'private';
            }
        }
        return 'public';
    }

    /** Whether the packed address $bin is in $block ("ADDRESS/BITS", of the same family). */
    private static function within(string $bin, string $block): bool
    {
        [$net, $bits] = explode('/', $block);
        $net = (string) inet_pton($net);
        if (strlen($net) !== strlen($bin)) {
            return false;
        }
        $bytes = intdiv((int) $bits, 8);
        if (substr($bin, 0, $bytes) !== substr($net, 0, $bytes)) {
            return false;
        }
        $rest = (int) $bits % 8;
        $mask = (0xff << (8 - $rest)) & 0xff;
        return $rest === 0 || (ord($bin[$bytes]) & $mask) === (ord($net[$bytes]) & $mask);
    }

    /** The draft's rules for the URL itself (§3), and ours for the scheme. */
    private static function checkUrl(string $url): void
    {
        $parts = strlen($url) <= 2000 ? parse_url($url) : false;
        if (!is_array($parts) || !isset($parts['scheme'], $parts['host']) || preg_match('/[\x00-\x20\x7f]/', $url)) {
            throw self::refused('the client_id is not a URL this server can fetch');
        }
        $scheme = $parts['scheme'];
        if ($scheme === 'http') {
            if (!Config::oauthHttpLoopback() || !in_array(strtolower($parts['host']), ['127.0.0.1', 'localhost', '[::1]'], true)) {
                throw self::refused('a client ID metadata document must be served over https');
            }
        } elseif ($scheme !== 'https') {
            throw self::refused('a client ID metadata document must be served over https');
        }
        if (isset($parts['user']) || isset($parts['pass']) || isset($parts['fragment'])) {
            throw self::refused('a client_id URL has no user name, password or fragment');
        }
        $path = $parts['path'] ?? '';
        if ($path === '' || $path === '/' || preg_match('~(^|/)\.\.?(/|$)~', $path)) {
            throw self::refused('a client_id URL has a path, without "." or ".." segments');
        }
    }

    /** @return array<string,mixed> */
    private static function fromDocument(string $url, string $body): array
    {
        try {
            $doc = json_decode($body, true, 8, JSON_THROW_ON_ERROR);
        } catch (\JsonException) {
            throw self::refused('the client metadata document is not JSON');
        }
        if (!is_array($doc) || array_is_list($doc)) {
            throw self::refused('the client metadata document is not a JSON object');
        }
        if (($doc['client_id'] ?? null) !== $url) {
            throw self::refused('the client metadata document names another client_id than its own URL');
        }
        if (isset($doc['client_secret']) || !in_array($doc['token_endpoint_auth_method'] ?? 'none', ['none'], true)) {
            throw self::refused('this server signs in public clients only (token_endpoint_auth_method "none")');
        }
        $uris = $doc['redirect_uris'] ?? null;
        if (!is_array($uris) || $uris === [] || !array_is_list($uris) || count($uris) > self::MAX_REDIRECT_URIS) {
            throw self::refused('the client metadata document needs redirect_uris: 1 to ' . self::MAX_REDIRECT_URIS . ' URIs');
        }
        foreach ($uris as $uri) {
            if (!is_string($uri) || RedirectUris::problem($uri) !== null) {
                throw self::refused('the client metadata document has a redirect URI this server does not accept');
            }
        }
        $host = strtolower((string) parse_url($url, PHP_URL_HOST));
        // A name that could mislead on the consent screen (control or format characters:
        // bidi overrides, zero-width ones) counts as none: the person then sees the host.
        $name = $doc['client_name'] ?? null;
        if (!is_string($name) || !OAuthClients::goodName($name)) {
            $name = $host;
        }
        return ['id' => $url, 'name' => $name, 'host' => $host, 'kind' => 'metadata', 'redirectUris' => $uris];
    }

    /**
     * GET $url over HTTP/1.0 (so the answer is never chunked), by hand: the http stream
     * wrapper bounds each read, not the whole, and would follow redirects.
     */
    private function fetch(string $url): string
    {
        $deadline = microtime(true) + self::TIMEOUT;
        $parts = (array) parse_url($url);
        $https = $parts['scheme'] === 'https';
        $host = trim((string) $parts['host'], '[]');
        $port = (int) ($parts['port'] ?? ($https ? 443 : 80));
        $address = self::address($host);
        $target = ($https ? 'ssl://' : 'tcp://') . (str_contains($address, ':') ? "[$address]" : $address) . ':' . $port;
        // Connected to the address that was checked (a second lookup could answer another),
        // while the certificate is checked against the name.
        $context = stream_context_create(['ssl' => [
            'peer_name' => $host,
            'verify_peer' => true,
            'verify_peer_name' => true,
            'SNI_enabled' => true,
        ]]);
        $socket = @stream_socket_client($target, $errno, $error, max(0.1, $deadline - microtime(true)), STREAM_CLIENT_CONNECT, $context);
        if ($socket === false) {
            throw self::refused(microtime(true) >= $deadline
                ? 'the client metadata document took longer than 5 seconds'
                : 'the client metadata document could not be fetched (no connection, or no valid TLS certificate)');
        }
        try {
            $path = ($parts['path'] ?? '/') . (isset($parts['query']) ? '?' . $parts['query'] : '');
            $hostHeader = $parts['host'] . (isset($parts['port']) ? ':' . $parts['port'] : '');
            self::withTimeout($socket, $deadline);
            @fwrite($socket, "GET $path HTTP/1.0\r\nHost: $hostHeader\r\nAccept: application/json\r\n"
                . "User-Agent: hostapi-oauth\r\nConnection: close\r\n\r\n");
            $raw = '';
            $limit = self::MAX_HEADER_BYTES + self::MAX_BYTES;
            while (!feof($socket)) {
                self::withTimeout($socket, $deadline);
                $chunk = @fread($socket, 8192);
                if (stream_get_meta_data($socket)['timed_out'] || microtime(true) >= $deadline) {
                    throw self::refused('the client metadata document took longer than 5 seconds');
                }
                if ($chunk === false) {
                    break;
                }
                $raw .= $chunk;
                $end = strpos($raw, "\r\n\r\n");
                if (($end === false && strlen($raw) > self::MAX_HEADER_BYTES)
                    || ($end !== false && strlen($raw) - $end - 4 > self::MAX_BYTES) || strlen($raw) > $limit) {
                    throw self::refused('the client metadata document is larger than 16 KiB');
                }
            }
        } finally {
            fclose($socket);
        }
        return self::body($raw);
    }

    /** The body of a 200 application/json answer. */
    private static function body(string $raw): string
    {
        $end = strpos($raw, "\r\n\r\n");
        if ($end === false || !preg_match('~^HTTP/1\.[01] ([0-9]{3})~', $raw, $m)) {
            throw self::refused('the client metadata document could not be fetched (no HTTP answer)');
        }
        $status = (int) $m[1];
        if ($status >= 300 && $status < 400) {
            throw self::refused('the client metadata document URL redirects; redirects are not followed');
        }
        if ($status !== 200) {
            throw self::refused("the client metadata document could not be fetched (HTTP $status)");
        }
        $head = substr($raw, 0, $end);
        if (!preg_match('~^content-type:\s*application/json\s*(;.*)?$~mi', $head)) {
            throw self::refused('the client metadata document is not served as application/json');
        }
        if (preg_match('~^transfer-encoding:~mi', $head)) {
            throw self::refused('the client metadata document came with a transfer encoding');
        }
        return substr($raw, $end + 4);
    }

    /** @param resource $socket */
    private static function withTimeout($socket, float $deadline): void
    {
        $left = max(0.001, $deadline - microtime(true));
        stream_set_timeout($socket, (int) $left, (int) (($left - (int) $left) * 1e6));
    }

    /**
     * The address to connect to: every address of the name must be public (loopback too with
     * HOSTAPI_OAUTH_HTTP_LOOPBACK=1), so that the document is never fetched from inside.
     */
    private static function address(string $host): string
    {
        if (filter_var($host, FILTER_VALIDATE_IP) !== false) {
            $addresses = [$host];
        } else {
            $addresses = gethostbynamel($host) ?: [];
            if ($addresses === []) {
                foreach (@dns_get_record($host, DNS_AAAA) ?: [] as $record) {
                    $addresses[] = (string) ($record['ipv6'] ?? '');
                }
            }
        }
        if ($addresses === []) {
            throw self::refused('the client metadata document could not be fetched (unknown host)');
        }
        foreach ($addresses as $address) {
            $kind = self::addressKind($address);
            if ($kind !== 'public' && !($kind === 'loopback' && Config::oauthHttpLoopback())) {
                throw self::refused('the client metadata document is on a private address; this server does not fetch from there');
            }
        }
        return (string) inet_ntop((string) inet_pton($addresses[0]));
    }

    private static function refused(string $why): OAuthError
    {
        return new OAuthError('invalid_client', $why);
    }

    /**
     * Remembers a failed fetch for FAILURE_SECONDS. At most MAX_FAILURES are kept, so that
     * made-up URLs cannot fill the disk; past that a failure is not remembered (the limit per
     * address still holds).
     */
    private function rememberFailure(string $name, string $url, string $why): void
    {
        $kept = glob($this->store->dir('oauth-metadata-failed') . '/*.json') ?: [];
        if (count($kept) >= self::MAX_FAILURES) {
            return;
        }
        $this->store->write('oauth-metadata-failed', $name, [
            'url' => $url,
            'error' => $why,
            'expiresAt' => time() + self::FAILURE_SECONDS,
        ]);
    }

    /** At most every 5 minutes: drops cached documents and failures past their time. */
    private function purgeExpired(): void
    {
        if (!$this->store->due('purge-oauth-metadata', 300)) {
            return;
        }
        $now = time();
        foreach (['oauth-metadata', 'oauth-metadata-failed'] as $kind) {
            foreach ($this->store->all($kind) as $name => $record) {
                if ((int) ($record['expiresAt'] ?? 0) <= $now) {
                    $this->store->delete($kind, $name);
                }
            }
        }
    }
}
