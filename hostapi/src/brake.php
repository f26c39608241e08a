<?php
declare(strict_types=1);

namespace HostApi;

/**
 * The brake: five wrong tokens from one address within 15 minutes lock that address
 * out for 15 minutes. brake/<sha256 of address>.json = {failures: [unix times], lockedUntil}.
 *
 * The same with other numbers and its own folder is the rate limit of what anyone may ask of
 * the OAuth server (Brake::rate): rate/<sha256 of key>.json, where a "failure" is any event
 * counted (a registration, a fetch of a client metadata document).
 */
final class Brake
{
    public const MAX_FAILURES = 5;
    public const WINDOW = 900;
    public const LOCKOUT = 900;
    /** The rate limit: the RATE_MAXth event within RATE_WINDOW seconds locks for as long. */
    public const RATE_MAX = 30;
    public const RATE_WINDOW = 600;

    public function __construct(
        private readonly Store $store,
        private readonly string $kind = 'brake',
        private readonly int $maxFailures = self::MAX_FAILURES,
        private readonly int $window = self::WINDOW,
        private readonly int $lockout = self::LOCKOUT,
    ) {
    }

    /** At most RATE_MAX events per key in RATE_WINDOW seconds, kept apart from the brake. */
    public static function rate(Store $store): self
    {
        return new self($store, 'rate', self::RATE_MAX, self::RATE_WINDOW, self::RATE_WINDOW);
    }

    public static function normalise(?string $address): string
    {
        $address = strtolower(trim((string) $address));
        return $address === '' ? 'unknown' : $address;
    }

    /** Seconds the address stays locked out; 0 when it is not. */
    public function lockedFor(string $address): int
    {
        $record = $this->store->read($this->kind, self::name($address));
        $left = (int) ($record['lockedUntil'] ?? 0) - time();
        return max(0, $left);
    }

    /**
     * Records a wrong token (or an event of the rate limit) from the address; locks it at the
     * fifth (maxFailures-th) within the window.
     */
    public function fail(string $address): void
    {
        $this->purgeStale();
        $file = self::name($address) . '.json';
        $this->store->mutate($this->kind, $file, function (string $raw): string {
            $now = time();
            $record = json_decode($raw, true);
            $record = is_array($record) ? $record : [];
            $failures = array_values(array_filter(
                array_map('intval', (array) ($record['failures'] ?? [])),
                fn(int $t): bool => $t > $now - $this->window,
            ));
            $failures[] = $now;
            $lockedUntil = (int) ($record['lockedUntil'] ?? 0);
            if (count($failures) >= $this->maxFailures) {
                $lockedUntil = $now + $this->lockout;
                $failures = [];
            }
            return json_encode(['failures' => $failures, 'lockedUntil' => $lockedUntil], JSON_THROW_ON_ERROR) . "\n";
        });
    }

    /** At most every 5 minutes: forgets records with no failure in the window and no lock. */
    private function purgeStale(): void
    {
        if (!$this->store->due('purge-' . $this->kind, 300)) {
            return;
        }
        $now = time();
        foreach ($this->store->all($this->kind) as $name => $record) {
            $latest = max(array_map('intval', (array) ($record['failures'] ?? [])) ?: [0]);
            if ((int) ($record['lockedUntil'] ?? 0) <= $now && $latest <= $now - $this->window) {
                $this->store->delete($this->kind, $name);
            }
        }
    }

    private static function name(string $address): string
    {
        return hash('sha256', $address);
    }
}
