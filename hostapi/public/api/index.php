<?php
declare(strict_types=1);

// The reference host API's front controller: /api/index.php?r=ROUTE, JSON in, JSON out.

namespace HostApi;

ini_set('display_errors', '0');
ini_set('default_mimetype', ''); // no Content-Type unless there is a JSON body
header_remove('X-Powered-By');
require_once dirname(__DIR__, 2) . '/src/bootstrap.php';

try {
    $response = (new Api(Store::fromEnv()))->handle(Request::fromGlobals());
} catch (HttpError $e) {
    $response = Response::error($e);
} catch (\Throwable $e) {
    // The message names files and hashes at most, never a token, ticket or key.
    error_log('hostapi: ' . get_class($e) . ': ' . $e->getMessage() . ' at ' . $e->getFile() . ':' . $e->getLine());
    $response = Response::error(new HttpError(500, 'internal error'));
}
$response->send();
