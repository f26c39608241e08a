<?php
declare(strict_types=1);

// The router script of the reference host API under `php -S`:
//
//   php -S 127.0.0.1:8000 -t hostapi/public hostapi/serve.php
//
// php -S serves no dot-folders and has no routes of its own, so the OAuth authorization
// server's paths (/.well-known/oauth-authorization-server, /oauth/...) are answered here.
// Everything else is left to php -S exactly as without this script (return false):
// /api/index.php?r=ROUTE runs, /editor/ is served as files.

namespace HostApi;

$path = explode('?', (string) ($_SERVER['REQUEST_URI'] ?? '/'), 2)[0];
if (!preg_match('#^/(\.well-known/oauth-authorization-server|oauth/[a-z]+)$#D', $path)) {
    return false;
}

ini_set('display_errors', '0');
ini_set('default_mimetype', ''); // no Content-Type unless there is a body
header_remove('X-Powered-By');
require_once __DIR__ . '/src/bootstrap.php';

serve(fn(Request $request): Response => (new OAuthServer(Store::fromEnv()))->handle($request, $path));
