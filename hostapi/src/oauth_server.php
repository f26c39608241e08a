<?php
declare(strict_types=1);

namespace HostApi;

/**
 * The OAuth 2.1 authorization server of HOST-API.md "Agents that sign in": its endpoints, by
 * path (serve.php routes them here). The parts: OAuthClients (who asks), AuthorizationCodes,
 * TokenFamilies (what a sign-in issues), AuthorizePage (what the person sees).
 *
 * CORS: the metadata, token, registration and revocation endpoints answer any origin, because
 * browser-based clients call them cross-origin and none of them reads a cookie. The
 * authorization endpoint does not: its POST acts on the person's session.
 */
final class OAuthServer
{
    /** path => request counter */
    public const PATHS = [
        '/.well-known/oauth-authorization-server' => 'oauth-metadata',
        '/oauth/authorize' => 'oauth-authorize',
        '/oauth/token' => 'oauth-token',
        '/oauth/register' => 'oauth-register',
        '/oauth/revoke' => 'oauth-revoke',
    ];

    private readonly Sessions $sessions;
    private readonly Tokens $tokens;
    private readonly OAuthClients $clients;
    private readonly AuthorizationCodes $codes;
    private readonly TokenFamilies $families;
    private readonly Counters $counters;
    private readonly Brake $rate;

    public function __construct(Store $store)
    {
        $users = new Users($store);
        $this->sessions = new Sessions($store, $users);
        $this->tokens = new Tokens($store, $users);
        $this->clients = new OAuthClients($store, new ClientMetadata($store));
        $this->codes = new AuthorizationCodes($store);
        $this->families = new TokenFamilies($store, $users, $this->tokens);
        $this->counters = new Counters($store);
        $this->rate = Brake::rate($store);
    }

    public function handle(Request $request, string $path): Response
    {
        $counter = self::PATHS[$path] ?? throw Router::notFound();
        $this->counters->increment($counter);
        $cors = $path !== '/oauth/authorize';
        $methods = $path === '/.well-known/oauth-authorization-server' ? ['GET']
            : ($path === '/oauth/authorize' ? ['GET', 'POST'] : ['POST']);
        if ($cors && $request->method === 'OPTIONS') {
            return self::preflight($methods);
        }
        if (!in_array($request->method, $methods, true)) {
            throw new HttpError(405, 'method not allowed', ['Allow' => implode(', ', $methods)]);
        }
        try {
            $response = match ($path) {
                '/.well-known/oauth-authorization-server' => $this->metadata($request),
                '/oauth/authorize' => $request->method === 'GET' ? $this->authorizePage($request) : $this->consent($request),
                '/oauth/token' => $this->token($request),
                '/oauth/register' => $this->register($request),
                '/oauth/revoke' => $this->revoke($request),
            };
        } catch (OAuthError $e) {
            $response = $e->response();
        }
        return $cors ? self::withCors($response) : $response;
    }

    /**
     * RFC 8414. Cacheable only when HOSTAPI_ISSUER names the issuer: else it comes from the
     * request's Host and X-Forwarded-Proto, and a shared cache could keep an answer made from
     * one client's headers for everyone.
     */
    private function metadata(Request $request): Response
    {
        $issuer = Config::issuer($request);
        $cache = Config::issuerConfigured() ? 'public, max-age=300' : 'no-store';
        return new Response(200, [
            'issuer' => $issuer,
            'authorization_endpoint' => $issuer . '/oauth/authorize',
            'token_endpoint' => $issuer . '/oauth/token',
            'registration_endpoint' => $issuer . '/oauth/register',
            'revocation_endpoint' => $issuer . '/oauth/revoke',
            'response_types_supported' => ['code'],
            'grant_types_supported' => ['authorization_code', 'refresh_token'],
            'code_challenge_methods_supported' => ['S256'],
            'token_endpoint_auth_methods_supported' => ['none'],
            'revocation_endpoint_auth_methods_supported' => ['none'],
            'client_id_metadata_document_supported' => true,
            'authorization_response_iss_parameter_supported' => true,
        ], ['Cache-Control' => $cache]);
    }

    // ------------------------------------------------------------------ authorization endpoint

    /** GET: checks the request, then the sign-in form or the consent screen. */
    private function authorizePage(Request $request): Response
    {
        $issuer = Config::issuer($request);
        try {
            $params = OAuthParams::fromQuery($request->query);
            $ask = $this->authorizationRequest($params, $issuer, $request);
        } catch (OAuthError $e) {
            return AuthorizePage::error($e);
        } catch (OAuthRedirect $r) {
            return new Response(302, null, ['Location' => $r->url, 'Referrer-Policy' => 'no-referrer']);
        }
        try {
            $user = $this->sessions->require($request);
        } catch (HttpError) {
            return AuthorizePage::login($ask);
        }
        return AuthorizePage::consent($ask, $user);
    }

