<?php
declare(strict_types=1);

namespace HostApi;

/**
 * JSON files in folders under the data folder. No database.
 *
 * - write(): atomic (temporary file + rename), so a reader never sees half a file.
 * - update(): in place under an exclusive flock, and only if the file still exists,
 *   so an update racing a delete never brings the file back.
 * - mutate(): create-or-update under an exclusive flock (brake records, counters).
 * - withLock(): a named lock for operations that span several files.
 */
final class Store
{
    private const KINDS = [
        'users', 'tokens', 'token-index', 'tickets', 'brake', 'sessions', 'counters', 'locks', 'stamps',
        // the OAuth authorization server (oauth_*.php)
        'oauth-clients', 'oauth-metadata', 'oauth-metadata-failed', 'oauth-codes',
        'oauth-used-codes', 'oauth-families', 'rate',
    ];

    public function __construct(public readonly string $root)
    {
        umask(0077);
        self::ensureDir($root);
    }

    public static function fromEnv(): self
    {
        return new self(Config::dataDir());
    }

    public function dir(string $kind): string
    {
        if (!in_array($kind, self::KINDS, true)) {
            throw new \LogicException("unknown storage kind $kind");
        }
        $dir = $this->root . '/' . $kind;
        self::ensureDir($dir);
        return $dir;
    }

    public function path(string $kind, string $name): string
    {
        if (!preg_match('/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/D', $name)) {
            throw new \LogicException('bad storage name');
        }
        return $this->dir($kind) . '/' . $name;
    }

    /** @return array<string,mixed>|null */
    public function read(string $kind, string $name): ?array
    {
        return self::readFile($this->path($kind, $name . '.json'));
    }

    /** @return array<string,mixed>|null */
    public static function readFile(string $path): ?array
    {
        $fh = @fopen($path, 'rb');
        if ($fh === false) {
            return null;
        }
        try {
            flock($fh, LOCK_SH);
            $raw = stream_get_contents($fh);
        } finally {
            fclose($fh);
        }
        $data = json_decode((string) $raw, true);
        return is_array($data) ? $data : null;
    }

    /** @param array<string,mixed> $data */
    public function write(string $kind, string $name, array $data): void
    {
        $path = $this->path($kind, $name . '.json');
        $tmp = $path . '.tmp.' . bin2hex(random_bytes(6));
        if (file_put_contents($tmp, self::encode($data)) === false) {
            throw new \RuntimeException("cannot write $kind file");
        }
        if (!rename($tmp, $path)) {
            @unlink($tmp);
            throw new \RuntimeException("cannot store $kind file");
        }
    }

    /** Returns true when this call removed the file. */
    public function delete(string $kind, string $name): bool
    {
        return @unlink($this->path($kind, $name . '.json'));
    }

    /**
     * Changes an existing file in place under an exclusive lock. $fn gets the data and
     * returns the new data, or null to leave the file as it is.
     *
     * @param callable(array<string,mixed>):(?array<string,mixed>) $fn
     * @return array<string,mixed>|null the data after the change, null if there was no file
     */
    public function update(string $kind, string $name, callable $fn): ?array
    {
        $fh = @fopen($this->path($kind, $name . '.json'), 'r+b');
        if ($fh === false) {
            return null;
        }
        try {
            flock($fh, LOCK_EX);
            $data = json_decode((string) stream_get_contents($fh), true);
            if (!is_array($data)) {
                return null;
            }
            $new = $fn($data);
            if ($new === null) {
                return $data;
            }
            self::rewrite($fh, self::encode($new));
            return $new;
        } finally {
            fclose($fh);
        }
    }

    /**
     * Creates or changes a file under an exclusive lock. $fn gets the current content
     * ('' for a new file) and returns the new content.
     *
     * @param callable(string):string $fn
     */
    public function mutate(string $kind, string $name, callable $fn): string
    {
        $fh = fopen($this->path($kind, $name), 'c+b');
        if ($fh === false) {
            throw new \RuntimeException("cannot open $kind file");
        }
        try {
            flock($fh, LOCK_EX);
            $new = $fn((string) stream_get_contents($fh));
            self::rewrite($fh, $new);
            return $new;
        } finally {
            fclose($fh);
        }
    }

    /**
     * Whether the periodic job $name is due (at most once per $interval seconds, across
     * processes): so that housekeeping such as purging expired records is not paid by
     * every request.
     */
    public function due(string $name, int $interval): bool
    {
        $due = false;
        $this->mutate('stamps', $name, function (string $raw) use ($interval, &$due): string {
            $now = time();
            if ($now - (int) trim($raw) >= $interval) {
                $due = true;
                return (string) $now;
            }
            return $raw;
        });
        return $due;
    }

    /**
     * Runs $fn while holding the named lock (locks/<name>.lock).
     *
     * @template T
     * @param callable():T $fn
     * @return T
     */
    public function withLock(string $name, callable $fn): mixed
    {
        $fh = fopen($this->path('locks', $name . '.lock'), 'c');
        if ($fh === false) {
            throw new \RuntimeException('cannot open lock file');
        }
        try {
            flock($fh, LOCK_EX);
            return $fn();
        } finally {
            flock($fh, LOCK_UN);
            fclose($fh);
        }
    }

    /**
     * All records of one kind, as name (without .json) => data.
     *
     * @return array<string,array<string,mixed>>
     */
    public function all(string $kind): array
    {
        $out = [];
        foreach (glob($this->dir($kind) . '/*.json') ?: [] as $path) {
            $data = self::readFile($path);
            if ($data !== null) {
                $out[basename($path, '.json')] = $data;
            }
        }
        return $out;
    }

    /** @param resource $fh */
    private static function rewrite($fh, string $content): void
    {
        rewind($fh);
        ftruncate($fh, 0);
        fwrite($fh, $content);
        fflush($fh);
    }

    /** @param array<string,mixed> $data */
    private static function encode(array $data): string
    {
        return json_encode($data, JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_THROW_ON_ERROR) . "\n";
    }

    private static function ensureDir(string $dir): void
    {
        if (!is_dir($dir) && !@mkdir($dir, 0700, true) && !is_dir($dir)) {
            throw new \RuntimeException('cannot create data folder');
        }
    }
}
