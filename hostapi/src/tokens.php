<?php
declare(strict_types=1);

namespace HostApi;

/**
 * Agent tokens: `fwa_` + 64 lowercase hex digits, shown once at creation.
 *
 * Kept as tokens/<sha256 of token>.json = {user, uid, generation, id, name, createdAt,
 * expiresAt, usedAt}: the file name cannot be replayed as the token. A token ends at its
 * expiry, when deleted, when the password changes (generation) and with its account (uid).
 *
 * A token issued to an OAuth client (TokenFamilies) is the same kind of token, with the
 * client {id, name}, its resource, its family and accessExpiresAt on top. Its expiresAt is
 * the end of the sign-in (the refresh token's), so that the person keeps seeing, and can end,
 * a signed-in client while its access token has lapsed and a refresh would bring it back;
 * verify() refuses it after accessExpiresAt. Each refresh replaces it under the same id: one
 * entry per signed-in client in the person's list.
 */
final class Tokens
{
    public const MAX_PER_USER = 20;
    public const MAX_NAME = 60;
    public const DEFAULT_DAYS = 90;
    public const MAX_DAYS = 365;
    /** token-index/scanned.json: the tokens written before the index existed are indexed. */
    private const SCANNED = 'scanned';

    public function __construct(private readonly Store $store, private readonly Users $users)
    {
    }

    public static function hash(string $token): string
    {
        return hash('sha256', $token);
    }

    public static function wellFormed(string $token): bool
    {
        return (bool) preg_match('/^fwa_[0-9a-f]{64}$/D', $token);
    }

    /** Checks the name and lifetime of a new token (422 when out of bounds). */
    public static function checkRequest(mixed $name, mixed $days): array
    {
        if (!is_string($name) || trim($name) === '') {
            throw new HttpError(422, 'name is required');
        }
        if (preg_match('/^[^\p{Cc}]{1,' . self::MAX_NAME . '}$/uD', $name) !== 1) {
            throw new HttpError(422, 'name must be at most ' . self::MAX_NAME . ' characters, without control characters');
        }
        if ($days === null) {
            $days = self::DEFAULT_DAYS;
        }
        if (is_float($days) && floor($days) === $days && abs($days) < 100000) {
            $days = (int) $days;
        }
        if (!is_int($days) || $days < 1 || $days > self::MAX_DAYS) {
            throw new HttpError(422, 'days must be a whole number from 1 to ' . self::MAX_DAYS);
        }
        return [$name, $days];
    }

    /**
     * Creates a token for the account. Returns [public record, token].
     *
     * @return array{0: array<string,mixed>, 1: string}
     */
    public function mint(string $userName, mixed $name, mixed $days): array
    {
        [$name, $days] = self::checkRequest($name, $days);
        return $this->store->withLock('user-' . $userName, function () use ($userName, $name, $days): array {
            $user = $this->users->get($userName) ?? throw new HttpError(401, 'no such user');
            if (count($this->live($userName)) >= self::MAX_PER_USER) {
                throw new HttpError(409, 'at most ' . self::MAX_PER_USER . ' tokens per account; delete one first');
            }
            $user['lastTokenId'] = (int) ($user['lastTokenId'] ?? 0) + 1;
            $this->store->write('users', $userName, $user);

            $token = 'fwa_' . bin2hex(random_bytes(32));
            $now = time();
            $record = [
                'user' => $userName,
                'uid' => $user['uid'],
                'generation' => $user['generation'],
                'id' => $user['lastTokenId'],
                'name' => $name,
                'createdAt' => $now,
                'expiresAt' => $now + $days * 86400,
                'usedAt' => null,
            ];
            $hash = self::hash($token);
            $this->store->write('tokens', $hash, $record);
            $this->changeIndex($userName, fn(array $hashes): array => [...$hashes, $hash]);
            return [self::shown($record), $token];
        });
    }

