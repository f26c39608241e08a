<?php
declare(strict_types=1);

// The reference host API's front controller: /api/index.php?r=ROUTE, JSON in, JSON out.

namespace HostApi;

ini_set('display_errors', '0');
ini_set('default_mimetype', ''); // no Content-Type unless there is a JSON body
header_remove('X-Powered-By');
require_once dirname(__DIR__, 2) . '/src/bootstrap.php';

serve(fn(Request $request): Response => (new Api(Store::fromEnv()))->handle($request));
