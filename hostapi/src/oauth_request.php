<?php
declare(strict_types=1);

namespace HostApi;

/**
 * An OAuth error answer (RFC 6749 §5.2, RFC 7591 §3.2.2): {"error", "error_description"}.
 * The description names parameters and limits, never a value the client sent.
 */
final class OAuthError extends \RuntimeException
{
    /** @param array<string,string> $headers */
    public function __construct(
        public readonly string $error,
        string $description,
        public readonly int $status = 400,
        public readonly array $headers = [],
    ) {
        parent::__construct($description);
    }

    public function response(): Response
    {
        return new Response($this->status, ['error' => $this->error, 'error_description' => $this->getMessage()], $this->headers);
    }
}

/**
 * An error of the authorization endpoint that goes back to the client's redirect URI (RFC 6749
 * §4.1.2.1): thrown only after the client and the redirect URI were found good.
 */
final class OAuthRedirect extends \RuntimeException
{
    public function __construct(public readonly string $url)
    {
        parent::__construct('redirect');
    }
}

/**
 * OAuth parameters of a query string or a form-encoded body, parsed by hand: PHP's own parser
 * keeps the last of repeated names and turns `a[]=` into arrays, where RFC 6749 §3.1 says a
 * parameter must not be sent twice (resource excepted: RFC 8707) and one sent without a value
 * counts as absent.
 */
final class OAuthParams
{
    public const NOT_SERVED = 'this server no longer issues tokens for this sign-in\'s resource';

    /** @param array<string,list<string>> $values */
    private function __construct(private readonly array $values)
    {
    }

    public static function fromQuery(string $raw): self
    {
        $values = [];
        foreach (explode('&', $raw) as $pair) {
            [$name, $value] = array_pad(explode('=', $pair, 2), 2, '');
            $name = urldecode($name);
            $value = urldecode($value);
            if ($name !== '' && $value !== '') {
                $values[$name][] = $value;
            }
        }
        return new self($values);
    }

    /** The body of a token or revocation request, which must be form-encoded (RFC 6749 §3.2). */
    public static function fromForm(Request $request): self
    {
        $type = strtolower(trim(explode(';', $request->contentType)[0]));
        if ($type !== 'application/x-www-form-urlencoded') {
            throw new OAuthError('invalid_request', 'send the parameters form-encoded, with Content-Type: application/x-www-form-urlencoded');
        }
        return self::fromQuery($request->rawBody);
    }

    /**
     * The consent of the authorization page: the original parameters as JSON strings.
     *
     * @param array<string,mixed> $json
     */
    public static function fromJson(array $json): self
    {
        $values = [];
        foreach ($json as $name => $value) {
            if (!is_string($value)) {
                throw new OAuthError('invalid_request', "$name must be a string");
            }
            if ($value !== '') {
                $values[(string) $name] = [$value];
            }
        }
        return new self($values);
    }

    /** The parameter's value, null when absent; twice or over $max bytes: invalid_request. */
    public function one(string $name, int $max = 2000): ?string
    {
        $values = $this->values[$name] ?? [];
        if (count($values) > 1) {
            throw new OAuthError('invalid_request', "$name was given more than once");
        }
        if ($values !== [] && strlen($values[0]) > $max) {
            throw new OAuthError('invalid_request', "$name is longer than $max characters");
        }
        return $values[0] ?? null;
    }

    public function required(string $name, int $max = 2000): string
    {
        return $this->one($name, $max) ?? throw new OAuthError('invalid_request', "$name is required");
    }

    /**
     * The one resource asked for (RFC 8707), or null. The parameter may repeat; a token here
     * is for one resource, so two different ones are invalid_target.
     */
    public function resource(): ?string
    {
        $values = array_values(array_unique($this->values['resource'] ?? []));
        if (count($values) > 1) {
            throw new OAuthError('invalid_target', 'ask for one resource per token');
        }
        if ($values !== [] && strlen($values[0]) > 2000) {
            throw new OAuthError('invalid_target', 'resource is longer than 2000 characters');
        }
        return $values[0] ?? null;
    }

    /**
     * The resource a token will be bound to: the one asked for, which must be one of
     * HOSTAPI_RESOURCES exactly (RFC 8707), else the first of them. Without HOSTAPI_RESOURCES
     * no token is issued at all (signInOff()): a relay without --public_url accepts a token
     * for any resource, so one issued for a server that names this host as its authorization
     * server (and phished by it) would work at the relay.
     */
    public static function checkResource(?string $resource): string
    {
        $allowed = Config::resources();
        if ($allowed === []) {
            throw self::signInOff();
        }
        if ($resource === null) {
            return $allowed[0];
        }
        if (!in_array($resource, $allowed, true)) {
            $why = 'this server issues no tokens for that resource';
            throw new OAuthError('invalid_target', $why);
        }
        return $resource;
    }

    /** Whether tokens may still be issued for $resource (of a code or a sign-in). */
    public static function served(mixed $resource): bool
    {
        return is_string($resource) && in_array($resource, Config::resources(), true);
    }

    public static function signInOff(): OAuthError
    {
        return new OAuthError('invalid_target', 'sign-in is off: this host API names no relay.'
            . ' Its operator must set HOSTAPI_RESOURCES to the relay\'s public MCP URL'
            . ' (its --public_url)');
    }
}
