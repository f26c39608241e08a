<?php
declare(strict_types=1);

namespace HostApi;

/**
 * Accounts: users/<name>.json = {name, uid, role, passwordHash, generation, lastTokenId, createdAt}.
 *
 * `generation` is bumped on every password change; tokens and sessions carry the
 * generation they were made under and die when it no longer matches. `uid` is random
 * per account, so that a deleted and re-created account of the same name does not
 * inherit anything of the old one.
 */
final class Users
{
    public function __construct(private readonly Store $store)
    {
    }

    public static function validName(string $name): bool
    {
        return (bool) preg_match('/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/D', $name);
    }

    public static function validRole(string $role): bool
    {
        return (bool) preg_match('/^[a-z][a-z0-9_-]{0,31}$/D', $role);
    }

    /** @return array<string,mixed>|null */
    public function get(string $name): ?array
    {
        return self::validName($name) ? $this->store->read('users', $name) : null;
    }

    /**
     * The account a token, ticket or session was made for, if it still stands as it was.
     *
     * @param array<string,mixed> $record with user, uid and generation
     * @return array<string,mixed>|null
     */
    public function current(array $record): ?array
    {
        $user = is_string($record['user'] ?? null) ? $this->get($record['user']) : null;
        if ($user === null
            || ($record['uid'] ?? null) !== $user['uid']
            || ($record['generation'] ?? null) !== $user['generation']) {
            return null;
        }
        return $user;
    }

    /** Checks a password; always takes about the same time, whether the account exists or not. */
    public function authenticate(string $name, string $password): ?array
    {
        $user = $this->get($name);
        if ($user === null) {
            password_verify($password, '$2y$10$' . str_repeat('a', 53));
            return null;
        }
        return password_verify($password, (string) $user['passwordHash']) ? $user : null;
    }

    public function add(string $name, string $password, string $role = 'user'): void
    {
        $this->checkNew($name, $password, $role);
        $this->store->withLock('user-' . $name, function () use ($name, $password, $role): void {
            if ($this->get($name) !== null) {
                throw new \InvalidArgumentException("user $name exists already");
            }
            $this->store->write('users', $name, [
                'name' => $name,
                'uid' => bin2hex(random_bytes(8)),
                'role' => $role,
                'passwordHash' => password_hash($password, PASSWORD_DEFAULT),
                'generation' => 1,
                'lastTokenId' => 0,
                'createdAt' => time(),
            ]);
        });
    }

    /** Sets a new password: every token and session of the account ends. */
    public function setPassword(string $name, string $password, Tokens $tokens): void
    {
        if ($password === '') {
            throw new \InvalidArgumentException('the password must not be empty');
        }
        $this->store->withLock('user-' . $name, function () use ($name, $password, $tokens): void {
            $user = $this->get($name) ?? throw new \InvalidArgumentException("no user $name");
            $user['passwordHash'] = password_hash($password, PASSWORD_DEFAULT);
            $user['generation'] = (int) $user['generation'] + 1;
            $this->store->write('users', $name, $user);
            $tokens->deleteAllOf($name);
        });
        RelayHook::forgetUser($name);
    }

    /** Deletes the account; its tokens go with it. */
    public function delete(string $name, Tokens $tokens): void
    {
        $this->store->withLock('user-' . $name, function () use ($name, $tokens): void {
            if ($this->get($name) === null) {
                throw new \InvalidArgumentException("no user $name");
            }
            $this->store->delete('users', $name);
            $tokens->deleteAllOf($name);
        });
        RelayHook::forgetUser($name);
    }

    private function checkNew(string $name, string $password, string $role): void
    {
        if (!self::validName($name)) {
            throw new \InvalidArgumentException('a user name is 1 to 64 of A-Z a-z 0-9 . _ - and starts with a letter or digit');
        }
        if ($password === '') {
            throw new \InvalidArgumentException('the password must not be empty');
        }
        if (!self::validRole($role)) {
            throw new \InvalidArgumentException('a role is 1 to 32 of a-z 0-9 _ - and starts with a letter');
        }
    }
}
