<?php
declare(strict_types=1);

namespace HostApi;

/**
 * Request counters per route: counters/<route with "/" replaced by "-">, a decimal number,
 * incremented under flock for every request to the route (including refused ones), so that
 * tests can count the calls that reached the API.
 */
final class Counters
{
    public function __construct(private readonly Store $store)
    {
    }

    public function increment(string $route): int
    {
        $name = str_replace('/', '-', $route);
        $new = $this->store->mutate('counters', $name, fn(string $raw): string => ((int) trim($raw) + 1) . "\n");
        return (int) $new;
    }
}
