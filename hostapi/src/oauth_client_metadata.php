<?php
declare(strict_types=1);

namespace HostApi;

/**
 * Clients named by a client ID metadata document (draft-ietf-oauth-client-id-metadata-document):
 * the client_id is an https URL, and the JSON document there says the client's name and
 * redirect URIs. The document is fetched by this server on a person's request, from a URL
 * anyone can choose, so the fetch is bounded in every way: 5 seconds in all (resolving the
 * name aside: PHP cannot bound that), 16 KiB, no redirects, https only (http on loopback
 * only with HOSTAPI_OAUTH_HTTP_LOOPBACK=1), and never to a private or loopback address
 * otherwise, so that a client_id cannot make this server reach inside its own network.
 *
 * Cached as oauth-metadata/<sha256 of URL>.json = {url, client, expiresAt} for 10 minutes;
 * failures are not cached.
 */
final class ClientMetadata
{
    public const MAX_BYTES = 16384;
    public const MAX_HEADER_BYTES = 8192;
    public const TIMEOUT = 5.0;
    public const CACHE_SECONDS = 600;
    public const MAX_REDIRECT_URIS = 20;
    public const MAX_NAME = 100;

    public function __construct(private readonly Store $store)
    {
    }

    /** Whether $clientId names a metadata document rather than a registered client. */
    public static function isUrl(string $clientId): bool
    {
        return (bool) preg_match('~^https?://~i', $clientId);
    }

    /**
     * The client of the document at $url: {id, name, host, kind, redirectUris}. Fails with
     * invalid_client, with a message for the person's page.
     *
     * @return array<string,mixed>
     */
    public function client(string $url): array
    {
        self::checkUrl($url);
        $name = hash('sha256', $url);
        $cached = $this->store->read('oauth-metadata', $name);
        if ($cached !== null && ($cached['url'] ?? null) === $url && (int) ($cached['expiresAt'] ?? 0) > time()) {
            return (array) $cached['client'];
        }
        $this->purgeExpired();
        $client = self::fromDocument($url, $this->fetch($url));
        $this->store->write('oauth-metadata', $name, ['url' => $url, 'client' => $client, 'expiresAt' => time() + self::CACHE_SECONDS]);
        return $client;
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
        $name = $doc['client_name'] ?? null;
        if (!is_string($name) || !preg_match('/^[^\p{Cc}]{1,' . self::MAX_NAME . '}$/uD', $name)) {
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
            $v4 = preg_match('/^::ffff:([0-9.]+)$/i', $address, $m) ? $m[1] : $address;
            $public = filter_var($v4, FILTER_VALIDATE_IP, FILTER_FLAG_NO_PRIV_RANGE | FILTER_FLAG_NO_RES_RANGE) !== false;
            $loopback = str_starts_with($v4, '127.') || $v4 === '::1';
            if (!$public && !($loopback && Config::oauthHttpLoopback())) {
                throw self::refused('the client metadata document is on a private address; this server does not fetch from there');
            }
        }
        return $addresses[0];
    }

    private static function refused(string $why): OAuthError
    {
        return new OAuthError('invalid_client', $why);
    }

    /** At most every 5 minutes: drops cached documents past their 10 minutes. */
    private function purgeExpired(): void
    {
        if (!$this->store->due('purge-oauth-metadata', 300)) {
            return;
        }
        $now = time();
        foreach ($this->store->all('oauth-metadata') as $name => $record) {
            if ((int) ($record['expiresAt'] ?? 0) <= $now) {
                $this->store->delete('oauth-metadata', $name);
            }
        }
    }
}
