<?php
declare(strict_types=1);

namespace HostApi;

/**
 * The OAuth clients: those named by a client ID metadata document (ClientMetadata), and those
 * registered dynamically (RFC 7591), kept as oauth-clients/<client_id>.json = {id, name,
 * redirectUris, createdAt, usedAt}. All are public clients (PKCE, no secret).
 *
 * Registration is open to anyone, so it is bounded: at most MAX_CLIENTS registrations in all,
 * a registration never used for a token is forgotten after a day, and one unused for longer
 * than a refresh token lives (TokenFamilies::REFRESH_SECONDS) after that.
 */
final class OAuthClients
{
    public const MAX_CLIENTS = 10000;
    public const MAX_REDIRECT_URIS = 10;
    public const MAX_NAME = 100;
    public const UNUSED_SECONDS = 86400;

    public function __construct(private readonly Store $store, private readonly ClientMetadata $metadata)
    {
    }

    /**
     * The client named $clientId: {id, name, kind ("metadata" or "registered"), host (of a
     * metadata document), redirectUris}; invalid_client when there is none. $address is the
     * person's, on whose behalf a metadata document may be fetched.
     *
     * @return array<string,mixed>
     */
    public function find(string $clientId, string $address): array
    {
        if (ClientMetadata::isUrl($clientId)) {
            return $this->metadata->client($clientId, $address);
        }
        $record = preg_match('/^dyn_[0-9a-f]{32}$/D', $clientId) ? $this->store->read('oauth-clients', $clientId) : null;
        if ($record === null) {
            throw new OAuthError('invalid_client', 'unknown client_id: the client must register again, or name a client ID metadata document');
        }
        return [
            'id' => $clientId,
            // (a name registered before format characters were refused counts as none)
            'name' => is_string($record['name'] ?? null) && self::goodName($record['name'])
                ? $record['name'] : 'Unnamed client',
            'kind' => 'registered',
            'redirectUris' => (array) ($record['redirectUris'] ?? []),
        ];
    }

    /**
     * RFC 7591 §3: registers a public client. Returns the registration answer.
     *
     * @param array<string,mixed> $meta the request body
     * @return array<string,mixed>
     */
    public function register(array $meta): array
    {
        $uris = $meta['redirect_uris'] ?? null;
        if (!is_array($uris) || !array_is_list($uris) || $uris === [] || count($uris) > self::MAX_REDIRECT_URIS) {
            throw new OAuthError('invalid_redirect_uri', 'redirect_uris must be a list of 1 to ' . self::MAX_REDIRECT_URIS . ' URIs');
        }
        foreach ($uris as $uri) {
            $problem = is_string($uri) ? RedirectUris::problem($uri) : 'a redirect URI is a string';
            if ($problem !== null) {
                throw new OAuthError('invalid_redirect_uri', $problem);
            }
        }
        $name = $meta['client_name'] ?? null;
        if ($name !== null && (!is_string($name) || !self::goodName($name))) {
            throw new OAuthError('invalid_client_metadata', 'client_name must be 1 to '
                . self::MAX_NAME . ' characters, without control or format characters'
                . ' (such as bidi overrides)');
        }
        $method = $meta['token_endpoint_auth_method'] ?? 'none';
        if ($method !== 'none') {
            throw new OAuthError('invalid_client_metadata', 'only public clients are registered: token_endpoint_auth_method must be "none"');
        }
        self::checkSubset($meta, 'grant_types', ['authorization_code', 'refresh_token']);
        self::checkSubset($meta, 'response_types', ['code']);

        return $this->store->withLock('oauth-register', function () use ($uris, $name): array {
            $this->purgeStale();
            if (count(glob($this->store->dir('oauth-clients') . '/*.json') ?: []) >= self::MAX_CLIENTS) {
                throw new OAuthError('temporarily_unavailable', 'too many registered clients; try again tomorrow', 503);
            }
            $id = 'dyn_' . bin2hex(random_bytes(16));
            $now = time();
            $this->store->write('oauth-clients', $id, [
                'id' => $id,
                'name' => $name,
                'redirectUris' => $uris,
                'createdAt' => $now,
                'usedAt' => null,
            ]);
            // RFC 7591 §3.2.1: the metadata as registered, which may differ from what was
            // asked: every client may refresh, whatever grant_types it named.
            return array_filter([
                'client_id' => $id,
                'client_id_issued_at' => $now,
                'client_name' => $name,
                'redirect_uris' => $uris,
                'grant_types' => ['authorization_code', 'refresh_token'],
                'response_types' => ['code'],
                'token_endpoint_auth_method' => 'none',
            ], fn(mixed $v): bool => $v !== null);
        });
    }

    /**
     * Whether $name may be shown as a client's name on the consent screen: 1 to MAX_NAME
     * characters, none of them a control character (\p{Cc}) or a format character (\p{Cf}:
     * bidi overrides and isolates, zero-width ones), which could make a name read as another
     * or hide what follows it.
     */
    public static function goodName(string $name): bool
    {
        return (bool) preg_match('/^[^\p{Cc}\p{Cf}]{1,' . self::MAX_NAME . '}$/uD', $name);
    }

    /** Notes that a registered client got a token (so that its registration is kept). */
    public function markUsed(string $clientId): void
    {
        if (preg_match('/^dyn_[0-9a-f]{32}$/D', $clientId)) {
            $this->store->update('oauth-clients', $clientId, function (array $r): array {
                $r['usedAt'] = time();
                return $r;
            });
        }
    }

    /** @param array<string,mixed> $meta */
    private static function checkSubset(array $meta, string $field, array $allowed): void
    {
        $values = $meta[$field] ?? [];
        if (!is_array($values) || !array_is_list($values) || array_diff(array_filter($values, 'is_string'), $allowed) !== []
            || count(array_filter($values, 'is_string')) !== count($values)) {
            throw new OAuthError('invalid_client_metadata', "$field may hold only " . implode(', ', $allowed));
        }
    }

    /**
     * At most once an hour: forgets registrations never used after a day, and used ones idle
     * for longer than any of their refresh tokens could live.
     */
    private function purgeStale(): void
    {
        if (!$this->store->due('purge-oauth-clients', 3600)) {
            return;
        }
        $now = time();
        foreach ($this->store->all('oauth-clients') as $id => $record) {
            $usedAt = $record['usedAt'] ?? null;
            $stale = $usedAt === null
                ? (int) ($record['createdAt'] ?? 0) <= $now - self::UNUSED_SECONDS
                : (int) $usedAt <= $now - TokenFamilies::REFRESH_SECONDS - 86400;
            if ($stale) {
                $this->store->delete('oauth-clients', $id);
            }
        }
    }
}
