<?php
declare(strict_types=1);

namespace HostApi;

/**
 * The brake: five wrong tokens from one address within 15 minutes lock that address
 * out for 15 minutes. brake/<sha256 of address>.json = {failures: [unix times], lockedUntil}.
 */
final class Brake
{
    public const MAX_FAILURES = 5;
    public const WINDOW = 900;
    public const LOCKOUT = 900;

    public function __construct(private readonly Store $store)
    {
    }

    public static function normalise(?string $address): string
    {
        $address = strtolower(trim((string) $address));
        return $address === '' ? 'unknown' : $address;
    }

    /** Seconds the address stays locked out; 0 when it is not. */
    public function lockedFor(string $address): int
    {
        $record = $this->store->read('brake', self::name($address));
        $left = (int) ($record['lockedUntil'] ?? 0) - time();
        return max(0, $left);
    }

    /** Records a wrong token from the address; locks it at the fifth within the window. */
    public function fail(string $address): void
    {
        $this->purgeStale();
        $this->store->mutate('brake', self::name($address) . '.json', function (string $raw): string {
            $now = time();
            $record = json_decode($raw, true);
            $record = is_array($record) ? $record : [];
            $failures = array_values(array_filter(
                array_map('intval', (array) ($record['failures'] ?? [])),
                fn(int $t): bool => $t > $now - self::WINDOW,
            ));
            $failures[] = $now;
            $lockedUntil = (int) ($record['lockedUntil'] ?? 0);
            if (count($failures) >= self::MAX_FAILURES) {
                $lockedUntil = $now + self::LOCKOUT;
                $failures = [];
            }
            return json_encode(['failures' => $failures, 'lockedUntil' => $lockedUntil], JSON_THROW_ON_ERROR) . "\n";
        });
    }

    /** At most every 5 minutes: forgets records with no failure in the window and no lock. */
    private function purgeStale(): void
    {
        if (!$this->store->due('purge-brake', 300)) {
            return;
        }
        $now = time();
        foreach ($this->store->all('brake') as $name => $record) {
            $latest = max(array_map('intval', (array) ($record['failures'] ?? [])) ?: [0]);
            if ((int) ($record['lockedUntil'] ?? 0) <= $now && $latest <= $now - self::WINDOW) {
                $this->store->delete('brake', $name);
            }
        }
    }

    private static function name(string $address): string
    {
        return hash('sha256', $address);
    }
}
