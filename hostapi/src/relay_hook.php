<?php
declare(strict_types=1);

namespace HostApi;

/**
 * Tells the relay's authsvc the moment a token or an account stops being good, so that the
 * agent's next request is refused instead of one verify TTL later (HOST-API.md: "the token
 * stops working at the agent's next request"). authsvc answers POST /forget on its operator
 * port (--metrics_listen) to callers holding the relay key, which they prove by signing the body
 * with it (X-Relay-Signature: t=UNIX,v1=HMAC-SHA256(key, "UNIX.BODY")): the key itself never
 * travels, so the hook may be plain http inside a deployment without handing the relay routes
 * to whoever sees its requests.
 *
 * Where: HOSTAPI_RELAY_FORGET_URLS, spaces or commas between (else the file
 * <data>/relay-forget-urls, one per line; else nowhere: cached verdicts then end within
 * authsvc's --verify_ttl). A relay that cannot be reached is logged and skipped: the TTL still
 * bounds what it keeps, and the person's revocation must not fail because of it.
 */
final class RelayHook
{
    /** @return list<string> */
    public static function urls(): array
    {
        return Config::urlList('HOSTAPI_RELAY_FORGET_URLS', 'relay-forget-urls', 'https?');
    }

    public static function forgetToken(string $tokenSha256): void
    {
        self::post(['tokenSha256' => $tokenSha256]);
    }

    public static function forgetUser(string $userName): void
    {
        self::post(['user' => $userName]);
    }

    /** @param array<string,string> $what */
    private static function post(array $what): void
    {
        $key = Config::relayKey();
        if ($key === null) {
            return;
        }
        $body = json_encode($what);
        $at = (string) time();
        $signature = 't=' . $at . ',v1=' . hash_hmac('sha256', $at . '.' . $body, $key);
        foreach (self::urls() as $url) {
            $context = stream_context_create(['http' => [
                'method' => 'POST',
                'header' => "Content-Type: application/json\r\nX-Relay-Signature: {$signature}\r\n",
                'content' => $body,
                'timeout' => 1.0,
                'ignore_errors' => true,
            ]]);
            $answer = @file_get_contents($url, false, $context);
            $status = isset($http_response_header[0]) ? $http_response_header[0] : 'no answer';
            if ($answer === false || !str_contains($status, ' 200 ')) {
                error_log("relay forget hook {$url}: {$status}; the relay keeps the verdict until its TTL");
            }
        }
    }
}
