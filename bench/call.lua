-- wrk script: one MCP tools/call per request, with the bearer and session of the benchmark.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN")
wrk.headers["Mcp-Session-Id"] = os.getenv("BENCH_SESSION")
wrk.headers["MCP-Protocol-Version"] = "2025-06-18"
local method = os.getenv("BENCH_METHOD") or "tools/call"
if method == "ping" then
  wrk.body = '{"jsonrpc":"2.0","id":1,"method":"ping"}'
else
  wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_view","arguments":{}}}'
end

local errors = 0
response = function(status, headers, body)
  if status ~= 200 or not string.find(body, '"result"', 1, true) or string.find(body, '"isError"', 1, true) then
    errors = errors + 1
  end
end

done = function(summary, latency, requests)
  io.write(string.format("calls: %d in %.1f s = %.0f calls/s; latency p50 %.2f ms, p99 %.2f ms; bad answers in this thread's last batch: %d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, errors))
end
