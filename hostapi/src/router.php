<?php
declare(strict_types=1);

namespace HostApi;

/**
 * Routing by ?r=ROUTE. Each route has a pattern, the name of its request counter, whether
 * it is a relay route (needs X-Relay-Key, else it does not exist) and a handler per method.
 */
final class Router
{
    /** @var list<array{pattern:string, counter:string, relay:bool, methods:array<string,callable>}> */
    private array $routes = [];

    /** @param array<string,callable> $methods handler(Request, array $params): Response */
    public function add(string $pattern, string $counter, bool $relay, array $methods): void
    {
        $this->routes[] = ['pattern' => $pattern, 'counter' => $counter, 'relay' => $relay, 'methods' => $methods];
    }

    public function dispatch(Request $request, Counters $counters): Response
    {
        foreach ($this->routes as $route) {
            if (!preg_match('#^' . $route['pattern'] . '$#D', $request->route, $params)) {
                continue;
            }
            $counters->increment($route['counter']);
            if ($route['relay'] && !self::relayKeyMatches($request->relayKey)) {
                throw self::notFound();
            }
            $handler = $route['methods'][$request->method] ?? null;
            if ($handler === null) {
                throw new HttpError(405, 'method not allowed', ['Allow' => implode(', ', array_keys($route['methods']))]);
            }
            $request->requireJson();
            return $handler($request, array_slice($params, 1));
        }
        throw self::notFound();
    }

    public static function notFound(): HttpError
    {
        return new HttpError(404, 'not found');
    }

    private static function relayKeyMatches(?string $given): bool
    {
        $key = Config::relayKey();
        return $key !== null && $given !== null && hash_equals($key, $given);
    }
}
