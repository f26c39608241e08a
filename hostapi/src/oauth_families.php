<?php
declare(strict_types=1);

namespace HostApi;

/**
 * Token families: one per sign-in of a client (one authorization code exchanged). A family
 * holds one live access token (an agent token, Tokens::mintForClient) and one live refresh
 * token, and ends as a whole: revoked by the person (agent-tokens) or the client (revocation
 * endpoint), when a refresh token is used twice, when its account changes, or 30 days after
 * its last refresh.
 *
 * A refresh token is `fwr_` + 32 hex digits that name the family (the "handle") + 32 random
 * hex digits, new at each refresh. The family is oauth-families/<sha256 of handle>.json =
 * {user, uid, generation, client {id, name}, resource, accessHash, refreshHash, createdAt,
 * refreshedAt, expiresAt}: the handle finds the family of any of its refresh tokens, old ones
 * included, so that reuse is recognised with one file per family, and neither the handle nor
 * a token is on disk in clear.
 *
 * Locks: a family's changes run under the lock family-<id>, which is taken before the
 * account's (user-<name>, inside Tokens), never after. It is taken only for a family that
 * exists (or is being started), so that made-up refresh tokens leave no lock files behind, and
 * its file is removed when the family ends: an ended family never comes back, so whoever
 * still waits for the old file finds no family, just like one who locks a new file.
 */
final class TokenFamilies
{
    public const REFRESH_SECONDS = 30 * 86400;

    public function __construct(private readonly Store $store, private readonly Users $users, private readonly Tokens $tokens)
    {
    }

    /**
     * Starts the family of $handle (newHandle()) for an exchanged authorization code: the
     * token answer (RFC 6749 §5.1). $reused tells whether the code was presented again since
     * it was taken: then the family ends as soon as it is written, and the answer is
     * invalid_grant (a second use may come before there is a family for it to end).
     *
     * @param array<string,mixed> $code
     * @param callable():bool $reused
     * @return array<string,mixed>
     */
    public function start(array $code, string $handle, callable $reused): array
    {
        $this->purgeEnded();
        $id = self::idOf($handle);
        $refresh = self::refreshToken($handle);
        $seconds = Config::accessTokenSeconds();
        // Under the family's lock from before its token exists: a person who revokes the new
        // token at once, or a second use of the code, ends the family after it is written.
        $start = function () use ($code, $id, $refresh, $seconds, $reused): array {
            $now = time();
            $expiresAt = $now + self::REFRESH_SECONDS;
            try {
                $issued = $this->mint($code, $id, $seconds, $expiresAt);
            } catch (\Throwable $e) {
                $this->dropLock($id);
                throw $e;
            }
            $this->store->write('oauth-families', $id, [
                'user' => $code['user'],
                'uid' => $code['uid'],
                'generation' => $code['generation'],
                'client' => $code['client'],
                'resource' => $code['resource'],
                'accessHash' => $issued[0],
                'refreshHash' => Tokens::hash($refresh),
                'createdAt' => $now,
                'refreshedAt' => $now,
                'expiresAt' => $expiresAt,
            ]);
            if ($reused()) {
                $this->endLocked($id);
                throw new OAuthError('invalid_grant', AuthorizationCodes::REUSED);
            }
            return self::answer($issued[1], $refresh, $seconds);
        };
        return $this->store->withLock('family-' . $id, $start);
    }

    /**
     * A refresh (RFC 6749 §6): rotates both tokens. A refresh token that is not the family's
     * latest ends the family (OAuth 2.1 §4.3.1: a used one is a sign that it was stolen).
     *
     * @return array<string,mixed> the token answer
     */
    public function refresh(string $token, string $clientId, ?string $resource): array
    {
        if (!preg_match('/^fwr_([0-9a-f]{32})[0-9a-f]{32}$/D', $token, $m)) {
            throw new OAuthError('invalid_grant', 'unknown, used or revoked refresh token');
        }
        $id = self::idOf($m[1]);
        if ($this->store->read('oauth-families', $id) === null) {
            throw new OAuthError('invalid_grant', 'unknown, used or revoked refresh token');
        }
        return $this->store->withLock('family-' . $id, function () use ($id, $token, $clientId, $resource): array {
            $family = $this->store->read('oauth-families', $id);
            if ($family === null) {
                $this->dropLock($id); // ended while this request waited
                throw new OAuthError('invalid_grant', 'unknown, used or revoked refresh token');
            }
            if (!hash_equals((string) $family['refreshHash'], Tokens::hash($token))) {
                $this->endLocked($id);
                throw new OAuthError('invalid_grant', 'this refresh token was used before; the sign-in has ended, sign in again');
            }
            if (($family['client']['id'] ?? null) !== $clientId) {
                throw new OAuthError('invalid_grant', 'the refresh token was issued to another client');
            }
            if ($resource !== null && $resource !== $family['resource']) {
                throw new OAuthError('invalid_target', 'the refresh token was issued for another resource');
            }
            // The family stays: HOSTAPI_RESOURCES may have been left out by mistake, and the
            // sign-in goes on once it names the resource again.
            if (!OAuthParams::served($family['resource'] ?? null)) {
                throw new OAuthError('invalid_target', OAuthParams::NOT_SERVED);
            }
            if ((int) $family['expiresAt'] <= time() || $this->users->current($family) === null) {
                $this->endLocked($id);
                throw new OAuthError('invalid_grant', 'the sign-in has ended (expired, or the account changed); sign in again');
            }
            $seconds = Config::accessTokenSeconds();
            $expiresAt = time() + self::REFRESH_SECONDS;
            $rotated = $this->tokens->rotate((string) $family['user'], (string) $family['accessHash'], $seconds, $expiresAt);
            if ($rotated === null) {
                $this->endLocked($id);
                throw new OAuthError('invalid_grant', 'the sign-in has ended; sign in again');
            }
            $refresh = self::refreshToken(substr($token, 4, 32));
            $family['accessHash'] = $rotated[0];
            $family['refreshHash'] = Tokens::hash($refresh);
            $family['refreshedAt'] = time();
            $family['expiresAt'] = $expiresAt;
            $this->store->write('oauth-families', $id, $family);
            return self::answer($rotated[1], $refresh, $seconds);
        });
    }

