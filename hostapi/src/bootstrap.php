<?php
declare(strict_types=1);

namespace HostApi;

require_once __DIR__ . '/config.php';
require_once __DIR__ . '/storage.php';
require_once __DIR__ . '/http.php';
require_once __DIR__ . '/users.php';
require_once __DIR__ . '/tokens.php';
require_once __DIR__ . '/relay_hook.php';
require_once __DIR__ . '/tickets.php';
require_once __DIR__ . '/brake.php';
require_once __DIR__ . '/counters.php';
require_once __DIR__ . '/sessions.php';
require_once __DIR__ . '/router.php';
require_once __DIR__ . '/handlers.php';
require_once __DIR__ . '/oauth_request.php';
require_once __DIR__ . '/oauth_urls.php';
require_once __DIR__ . '/oauth_client_metadata.php';
require_once __DIR__ . '/oauth_clients.php';
require_once __DIR__ . '/oauth_codes.php';
require_once __DIR__ . '/oauth_families.php';
require_once __DIR__ . '/authorize_page.php';
require_once __DIR__ . '/oauth_server.php';

// Every warning is an error: a failed file operation must not pass silently.
set_error_handler(static function (int $severity, string $message, string $file, int $line): bool {
    if (!(error_reporting() & $severity)) {
        return false; // silenced with @
    }
    throw new \ErrorException($message, 0, $severity, $file, $line);
});
