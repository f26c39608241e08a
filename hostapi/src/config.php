<?php
declare(strict_types=1);

namespace HostApi;

/**
 * Configuration from the environment, read the same way by the server and the CLI.
 *
 *   HOSTAPI_DATA            data folder (default: <hostapi>/data)
 *   HOSTAPI_RELAY_KEY_FILE  file holding the relay key (default: <data>/relay.key)
 *   HOSTAPI_RELAY_URLS      the relay's WebSocket URLs the editor page may use, separated by
 *                           spaces or commas, the first the default (else the file
 *                           <data>/relay-urls, one per line; else none: the page uses
 *                           ws(s)://<its own host>:8080/mcp)
 *
 * The OAuth authorization server (oauth_server.php):
 *   HOSTAPI_ISSUER          its issuer URL, http(s)://HOST[:PORT] (default: the scheme of the
 *                           request, as Request tells TLS, and its Host header)
 *   HOSTAPI_RESOURCES       the relays' public MCP URLs tokens may be issued for, spaces or
 *                           commas between, the first the resource of dialog tokens (else the
 *                           file <data>/resources, one per line; else none: sign-in is off,
 *                           and dialog tokens name no resource)
 *   HOSTAPI_ACCESS_TOKEN_SECONDS  lifetime of the access tokens the flow issues (3600)
 *   HOSTAPI_OAUTH_HTTP_LOOPBACK=1 client ID metadata documents may be http on loopback (tests)
 *
 * A relative path is taken relative to the hostapi folder, not to the current
 * directory: `php -S` changes into the script's folder before running it, so the
 * current directory of the server is not the one it was started from.
 */
final class Config
{
    /** A host name or IP address (IPv6 in brackets) and an optional port. */
    private const HOST = '([A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?';

    public static function hostapiDir(): string
    {
        return dirname(__DIR__);
    }

    public static function dataDir(): string
    {
        $dir = getenv('HOSTAPI_DATA');
        if ($dir === false || trim($dir) === '') {
            return self::hostapiDir() . '/data';
        }
        return self::absolute(trim($dir));
    }

    public static function relayKeyFile(): string
    {
        $file = getenv('HOSTAPI_RELAY_KEY_FILE');
        if ($file === false || trim($file) === '') {
            return self::dataDir() . '/relay.key';
        }
        return self::absolute(trim($file));
    }

    /** The relay key, or null when there is none (then the relay routes do not exist). */
    public static function relayKey(): ?string
    {
        $file = self::relayKeyFile();
        if (!is_file($file) || !is_readable($file)) {
            return null;
        }
        $key = @file_get_contents($file);
        if ($key === false) {
            return null;
        }
        $key = trim($key);
        return $key === '' ? null : $key;
    }

    /**
     * The relay URLs the editor page may connect to and show in its `claude mcp add` line:
     * the page takes a `?relay=` link only when it names one of them, so that a link made
     * by a stranger cannot send the person's ticket and token elsewhere.
     *
     * @return list<string>
     */
    public static function relayUrls(): array
    {
        return self::urlList('HOSTAPI_RELAY_URLS', 'relay-urls', 'wss?');
    }

    /**
     * URLs from the environment variable $env (spaces or commas between), else from the file
     * <data>/$file (one per line); only those of the schemes $schemes (a regex) with a host,
     * no credentials, query or fragment; each once.
     *
     * @return list<string>
     */
    public static function urlList(string $env, string $file, string $schemes): array
    {
        $raw = getenv($env);
        if ($raw === false || trim($raw) === '') {
            $path = self::dataDir() . '/' . $file;
            $raw = is_file($path) ? (string) @file_get_contents($path) : '';
        }
        $urls = [];
        foreach (preg_split('/[\s,]+/', trim($raw)) ?: [] as $url) {
            if (preg_match('~^' . $schemes . '://[^\s/?#@]+(/[^\s?#]*)?$~D', $url)) {
                $urls[] = $url;
            }
        }
        return array_values(array_unique($urls));
    }

    /**
     * The issuer (RFC 8414): HOSTAPI_ISSUER, else the origin the request was sent to. Without
     * a path, because the endpoints are <issuer>/oauth/... and the metadata is at
     * /.well-known/oauth-authorization-server of the host.
     */
    public static function issuer(Request $request): string
    {
        $issuer = getenv('HOSTAPI_ISSUER');
        if ($issuer !== false && trim($issuer) !== '') {
            $issuer = rtrim(trim($issuer), '/');
            if (!preg_match('~^https?://' . self::HOST . '$~D', $issuer)) {
                throw new \RuntimeException('HOSTAPI_ISSUER must be http(s)://HOST[:PORT], without a path');
            }
            return $issuer;
        }
        if (!preg_match('~^' . self::HOST . '$~D', $request->host)) {
            throw new HttpError(400, 'a Host header is required');
        }
        return ($request->overTls ? 'https://' : 'http://') . strtolower($request->host);
    }

    /** Whether HOSTAPI_ISSUER is set (else the issuer comes from the request's headers). */
    public static function issuerConfigured(): bool
    {
        $issuer = getenv('HOSTAPI_ISSUER');
        return $issuer !== false && trim($issuer) !== '';
    }

    /** @return list<string> the resources (RFC 8707) tokens may be issued for; none: no sign-in */
    public static function resources(): array
    {
        return self::urlList('HOSTAPI_RESOURCES', 'resources', 'https?');
    }

    public static function accessTokenSeconds(): int
    {
        $raw = getenv('HOSTAPI_ACCESS_TOKEN_SECONDS');
        if ($raw === false || trim($raw) === '') {
            return 3600;
        }
        if (!preg_match('/^[0-9]{1,6}$/D', trim($raw)) || (int) $raw < 1 || (int) $raw > 86400) {
            throw new \RuntimeException('HOSTAPI_ACCESS_TOKEN_SECONDS must be a whole number from 1 to 86400');
        }
        return (int) $raw;
    }

    /** Whether client ID metadata documents may be fetched over http from loopback (tests only). */
    public static function oauthHttpLoopback(): bool
    {
        return getenv('HOSTAPI_OAUTH_HTTP_LOOPBACK') === '1';
    }

    private static function absolute(string $path): string
    {
        if (str_starts_with($path, '/')) {
            return rtrim($path, '/') === '' ? '/' : rtrim($path, '/');
        }
        return self::hostapiDir() . '/' . rtrim($path, '/');
    }
}
