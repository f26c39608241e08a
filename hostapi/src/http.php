<?php
declare(strict_types=1);

namespace HostApi;

/** An answer other than 2xx: status, message and optional headers. */
final class HttpError extends \RuntimeException
{
    /** @param array<string,string> $headers */
    public function __construct(public readonly int $status, string $message, public readonly array $headers = [])
    {
        parent::__construct($message);
    }
}

/**
 * A successful answer: status, JSON body (null: no body) and headers; or, for the pages of the
 * OAuth authorization endpoint, a string of HTML. The headers given replace the defaults
 * (Cache-Control: no-store).
 */
final class Response
{
    /** @param array<string,string> $headers */
    public function __construct(
        public readonly int $status,
        public readonly mixed $body = null,
        public readonly array $headers = [],
        public readonly bool $html = false,
    ) {
    }

    /** @param array<string,string> $headers */
    public static function page(string $html, int $status, array $headers): self
    {
        return new self($status, $html, $headers, true);
    }

    public static function json(mixed $body, int $status = 200): self
    {
        return new self($status, $body);
    }

    public static function noContent(): self
    {
        return new self(204);
    }

    public static function error(HttpError $e): self
    {
        return new self($e->status, ['error' => $e->getMessage()], $e->headers);
    }

    public function send(): void
    {
        http_response_code($this->status);
        header('Cache-Control: no-store');
        header('X-Content-Type-Options: nosniff');
        foreach ($this->headers as $name => $value) {
            header("$name: $value");
        }
        if ($this->status === 204 || $this->body === null) {
            return;
        }
        if ($this->html) {
            header('Content-Type: text/html; charset=utf-8');
            echo $this->body;
            return;
        }
        header('Content-Type: application/json');
        echo json_encode($this->body, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_THROW_ON_ERROR), "\n";
    }
}

/** The parts of the request the handlers need. */
final class Request
{
    private const MAX_BODY = 65536;

    /** @param array<string,string> $cookies */
    public function __construct(
        public readonly string $method,
        public readonly string $route,
        public readonly string $rawBody,
        public readonly array $cookies,
        public readonly ?string $relayKey,
        public readonly string $contentType = 'application/json',
        public readonly string $clientAddress = 'unknown',
        public readonly bool $overTls = false,
        public readonly string $query = '',
        public readonly string $host = '',
    ) {
    }

    public static function fromGlobals(): self
    {
        $route = $_GET['r'] ?? '';
        $raw = (string) file_get_contents('php://input', false, null, 0, self::MAX_BODY + 1);
        if (strlen($raw) > self::MAX_BODY) {
            throw new HttpError(413, 'request body too large');
        }
        $cookies = array_filter($_COOKIE, 'is_string');
        $key = $_SERVER['HTTP_X_RELAY_KEY'] ?? null;
        // Behind TLS: served over HTTPS, or by a proxy that terminated it (which says so).
        $overTls = (($_SERVER['HTTPS'] ?? '') !== '' && ($_SERVER['HTTPS'] ?? '') !== 'off')
            || strtolower((string) ($_SERVER['HTTP_X_FORWARDED_PROTO'] ?? '')) === 'https';
        return new self(
            strtoupper((string) ($_SERVER['REQUEST_METHOD'] ?? 'GET')),
            is_string($route) ? trim($route, '/') : '',
            $raw,
            $cookies,
            is_string($key) ? $key : null,
            (string) ($_SERVER['CONTENT_TYPE'] ?? ''),
            (string) ($_SERVER['REMOTE_ADDR'] ?? 'unknown'),
            $overTls,
            (string) ($_SERVER['QUERY_STRING'] ?? ''),
            (string) ($_SERVER['HTTP_HOST'] ?? ''),
        );
    }

    /**
     * The body as a JSON object. Malformed JSON, or JSON that is not an object, is a 400.
     * An empty body counts as {} only when $emptyIsObject.
     *
     * @return array<string,mixed>
     */
    public function json(bool $emptyIsObject = false): array
    {
        $this->requireJson();
        if (trim($this->rawBody) === '') {
            if ($emptyIsObject) {
                return [];
            }
            throw new HttpError(400, 'request body must be a JSON object');
        }
        try {
            $data = json_decode($this->rawBody, false, 16, JSON_THROW_ON_ERROR);
        } catch (\JsonException) {
            throw new HttpError(400, 'malformed JSON body');
        }
        if (!$data instanceof \stdClass) {
            throw new HttpError(400, 'request body must be a JSON object');
        }
        return get_object_vars($data);
    }

    /**
     * A POST must say its body is JSON. A browser sends a cross-site form (text/plain,
     * urlencoded, multipart) without asking; a cross-site application/json request it sends
     * only after a CORS preflight, which this API never grants: so a page elsewhere cannot
     * make a logged-in person's browser log in, mint a token or get a ticket.
     */
    public function requireJson(): void
    {
        $type = strtolower(trim(explode(';', $this->contentType)[0]));
        if ($this->method === 'POST' && $type !== 'application/json') {
            throw new HttpError(415, 'send the body as JSON, with Content-Type: application/json');
        }
    }
}

/**
 * Answers one request with what $handle returns: an HttpError becomes its status and message,
 * anything else thrown a 500 whose log line names files and hashes at most, never a token,
 * ticket, code or key.
 *
 * @param callable(Request):Response $handle
 */
function serve(callable $handle): void
{
    try {
        $response = $handle(Request::fromGlobals());
    } catch (HttpError $e) {
        $response = Response::error($e);
    } catch (\Throwable $e) {
        error_log('hostapi: ' . get_class($e) . ': ' . $e->getMessage() . ' at ' . $e->getFile() . ':' . $e->getLine());
        $response = Response::error(new HttpError(500, 'internal error'));
    }
    $response->send();
}

/** Timestamps in answers: ISO 8601, UTC, seconds. */
function iso(?int $t): ?string
{
    return $t === null ? null : gmdate('Y-m-d\TH:i:s\Z', $t);
}

/** A url-safe random string of 43 characters (256 bits). */
function randomId(): string
{
    return rtrim(strtr(base64_encode(random_bytes(32)), '+/', '-_'), '=');
}
