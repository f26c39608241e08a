<?php
declare(strict_types=1);

namespace HostApi;

/**
 * Redirect URIs: which a client may register (RFC 8252 for native apps: https, loopback http,
 * or a private-use scheme), how a requested one is matched against the registered ones
 * (exactly; for loopback http any port, RFC 8252 §7.3), and how parameters are added.
 */
final class RedirectUris
{
    public const MAX_LENGTH = 2000;

    /** Why $uri cannot be registered, or null when it can. */
    public static function problem(string $uri): ?string
    {
        if (strlen($uri) > self::MAX_LENGTH) {
            return 'a redirect URI is at most ' . self::MAX_LENGTH . ' characters';
        }
        if (preg_match('/[\x00-\x20\x7f]/', $uri) || !preg_match('//u', $uri)) {
            return 'a redirect URI holds no spaces or control characters';
        }
        if (str_contains($uri, '#')) {
            return 'a redirect URI has no fragment';
        }
        if (!preg_match('~^([A-Za-z][A-Za-z0-9+.-]*):(.+)$~D', $uri, $m)) {
            return 'a redirect URI is an absolute URI';
        }
        $scheme = strtolower($m[1]);
        if ($scheme === 'https') {
            return is_string(parse_url($uri, PHP_URL_HOST)) && !self::hasUserInfo($uri)
                ? null : 'an https redirect URI needs a host and no user name';
        }
        if ($scheme === 'http') {
            return self::loopbackKey($uri) !== null
                ? null : 'an http redirect URI must be on loopback (127.0.0.1, [::1] or localhost; RFC 8252)';
        }
        // RFC 8252 §7.1: a private-use scheme is a reversed domain name of the app's own, such
        // as com.example.app:/cb; never one of the schemes a browser gives meaning to.
        if (!str_contains($scheme, '.') || in_array($scheme, ['javascript', 'data', 'file', 'blob', 'about', 'vbscript'], true)) {
            return 'a redirect URI is https, loopback http, or a private-use scheme such as com.example.app:/callback';
        }
        return null;
    }

    /**
     * Whether $requested is one of $registered: the same string, or for a loopback http
     * redirect the same string but for the port (RFC 8252 §7.3: the app picks a free port
     * at run time).
     *
     * @param list<string> $registered
     */
    public static function matches(string $requested, array $registered): bool
    {
        if (in_array($requested, $registered, true)) {
            return true;
        }
        $key = self::loopbackKey($requested);
        if ($key === null) {
            return false;
        }
        foreach ($registered as $uri) {
            if (self::loopbackKey($uri) === $key) {
                return true;
            }
        }
        return false;
    }

    /**
     * $uri with the parameters added to its query (after "&" when it has one already).
     *
     * @param array<string,?string> $params null values are left out
     */
    public static function with(string $uri, array $params): string
    {
        $query = http_build_query(array_filter($params, fn(?string $v): bool => $v !== null), '', '&', PHP_QUERY_RFC3986);
        return $uri . (str_contains($uri, '?') ? '&' : '?') . $query;
    }

    /** A loopback http URI without its port (the part RFC 8252 compares), else null. */
    private static function loopbackKey(string $uri): ?string
    {
        if (!preg_match('~^http://(127\.0\.0\.1|\[::1\]|localhost)(:[0-9]{1,5})?([/?].*)?$~Ds', $uri, $m)) {
            return null;
        }
        return 'http://' . $m[1] . ($m[3] ?? '');
    }

    private static function hasUserInfo(string $uri): bool
    {
        return parse_url($uri, PHP_URL_USER) !== null;
    }
}