    /**
     * Creates the access token of a sign-in: an agent token like the dialog's, counted against
     * the same limit (409). Null when the account no longer stands as $grant saw it (password
     * changed, deleted, re-created).
     *
     * @param array<string,mixed> $grant {user, uid, generation} of the authorization code
     * @param array{id:string, name:string} $client
     * @return array{0:string, 1:string}|null [hash, token]
     */
    public function mintForClient(array $grant, array $client, ?string $resource, string $family, int $accessSeconds, int $expiresAt): ?array
    {
        $userName = (string) $grant['user'];
        return $this->store->withLock('user-' . $userName, function () use ($grant, $userName, $client, $resource, $family, $accessSeconds, $expiresAt): ?array {
            $user = $this->users->current($grant);
            if ($user === null) {
                return null;
            }
            if (count($this->live($userName)) >= self::MAX_PER_USER) {
                throw new HttpError(409, 'at most ' . self::MAX_PER_USER . ' tokens per account; delete one in Agent tokens first');
            }
            $user['lastTokenId'] = (int) ($user['lastTokenId'] ?? 0) + 1;
            $this->store->write('users', $userName, $user);

            $token = 'fwa_' . bin2hex(random_bytes(32));
            $now = time();
            $hash = self::hash($token);
            $this->store->write('tokens', $hash, [
                'user' => $userName,
                'uid' => $user['uid'],
                'generation' => $user['generation'],
                'id' => $user['lastTokenId'],
                'name' => self::clientTokenName($client['name']),
                'createdAt' => $now,
                'expiresAt' => $expiresAt,
                'accessExpiresAt' => $now + $accessSeconds,
                'usedAt' => null,
                'client' => ['id' => $client['id'], 'name' => $client['name']],
                'resource' => $resource,
                'family' => $family,
            ]);
            $this->changeIndex($userName, fn(array $hashes): array => [...$hashes, $hash]);
            return [$hash, $token];
        });
    }

    /**
     * A refresh: replaces the sign-in's access token $oldHash by a new one with the same id
     * and name, and tells the relay to forget the old one. Null when the old one is gone
     * (revoked, or ended with its account).
     *
     * @return array{0:string, 1:string}|null [hash, token]
     */
    public function rotate(string $userName, string $oldHash, int $accessSeconds, int $expiresAt): ?array
    {
        $rotated = $this->store->withLock('user-' . $userName, function () use ($userName, $oldHash, $accessSeconds, $expiresAt): ?array {
            $old = $this->store->read('tokens', $oldHash);
            if ($old === null || ($old['user'] ?? null) !== $userName || $this->users->current($old) === null) {
                return null;
            }
            $token = 'fwa_' . bin2hex(random_bytes(32));
            $hash = self::hash($token);
            $this->store->write('tokens', $hash, [
                'expiresAt' => $expiresAt,
                'accessExpiresAt' => time() + $accessSeconds,
            ] + $old);
            $this->store->delete('tokens', $oldHash);
            $this->changeIndex($userName, fn(array $hashes): array => [...array_diff($hashes, [$oldHash]), $hash]);
            return [$hash, $token];
        });
        if ($rotated !== null) {
            RelayHook::forgetToken($oldHash);
        }
        return $rotated;
    }

    /** @return array<string,mixed>|null the record of the token with that hash, as stored */
    public function find(string $hash): ?array
    {
        return preg_match('/^[0-9a-f]{64}$/D', $hash) ? $this->store->read('tokens', $hash) : null;
    }

    /**
     * Deletes the account's token with that hash and tells the relay; false if it was gone
     * (then whoever deleted it told the relay).
     */
    public function deleteByHash(string $userName, string $hash): bool
    {
        $deleted = $this->store->delete('tokens', $hash);
        $this->changeIndex($userName, fn(array $hashes): array => array_diff($hashes, [$hash]));
        if ($deleted) {
            RelayHook::forgetToken($hash);
        }
        return $deleted;
    }

    /** @return list<array<string,mixed>> the account's live tokens, oldest first, without secrets */
    public function listFor(string $userName): array
    {
        return array_map(fn(array $r): array => self::shown($r), array_values($this->live($userName)));
    }