    /**
     * POST (JSON, from the page's script): the person's decision, with the request's own
     * parameters, all checked again; answers {"redirect": URL} for the script to go to.
     */
    private function consent(Request $request): Response
    {
        $issuer = Config::issuer($request);
        $body = $request->json();
        $decision = $body['decision'] ?? null;
        unset($body['decision']);
        try {
            $ask = $this->authorizationRequest(OAuthParams::fromJson($body), $issuer, $request);
        } catch (OAuthRedirect $r) {
            return Response::json(['redirect' => $r->url]);
        }
        $user = $this->sessions->require($request);
        if ($decision !== 'allow' && $decision !== 'deny') {
            throw new OAuthError('invalid_request', 'decision must be "allow" or "deny"');
        }
        $back = fn(array $params): Response => Response::json(['redirect' => RedirectUris::with(
            $ask['redirectUri'],
            $params + ['state' => $ask['state'], 'iss' => $issuer],
        )]);
        if ($decision === 'deny') {
            return $back(['error' => 'access_denied', 'error_description' => 'the person denied the request']);
        }
        if (count($this->tokens->listFor((string) $user['name'])) >= Tokens::MAX_PER_USER) {
            return $back(['error' => 'access_denied', 'error_description' => 'at most ' . Tokens::MAX_PER_USER
                . ' tokens per account; delete one in Agent tokens first']);
        }
        $code = $this->codes->mint([
            'client' => ['id' => $ask['client']['id'], 'name' => $ask['client']['name']],
            'redirectUri' => $ask['redirectUri'],
            'challenge' => $ask['challenge'],
            'resource' => $ask['resource'],
            'user' => $user['name'],
            'uid' => $user['uid'],
            'generation' => $user['generation'],
        ]);
        return $back(['code' => $code]);
    }

    /**
     * The checked authorization request: {client, redirectUri, state, challenge, resource}.
     * Without HOSTAPI_RESOURCES sign-in is off, which the person is told before anything else
     * (no client metadata document is fetched). Then the client and the redirect URI: until
     * both are known good, an error is shown to the person (OAuthError), never sent to a
     * redirect URI; after that, errors go back to the client (OAuthRedirect) with state and iss.
     *
     * @return array<string,mixed>
     */
    private function authorizationRequest(OAuthParams $params, string $issuer, Request $req): array
    {
        if (Config::resources() === []) {
            throw OAuthParams::signInOff();
        }
        $client = $this->clients->find($params->required('client_id'), $req->clientAddress);
        $redirect = $params->required('redirect_uri', RedirectUris::MAX_LENGTH);
        if (!RedirectUris::matches($redirect, $client['redirectUris'])) {
            throw new OAuthError('invalid_request', 'redirect_uri is not one the client registered');
        }
        $state = $params->one('state', 1024);
        $back = fn(string $error, string $description): OAuthRedirect => new OAuthRedirect(RedirectUris::with($redirect, [
            'error' => $error,
            'error_description' => $description,
            'state' => $state,
            'iss' => $issuer,
        ]));
        try {
            $type = $params->one('response_type', 100);
            if ($type !== 'code') {
                throw $type === null
                    ? $back('invalid_request', 'response_type is required')
                    : $back('unsupported_response_type', 'only response_type=code is supported');
            }
            $challenge = $params->one('code_challenge', 128);
            if ($challenge === null) {
                throw $back('invalid_request', 'PKCE is required: send code_challenge with code_challenge_method=S256');
            }
            // Without a method RFC 7636 means "plain", which OAuth 2.1 does not allow either.
            if ($params->one('code_challenge_method', 100) !== 'S256') {
                throw $back('invalid_request', 'code_challenge_method must be S256');
            }
            if (!preg_match('/^[A-Za-z0-9_-]{43}$/D', $challenge)) {
                throw $back('invalid_request', 'code_challenge must be 43 characters of base64url (an S256 hash)');
            }
            $resource = OAuthParams::checkResource($params->resource());
        } catch (OAuthError $e) {
            throw $back($e->error, $e->getMessage());
        }
        return ['client' => $client, 'redirectUri' => $redirect, 'state' => $state, 'challenge' => $challenge, 'resource' => $resource];
    }

    // ------------------------------------------------------------------ token endpoint

    private function token(Request $request): Response
    {
        $params = OAuthParams::fromForm($request);
        if ($params->one('client_secret') !== null) {
            throw new OAuthError('invalid_client', 'clients here are public: send client_id and no client_secret', 401);
        }
        $answer = match ($params->required('grant_type', 100)) {
            'authorization_code' => $this->exchangeCode($params),
            'refresh_token' => $this->refresh($params),
            default => throw new OAuthError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token'),
        };
        return new Response(200, $answer, ['Pragma' => 'no-cache']);
    }

