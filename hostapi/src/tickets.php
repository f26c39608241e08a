<?php
declare(strict_types=1);

namespace HostApi;

/**
 * One-time tickets for a tab to get onto the relay: 43 url-safe characters, good once,
 * for 60 seconds. Kept as tickets/<sha256 of ticket>.json = {user, uid, generation, expiresAt}.
 */
final class Tickets
{
    public const LIFETIME = 60;

    public function __construct(private readonly Store $store, private readonly Users $users)
    {
    }

    /** @param array<string,mixed> $user */
    public function mint(array $user): string
    {
        $this->purgeExpired();
        $ticket = randomId();
        $this->store->write('tickets', hash('sha256', $ticket), [
            'user' => $user['name'],
            'uid' => $user['uid'],
            'generation' => $user['generation'],
            'expiresAt' => time() + self::LIFETIME,
        ]);
        return $ticket;
    }

    /**
     * The account of the ticket, or null for an unknown, used or expired one. The ticket
     * is consumed: of any number of concurrent redeemers exactly one wins, because only
     * one rename() of the file can succeed.
     *
     * @return array<string,mixed>|null
     */
    public function redeem(string $ticket): ?array
    {
        if (!preg_match('/^[A-Za-z0-9_-]{43,128}$/D', $ticket)) {
            return null;
        }
        $path = $this->store->path('tickets', hash('sha256', $ticket) . '.json');
        $claimed = $path . '.used.' . bin2hex(random_bytes(8));
        if (!@rename($path, $claimed)) {
            return null;
        }
        $record = Store::readFile($claimed);
        @unlink($claimed);
        if ($record === null || (int) ($record['expiresAt'] ?? 0) <= time()) {
            return null;
        }
        return $this->users->current($record);
    }

    /** At most once a minute: a purge reads every tickets file. */
    private function purgeExpired(): void
    {
        if (!$this->store->due('purge-tickets', 60)) {
            return;
        }
        $now = time();
        foreach ($this->store->all('tickets') as $hash => $record) {
            if ((int) ($record['expiresAt'] ?? 0) <= $now) {
                $this->store->delete('tickets', $hash);
            }
        }
    }
}