    /**
     * Deletes the account's token with that id, and tells the relay. Returns its record (the
     * caller ends its family, if it has one), null if the account has no such token.
     *
     * Looked up and deleted under the account's lock, which rotate() holds while a refresh
     * replaces a sign-in's token (same id, new hash): else the delete could miss the token it
     * found, and the sign-in would go on. A sign-in's token deleted by someone else meanwhile
     * (the client's revocation) still returns its record: ending its family again is harmless,
     * and the person asked for it to end.
     *
     * @return array<string,mixed>|null
     */
    public function revoke(string $userName, int $id): ?array
    {
        $find = function () use ($userName, $id): ?array {
            foreach ($this->live($userName) as $hash => $record) {
                if ($record['id'] === $id) {
                    $deleted = $this->store->delete('tokens', $hash);
                    $this->changeIndex($userName, fn(array $h): array => array_diff($h, [$hash]));
                    return [$hash, $record, $deleted];
                }
            }
            return null;
        };
        $found = $this->store->withLock('user-' . $userName, $find);
        if ($found === null) {
            return null;
        }
        [$hash, $record, $deleted] = $found;
        if ($deleted) {
            RelayHook::forgetToken($hash); // outside the lock: the relay may be slow to answer
        }
        return $deleted || is_string($record['family'] ?? null) ? $record : null;
    }

    /**
     * The account behind a token, or null for an unknown, expired or revoked one.
     * Marks the token used.
     *
     * @return array<string,mixed>|null
     */
    public function verify(string $token): ?array
    {
        return $this->verifyToken($token)['user'] ?? null;
    }

    /**
     * Like verify(), with the token's record (its resource, client).
     *
     * @return array{user: array<string,mixed>, record: array<string,mixed>}|null
     */
    public function verifyToken(string $token): ?array
    {
        if (!self::wellFormed($token)) {
            return null;
        }
        $hash = self::hash($token);
        $record = $this->store->read('tokens', $hash);
        if ($record === null) {
            return null;
        }
        $user = $this->users->current($record);
        if ($user === null || (int) $record['expiresAt'] <= time()) {
            $this->store->delete('tokens', $hash);
            return null;
        }
        // A signed-in client's lapsed access token: refused, but kept, so that the person
        // still sees the sign-in that a refresh can renew (see the class comment).
        if (isset($record['accessExpiresAt']) && (int) $record['accessExpiresAt'] <= time()) {
            return null;
        }
        // In place and only if the file is still there: a verification racing a
        // revocation must not bring the token back.
        $updated = $this->store->update('tokens', $hash, function (array $r): array {
            $r['usedAt'] = time();
            return $r;
        });
        return $updated === null ? null : ['user' => $user, 'record' => $updated];
    }

    /**
     * Whether $token is a signed-in client's access token past its hour, whose sign-in still
     * stands: a token this server issued, not a guess, which its client is about to refresh.
     */
    public function lapsed(string $token): bool
    {
        $record = self::wellFormed($token) ? $this->store->read('tokens', self::hash($token)) : null;
        return $record !== null
            && isset($record['accessExpiresAt'])
            && (int) $record['accessExpiresAt'] <= time()
            && (int) $record['expiresAt'] > time()
            && $this->users->current($record) !== null;
    }

    /** Removes every token file of the account (password change, deletion). */
    public function deleteAllOf(string $userName): void
    {
        $hashes = $this->indexOf($userName);
        foreach ($hashes as $hash) {
            $this->store->delete('tokens', $hash);
        }
        $this->changeIndex($userName, fn(array $known): array => array_diff($known, $hashes));
    }

    /**
     * The account's tokens that still work, by hash, sorted by id. Dead ones are removed
     * on the way.
     *
     * @return array<string,array<string,mixed>>
     */
    private function live(string $userName): array
    {
        $now = time();
        $out = [];
        $dead = [];
        foreach ($this->indexOf($userName) as $hash) {
            $record = $this->store->read('tokens', $hash);
            if ($record === null || ($record['user'] ?? null) !== $userName) {
                $dead[] = $hash;
                continue;
            }
            if ($this->users->current($record) === null || (int) $record['expiresAt'] <= $now) {
                $this->store->delete('tokens', $hash);
                $dead[] = $hash;
                continue;
            }
            $out[$hash] = $record;
        }
        if ($dead !== []) {
            $this->changeIndex($userName, fn(array $hashes): array => array_diff($hashes, $dead));
        }
        uasort($out, fn(array $a, array $b): int => $a['id'] <=> $b['id']);
        return $out;
    }