    /** @return array<string,mixed> */
    private function exchangeCode(OAuthParams $params): array
    {
        $code = $params->required('code', 200);
        $redirect = $params->required('redirect_uri', RedirectUris::MAX_LENGTH);
        $clientId = $params->required('client_id');
        $verifier = $params->required('code_verifier', 128);
        if (!preg_match('/^[A-Za-z0-9._~-]{43,128}$/D', $verifier)) {
            throw new OAuthError('invalid_request', 'code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~');
        }
        $resource = $params->resource();
        // The family's id is chosen before the code is consumed, and the code's file becomes
        // its used-code record at once (take()): a second use of the code from that instant
        // finds the family to end, however far this request has got (see start()).
        $handle = TokenFamilies::newHandle();
        $grant = $this->codes->take($code, TokenFamilies::idOf($handle));
        if ($grant === null) {
            $used = $this->codes->reuse($code);
            if ($used !== null) {
                if (is_string($used['family'] ?? null)) {
                    $this->families->end($used['family']);
                }
                throw new OAuthError('invalid_grant', AuthorizationCodes::REUSED);
            }
            throw new OAuthError('invalid_grant', 'unknown, used or expired code');
        }
        // The code is used up from here on, whatever follows: a wrong verifier cannot be retried.
        if ((int) $grant['expiresAt'] <= time()) {
            throw new OAuthError('invalid_grant', 'unknown, used or expired code');
        }
        if (($grant['client']['id'] ?? null) !== $clientId) {
            throw new OAuthError('invalid_grant', 'the code was issued to another client');
        }
        if ($grant['redirectUri'] !== $redirect) {
            throw new OAuthError('invalid_grant', 'redirect_uri differs from the authorization request\'s');
        }
        if (!hash_equals((string) $grant['challenge'], self::s256($verifier))) {
            throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
        }
        if ($resource !== null && $resource !== $grant['resource']) {
            throw new OAuthError('invalid_target', 'resource differs from the authorization request\'s');
        }
        if (!OAuthParams::served($grant['resource'])) {
            throw new OAuthError('invalid_target', OAuthParams::NOT_SERVED);
        }
        $reused = fn(): bool => $this->codes->reused($code);
        $answer = $this->families->start($grant, $handle, $reused);
        $this->clients->markUsed($clientId);
        return $answer;
    }

    /** @return array<string,mixed> */
    private function refresh(OAuthParams $params): array
    {
        $token = $params->required('refresh_token', 200);
        $clientId = $params->required('client_id');
        $answer = $this->families->refresh($token, $clientId, $params->resource());
        $this->clients->markUsed($clientId);
        return $answer;
    }

    // ------------------------------------------------------------------ registration, revocation

    /**
     * RFC 7591. At most Brake::RATE_MAX registrations per address in RATE_WINDOW seconds, then
     * 429 with Retry-After; the body is {"error": "temporarily_unavailable", ...} like the 503
     * past MAX_CLIENTS (an extension: RFC 7591 names no error for either).
     */
    private function register(Request $request): Response
    {
        try {
            $body = $request->json();
        } catch (HttpError $e) {
            throw new OAuthError('invalid_client_metadata', $e->getMessage());
        }
        $key = 'register ' . Brake::normalise($request->clientAddress);
        $locked = $this->rate->lockedFor($key);
        if ($locked > 0) {
            $why = 'too many registrations from this address; try again later';
            $retry = ['Retry-After' => (string) $locked];
            throw new OAuthError('temporarily_unavailable', $why, 429, $retry);
        }
        $answer = $this->clients->register($body);
        $this->rate->fail($key); // counts registrations made: refused ones cost nothing
        return new Response(201, $answer);
    }

    /** RFC 7009: 200 whether or not the token was known. */
    private function revoke(Request $request): Response
    {
        $params = OAuthParams::fromForm($request);
        $token = $params->required('token', 2000);
        $params->one('token_type_hint', 100); // a hint only: both kinds are told apart by their prefix
        $this->families->revoke($token, $params->one('client_id'));
        return new Response(200);
    }

    // ------------------------------------------------------------------ helpers

    private static function s256(string $verifier): string
    {
        return rtrim(strtr(base64_encode(hash('sha256', $verifier, true)), '+/', '-_'), '=');
    }

    /** @param list<string> $methods */
    private static function preflight(array $methods): Response
    {
        return new Response(204, null, [
            'Access-Control-Allow-Origin' => '*',
            'Access-Control-Allow-Methods' => implode(', ', [...$methods, 'OPTIONS']),
            'Access-Control-Allow-Headers' => 'Content-Type, Authorization, MCP-Protocol-Version',
            'Access-Control-Max-Age' => '600',
        ]);
    }

    private static function withCors(Response $response): Response
    {
        return new Response($response->status, $response->body, $response->headers + ['Access-Control-Allow-Origin' => '*'], $response->html);
    }
}
