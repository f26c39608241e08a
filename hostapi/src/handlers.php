<?php
declare(strict_types=1);

namespace HostApi;

/** The route handlers: what each route of HOST-API.md does. */
final class Api
{
    private readonly Users $users;
    private readonly Tokens $tokens;
    private readonly Tickets $tickets;
    private readonly Brake $brake;
    private readonly Sessions $sessions;
    private readonly Counters $counters;
    private readonly TokenFamilies $families;

    public function __construct(Store $store)
    {
        $this->users = new Users($store);
        $this->tokens = new Tokens($store, $this->users);
        $this->tickets = new Tickets($store, $this->users);
        $this->brake = new Brake($store);
        $this->sessions = new Sessions($store, $this->users);
        $this->counters = new Counters($store);
        $this->families = new TokenFamilies($store, $this->users, $this->tokens);
    }

    public function handle(Request $request): Response
    {
        $router = new Router();
        $router->add('login', 'login', false, ['POST' => $this->login(...)]);
        $router->add('relay-config', 'relay-config', false, ['GET' => $this->relayConfig(...)]);
        $router->add('agent-tokens', 'agent-tokens', false, ['GET' => $this->listTokens(...), 'POST' => $this->createToken(...)]);
        $router->add('agent-tokens/([0-9]{1,9})', 'agent-tokens-id', false, ['DELETE' => $this->deleteToken(...)]);
        $router->add('agent/ticket', 'agent-ticket', false, ['POST' => $this->ticket(...)]);
        $router->add('agent/verify', 'agent-verify', true, ['POST' => $this->verify(...)]);
        $router->add('agent/redeem', 'agent-redeem', true, ['POST' => $this->redeem(...)]);
        return $router->dispatch($request, $this->counters);
    }

    private function login(Request $request): Response
    {
        $body = $request->json();
        $name = $body['username'] ?? null;
        $password = $body['password'] ?? null;
        // The brake, per address and account name: five wrong passwords for one account
        // from one address within 15 minutes hold that pair off for 15 minutes (a guesser
        // cannot lock an account out for people elsewhere; behind a proxy every person
        // shares its address, and the pair is then the account).
        // Names of no account share one record per address, so that made-up names cannot
        // fill the disk with brake records.
        $known = is_string($name) && $this->users->get($name) !== null;
        $brakeKey = 'login ' . Brake::normalise($request->clientAddress) . ' ' . ($known ? strtolower($name) : '*');
        $locked = $this->brake->lockedFor($brakeKey);
        if ($locked > 0) {
            throw new HttpError(429, 'too many wrong passwords; try again later', ['Retry-After' => (string) $locked]);
        }
        $user = is_string($name) && is_string($password) ? $this->users->authenticate($name, $password) : null;
        if ($user === null) {
            $this->brake->fail($brakeKey);
            throw new HttpError(401, 'wrong user name or password');
        }
        $cookie = $this->sessions->start($user, $request->overTls);
        return new Response(200, ['user' => $user['name'], 'role' => $user['role']], ['Set-Cookie' => $cookie]);
    }

    /** Public: which relay the editor page uses (no secret in it). */
    private function relayConfig(Request $request): Response
    {
        return Response::json(['relayUrls' => Config::relayUrls()]);
    }

    private function listTokens(Request $request): Response
    {
        $user = $this->sessions->require($request);
        return Response::json($this->tokens->listFor($user['name']));
    }

    private function createToken(Request $request): Response
    {
        $user = $this->sessions->require($request);
        $body = $request->json();
        [$record, $token] = $this->tokens->mint($user['name'], $body['name'] ?? null, $body['days'] ?? null);
        return Response::json($record + ['token' => $token], 201);
    }

    /** @param list<string> $params */
    private function deleteToken(Request $request, array $params): Response
    {
        $user = $this->sessions->require($request);
        $record = $this->tokens->revoke($user['name'], (int) $params[0]);
        if ($record === null) {
            throw new HttpError(404, 'no such token');
        }
        // A signed-in client's token: its refresh token ends too, or the client would
        // refresh its way back.
        if (is_string($record['family'] ?? null)) {
            $this->families->end($record['family']);
        }
        return Response::noContent();
    }

    private function ticket(Request $request): Response
    {
        $user = $this->sessions->require($request);
        return Response::json(['ticket' => $this->tickets->mint($user), 'expiresIn' => Tickets::LIFETIME]);
    }

    private function verify(Request $request): Response
    {
        $body = $request->json();
        $address = $body['address'] ?? null;
        if ($address !== null && !is_string($address)) {
            throw new HttpError(400, 'address must be a string');
        }
        $address = Brake::normalise($address);
        $locked = $this->brake->lockedFor($address);
        if ($locked > 0) {
            throw new HttpError(429, 'too many wrong tokens from this address; try again later', ['Retry-After' => (string) $locked]);
        }
        $token = $body['token'] ?? null;
        $found = is_string($token) ? $this->tokens->verifyToken($token) : null;
        if ($found === null) {
            // The brake is for guessed tokens. A signed-in agent meets its lapsed access token
            // once an hour before it refreshes, and must not lock its address out by that.
            if (!is_string($token) || !$this->tokens->lapsed($token)) {
                $this->brake->fail($address);
            }
            throw new HttpError(401, 'unknown, expired or revoked token');
        }
        $user = $found['user'];
        // The resource (RFC 8707) the token was issued for; a dialog token's is the relay
        // the application is configured with (the first of HOSTAPI_RESOURCES), if any.
        $resource = $found['record']['resource'] ?? Config::resources()[0] ?? null;
        return Response::json(['user' => $user['name'], 'role' => $user['role']] + ($resource === null ? [] : ['resource' => $resource]));
    }

    private function redeem(Request $request): Response
    {
        $body = $request->json();
        $ticket = $body['ticket'] ?? null;
        $user = is_string($ticket) ? $this->tickets->redeem($ticket) : null;
        if ($user === null) {
            throw new HttpError(401, 'unknown, used or expired ticket');
        }
        return Response::json(['user' => $user['name'], 'role' => $user['role']]);
    }
}