    /**
     * The hashes of the account's tokens: token-index/<sha256 of name>.json, so that
     * listing one account's tokens reads only its own files. Data written before the index
     * existed is indexed by one scan of every token, for all accounts at once; its marker,
     * token-index/scanned.json, then says that an account without an index has no tokens.
     * (Scanning for each account without an index read every token file for every new
     * account's first token: quadratic in the accounts.)
     *
     * @return list<string>
     */
    private function indexOf(string $userName): array
    {
        $index = $this->store->read('token-index', self::indexName($userName));
        if ($index === null) {
            if ($this->store->read('token-index', self::SCANNED) !== null) {
                return [];
            }
            $this->indexAll();
            $index = $this->store->read('token-index', self::indexName($userName));
        }
        return array_values(array_filter((array) ($index['hashes'] ?? []), 'is_string'));
    }

    /**
     * Indexes every token written before the index existed, then writes the marker.
     * Concurrent scans only repeat work: each merges into the index under its lock, so a
     * token minted meanwhile (which adds itself) is kept.
     */
    private function indexAll(): void
    {
        $byUser = [];
        foreach ($this->store->all('tokens') as $hash => $record) {
            if (is_string($record['user'] ?? null)) {
                $byUser[$record['user']][] = (string) $hash;
            }
        }
        foreach ($byUser as $userName => $hashes) {
            $this->changeIndex((string) $userName, fn(array $known): array => [...$known, ...$hashes]);
        }
        $this->store->write('token-index', self::SCANNED, ['at' => time()]);
    }

    /** @param callable(list<string>):array<string> $fn */
    private function changeIndex(string $userName, callable $fn): void
    {
        $this->store->mutate('token-index', self::indexName($userName) . '.json', function (string $raw) use ($fn): string {
            $index = json_decode($raw, true);
            $hashes = is_array($index) ? array_values(array_filter((array) ($index['hashes'] ?? []), 'is_string')) : [];
            $hashes = array_values(array_unique($fn($hashes)));
            return json_encode(['hashes' => $hashes], JSON_THROW_ON_ERROR) . "\n";
        });
    }

    /** The name a client's token is listed under: the client's, cut to MAX_NAME characters. */
    private static function clientTokenName(string $name): string
    {
        $name = preg_replace('/[\p{Cc}\p{Cf}]/u', '', $name) ?? '';
        if (preg_match('/^.{' . (self::MAX_NAME + 1) . '}/us', $name)) {
            $name = (string) preg_replace('/^(.{' . (self::MAX_NAME - 1) . '}).*$/us', '$1', $name) . '…';
        }
        return $name === '' ? 'OAuth client' : $name;
    }

    private static function indexName(string $userName): string
    {
        return hash('sha256', $userName);
    }

    /** @param array<string,mixed> $r */
    private static function shown(array $r): array
    {
        return [
            'id' => $r['id'],
            'name' => $r['name'],
            'createdAt' => iso($r['createdAt']),
            'expiresAt' => iso($r['expiresAt']),
            'usedAt' => iso($r['usedAt']),
            // the OAuth client a sign-in issued the token to; null for the dialog's tokens
            'client' => is_array($r['client'] ?? null) ? (string) ($r['client']['name'] ?? '') : null,
            // the host of a client named by a metadata document (its client_id URL), which
            // vouches for the name; null for a registered client's or a dialog token
            'clientHost' => self::clientHost($r),
        ];
    }

    /** @param array<string,mixed> $r */
    private static function clientHost(array $r): ?string
    {
        $id = is_array($r['client'] ?? null) ? ($r['client']['id'] ?? null) : null;
        if (!is_string($id) || !ClientMetadata::isUrl($id)) {
            return null;
        }
        $host = parse_url($id, PHP_URL_HOST);
        return is_string($host) ? strtolower($host) : null;
    }
}
