<?php
declare(strict_types=1);

namespace HostApi;

/**
 * Authorization codes: 43 url-safe characters (256 bits), good once, for 60 seconds. Kept as
 * oauth-codes/<sha256 of code>.json = {client {id, name}, redirectUri, challenge, resource,
 * user, uid, generation, expiresAt}.
 *
 * A code is consumed by deleting its file: of concurrent token requests only the one whose
 * delete succeeded goes on. A consumed code leaves oauth-used-codes/<sha256>.json = {family,
 * expiresAt} for 10 minutes, so that a second use ends the tokens issued for the first
 * (OAuth 2.1 §4.1.3: a code used twice is a sign that it was stolen).
 */
final class AuthorizationCodes
{
    public const LIFETIME = 60;
    public const USED_KEPT = 600;

    public function __construct(private readonly Store $store)
    {
    }

    /** @param array<string,mixed> $grant */
    public function mint(array $grant): string
    {
        $this->purgeExpired();
        $code = randomId();
        $this->store->write('oauth-codes', hash('sha256', $code), $grant + ['expiresAt' => time() + self::LIFETIME]);
        return $code;
    }

    /**
     * Consumes the code: its record, or null for an unknown, used or malformed one. The
     * caller checks the expiry, so that an expired code is used up too.
     *
     * @return array<string,mixed>|null
     */
    public function take(string $code): ?array
    {
        if (!preg_match('/^[A-Za-z0-9_-]{43}$/D', $code)) {
            return null;
        }
        $hash = hash('sha256', $code);
        $record = $this->store->read('oauth-codes', $hash);
        if ($record === null || !$this->store->delete('oauth-codes', $hash)) {
            return null;
        }
        return $record;
    }

    /** Remembers which family the code started, for USED_KEPT seconds. */
    public function markUsed(string $code, string $family): void
    {
        $this->store->write('oauth-used-codes', hash('sha256', $code), ['family' => $family, 'expiresAt' => time() + self::USED_KEPT]);
    }

    /** The family a code that was used already started, or null. */
    public function familyOfUsed(string $code): ?string
    {
        if (!preg_match('/^[A-Za-z0-9_-]{43}$/D', $code)) {
            return null;
        }
        $record = $this->store->read('oauth-used-codes', hash('sha256', $code));
        return $record !== null && (int) ($record['expiresAt'] ?? 0) > time() ? (string) $record['family'] : null;
    }

    /** At most once a minute: a purge reads every code file. */
    private function purgeExpired(): void
    {
        if (!$this->store->due('purge-oauth-codes', 60)) {
            return;
        }
        $now = time();
        foreach (['oauth-codes', 'oauth-used-codes'] as $kind) {
            foreach ($this->store->all($kind) as $hash => $record) {
                if ((int) ($record['expiresAt'] ?? 0) <= $now) {
                    $this->store->delete($kind, $hash);
                }
            }
        }
    }
}