    /**
     * Ends the family: its access token (the relay is told) and its refresh token. $id comes
     * from a record of this server (a token's, a used code's), so the lock is taken whether or
     * not the family is written yet: one being started is ended once start() has written it.
     */
    public function end(string $id): bool
    {
        if (!preg_match('/^[0-9a-f]{64}$/D', $id)) {
            return false;
        }
        return $this->store->withLock('family-' . $id, fn(): bool => $this->endLocked($id));
    }

    /**
     * RFC 7009: ends the family of an access or (latest) refresh token issued to $clientId
     * (any client when null). Tokens of the dialog, unknown tokens and other clients' tokens
     * are left as they are: the caller answers 200 all the same.
     */
    public function revoke(string $token, ?string $clientId): void
    {
        if (Tokens::wellFormed($token)) {
            $record = $this->tokens->find(Tokens::hash($token));
            $family = $record['family'] ?? null;
            if (is_string($family) && ($clientId === null || ($record['client']['id'] ?? null) === $clientId)) {
                $this->end($family);
            }
            return;
        }
        if (!preg_match('/^fwr_([0-9a-f]{32})[0-9a-f]{32}$/D', $token, $m)) {
            return;
        }
        $id = self::idOf($m[1]);
        if ($this->store->read('oauth-families', $id) === null) {
            return;
        }
        $this->store->withLock('family-' . $id, function () use ($id, $token, $clientId): void {
            $family = $this->store->read('oauth-families', $id);
            if ($family === null || (hash_equals((string) $family['refreshHash'], Tokens::hash($token))
                && ($clientId === null || ($family['client']['id'] ?? null) === $clientId))) {
                $this->endLocked($id);
            }
        });
    }

    /**
     * @param array<string,mixed> $code
     * @return array{0:string, 1:string} [hash, token] of the new access token
     */
    private function mint(array $code, string $id, int $seconds, int $expiresAt): array
    {
        try {
            $issued = $this->tokens->mintForClient($code, (array) $code['client'], $code['resource'], $id, $seconds, $expiresAt);
        } catch (HttpError $e) {
            // RFC 6749 §5.2 has no access_denied: the grant cannot be used as it stands.
            if ($e->status === 409) {
                throw new OAuthError('invalid_grant', $e->getMessage());
            }
            throw $e;
        }
        return $issued ?? throw new OAuthError('invalid_grant', 'the account changed since the sign-in; sign in again');
    }

    private function endLocked(string $id): bool
    {
        $family = $this->store->read('oauth-families', $id);
        if ($family === null) {
            $this->dropLock($id); // ended while this request waited
            return false;
        }
        $this->tokens->deleteByHash((string) $family['user'], (string) $family['accessHash']);
        $ended = $this->store->delete('oauth-families', $id);
        $this->dropLock($id);
        return $ended;
    }

    private function dropLock(string $id): void
    {
        @unlink($this->store->path('locks', 'family-' . $id . '.lock'));
    }

    /** At most every 5 minutes: ends families past their last refresh's 30 days, or of a changed account. */
    private function purgeEnded(): void
    {
        if (!$this->store->due('purge-oauth-families', 300)) {
            return;
        }
        $now = time();
        foreach ($this->store->all('oauth-families') as $id => $family) {
            if ((int) ($family['expiresAt'] ?? 0) <= $now || $this->users->current($family) === null) {
                $this->end((string) $id);
            }
        }
    }

    /** @return array<string,mixed> */
    private static function answer(string $access, string $refresh, int $seconds): array
    {
        return ['access_token' => $access, 'token_type' => 'Bearer', 'expires_in' => $seconds, 'refresh_token' => $refresh];
    }

    /** A new family's handle: 32 hex digits, in its refresh tokens only, never on disk. */
    public static function newHandle(): string
    {
        return bin2hex(random_bytes(16));
    }

    private static function refreshToken(string $handle): string
    {
        return 'fwr_' . $handle . bin2hex(random_bytes(16));
    }

    /** The family's id (its file's name): the SHA-256 of its handle. */
    public static function idOf(string $handle): string
    {
        return hash('sha256', $handle);
    }
}
