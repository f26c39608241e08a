<?php
declare(strict_types=1);

namespace HostApi;

/**
 * The pages of the authorization endpoint: an error that cannot go back to the client, the
 * sign-in form, and the consent screen. Plain HTML with the script and style of src/page/
 * inlined; the Content-Security-Policy allows exactly those (by their SHA-256) and no framing,
 * so that another site can neither run code here nor make the person click Allow unseen.
 *
 * Element ids (the end-to-end tests use them): sign-in #username, #password, #login;
 * consent #client-name, #redirect-uri, #account, #allow, #deny; any message #message.
 */
final class AuthorizePage
{
    public static function error(OAuthError $e): Response
    {
        return self::page(400, 'This sign-in cannot go on', '<p class="muted">' . self::h($e->error) . '</p>'
            . '<p id="message" class="error" role="alert">' . self::h(ucfirst($e->getMessage()) . '.') . '</p>'
            . '<p class="small muted">Go back to the agent and try again; if it keeps failing,'
            . ' the agent\'s maker or this site must fix it.</p>');
    }

    /** @param array<string,mixed> $ask the checked authorization request */
    public static function login(array $ask): Response
    {
        $client = self::clientLine($ask['client']);
        return self::page(200, 'Sign in', '<p><strong id="client-name">' . $client . '</strong>'
            . ' asks to work in your editor tabs. Sign in first; you can then allow or deny it.</p>'
            . '<form id="login-form" novalidate>'
            . '<label for="username">User name</label><input id="username" name="username" autocomplete="username" required>'
            . '<label for="password">Password</label>'
            . '<input id="password" name="password" type="password" autocomplete="current-password" required>'
            . '<button type="submit" id="login">Sign in</button>'
            . '<p id="message" class="error" role="alert"></p></form>');
    }

    /**
     * @param array<string,mixed> $ask the checked authorization request
     * @param array<string,mixed> $user the signed-in account
     */
    public static function consent(array $ask, array $user): Response
    {
        $client = $ask['client'];
        $origin = $client['kind'] === 'metadata'
            ? 'Its name comes from ' . $client['host'] . '.'
            : 'It registered itself with this site: its name is not verified.';
        $line = self::clientLine($client);
        $resource = $ask['resource'] !== null
            ? '<dt>Through</dt><dd><code id="resource">' . self::h($ask['resource']) . '</code></dd>' : '';
        return self::page(200, 'Allow this agent?', '<dl>'
            . '<dt>Agent</dt><dd><strong id="client-name">' . $line . '</strong>'
            . '<br><span class="small muted">' . self::h($origin) . '</span></dd>'
            . '<dt>Returns to</dt><dd><code id="redirect-uri">' . self::h($ask['redirectUri']) . '</code></dd>'
            . '<dt>Account</dt><dd id="account">' . self::h((string) $user['name']) . '</dd>'
            . $resource . '</dl>'
            . '<p>If you allow it, it may <strong>work in your open editor tabs: see and change what you see</strong>'
            . ' while the agent switch of a tab is on, until you revoke it under Agent tokens.</p>'
            . '<div class="row"><button type="button" id="deny">Deny</button><button type="button" id="allow">Allow</button></div>'
            . '<p id="message" class="error" role="alert"></p>');
    }

    /**
     * The client's name and what vouches for it, as HTML. The name is the client's own word,
     * so it is in a <bdi>: a right-to-left name cannot pull "(unverified)" or the host into
     * itself. (Bidi controls and other format characters are refused: OAuthClients::goodName.)
     *
     * @param array<string,mixed> $client
     */
    private static function clientLine(array $client): string
    {
        $name = '<bdi>' . self::h((string) $client['name']) . '</bdi>';
        if ($client['kind'] === 'metadata') {
            $host = self::h((string) $client['host']);
            return $client['name'] === $client['host'] ? $name : $name . ' (' . $host . ')';
        }
        return $name . ' (unverified)';
    }

    private static function page(int $status, string $title, string $main): Response
    {
        $script = self::asset('authorize.js');
        $style = self::asset('authorize.css');
        $html = "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            . "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            . "<meta name=\"referrer\" content=\"no-referrer\">\n"
            . '<title>' . self::h($title) . "</title>\n<style>" . $style . "</style>\n</head>\n<body>\n<main>\n"
            . '<h1>' . self::h($title) . "</h1>\n" . $main . "\n</main>\n<script>" . $script . "</script>\n</body>\n</html>\n";
        return Response::page($html, $status, [
            'Content-Security-Policy' => "default-src 'none'; script-src '" . self::sha256($script) . "'; style-src '"
                . self::sha256($style) . "'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
            'X-Frame-Options' => 'DENY',
            'Referrer-Policy' => 'no-referrer',
            'Cache-Control' => 'no-store',
        ]);
    }

    private static function asset(string $name): string
    {
        return (string) file_get_contents(__DIR__ . '/page/' . $name);
    }

    private static function sha256(string $text): string
    {
        return 'sha256-' . base64_encode(hash('sha256', $text, true));
    }

    private static function h(string $text): string
    {
        return htmlspecialchars($text, ENT_QUOTES | ENT_SUBSTITUTE | ENT_HTML5, 'UTF-8');
    }
}
