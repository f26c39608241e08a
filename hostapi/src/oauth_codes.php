<?php
declare(strict_types=1);

namespace HostApi;

/**
 * Authorization codes: 43 url-safe characters (256 bits), good once, for 60 seconds. Kept as
 * oauth-codes/<sha256 of code>.json = {client {id, name}, redirectUri, challenge, resource,
 * user, uid, generation, expiresAt}.
 *
 * A code is consumed by renaming its file to oauth-used-codes/<sha256>.json: of concurrent
 * token requests only the one whose rename succeeded goes on, and from that instant the code
 * is known as used. The record then becomes {family, expiresAt, reused?} for 10 minutes, so
 * that a second use ends the tokens issued for the first (OAuth 2.1 §4.1.3: a code used twice
 * is a sign that it was stolen): the family is chosen before the code is consumed, and one
 * still being started when the second use comes ends itself (TokenFamilies::start asks
 * reused()), since the second use may find no family yet to end.
 */
final class AuthorizationCodes
{
    public const LIFETIME = 60;
    public const USED_KEPT = 600;
    public const REUSED = 'this code was used before; the tokens issued for it have ended';

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
     * Consumes the code for the family $family will start: its record, or null for an
     * unknown, used or malformed one. The caller checks the expiry, so that an expired code is
     * used up too.
     *
     * @return array<string,mixed>|null
     */
    public function take(string $code, string $family): ?array
    {
        if (!preg_match('/^[A-Za-z0-9_-]{43}$/D', $code)) {
            return null;
        }
        $hash = hash('sha256', $code);
        $record = $this->store->read('oauth-codes', $hash);
        $from = $this->store->path('oauth-codes', $hash . '.json');
        $to = $this->store->path('oauth-used-codes', $hash . '.json');
        if ($record === null || !@rename($from, $to)) {
            return null;
        }
        // Under the file's lock, so that a reuse marked in between is kept.
        $this->store->update('oauth-used-codes', $hash, fn(array $r): array => [
            'family' => $family,
            'expiresAt' => time() + self::USED_KEPT,
        ] + (empty($r['reused']) ? [] : ['reused' => true]));
        return $record;
    }

    /**
     * A code presented again: null if it is not a code used within USED_KEPT seconds, else
     * its used-code record, now marked reused ({family} missing while the first use is still
     * consuming it).
     *
     * @return array<string,mixed>|null
     */
    public function reuse(string $code): ?array
    {
        if (!preg_match('/^[A-Za-z0-9_-]{43}$/D', $code)) {
            return null;
        }
        $mark = fn(array $r): array => ['reused' => true] + $r;
        $record = $this->store->update('oauth-used-codes', hash('sha256', $code), $mark);
        $expired = isset($record['family']) && (int) ($record['expiresAt'] ?? 0) <= time();
        return $record === null || $expired ? null : $record;
    }

    /** Whether the code, used, was presented again since. */
    public function reused(string $code): bool
    {
        return !empty($this->store->read('oauth-used-codes', hash('sha256', $code))['reused']);
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
