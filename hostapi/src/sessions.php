<?php
declare(strict_types=1);

namespace HostApi;

/**
 * Cookie sessions for the browser routes. The cookie holds a random id; the server keeps
 * sessions/<sha256 of id>.json = {user, uid, generation, expiresAt}. A session ends after
 * 12 hours, and with a password change or the account's deletion.
 */
final class Sessions
{
    public const COOKIE = 'hostapi_session';
    public const LIFETIME = 43200;

    public function __construct(private readonly Store $store, private readonly Users $users)
    {
    }

    /**
     * Starts a session for the account and returns the cookie header value (Secure when
     * the request came over TLS).
     *
     * @param array<string,mixed> $user
     */
    public function start(array $user, bool $overTls): string
    {
        $this->purgeExpired();
        $id = randomId();
        $expires = time() + self::LIFETIME;
        $this->store->write('sessions', hash('sha256', $id), [
            'user' => $user['name'],
            'uid' => $user['uid'],
            'generation' => $user['generation'],
            'expiresAt' => $expires,
        ]);
        // Secure behind TLS (never sent in clear then); SameSite=Lax: not sent with a
        // cross-site POST.
        return self::COOKIE . '=' . $id . '; Path=/; Max-Age=' . self::LIFETIME . '; HttpOnly; SameSite=Lax'
            . ($overTls ? '; Secure' : '');
    }

    /**
     * The logged-in account of the request, or a 401.
     *
     * @return array<string,mixed>
     */
    public function require(Request $request): array
    {
        $id = $request->cookies[self::COOKIE] ?? '';
        if (preg_match('/^[A-Za-z0-9_-]{43}$/D', $id)) {
            $hash = hash('sha256', $id);
            $record = $this->store->read('sessions', $hash);
            if ($record !== null) {
                $user = (int) ($record['expiresAt'] ?? 0) > time() ? $this->users->current($record) : null;
                if ($user !== null) {
                    return $user;
                }
                $this->store->delete('sessions', $hash);
            }
        }
        throw new HttpError(401, 'not logged in');
    }

    /** At most once a minute: a purge reads every sessions file. */
    private function purgeExpired(): void
    {
        if (!$this->store->due('purge-sessions', 60)) {
            return;
        }
        $now = time();
        foreach ($this->store->all('sessions') as $hash => $record) {
            if ((int) ($record['expiresAt'] ?? 0) <= $now) {
                $this->store->delete('sessions', $hash);
            }
        }
    }
}
