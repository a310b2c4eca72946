-- wrk script: `crm` / `find_member` with the Prism anchor's arguments
-- (fixtures/bench/prism/post.lua), each request under its attempt's
-- capability (scripts/bench-api.sh), through one of the two surfaces:
-- BENCH_SURFACE=tool-calls (default): POST /api/attempts/{id}/tool-calls;
-- BENCH_SURFACE=mcp: POST /api/attempts/{id}/mcp, one JSON-RPC `tools/call`
-- (streamable HTTP, stateless, JSON answers).
-- BENCH_ATTEMPTS: a Lua file returning {{id = ..., capability = ...}, ...};
-- BENCH_THREADS: wrk's -t. Thread k takes the attempts k+1, k+1+T, k+1+2T, …
-- in turn, so the two threads never call the same attempt.
local attempts = dofile(os.getenv("BENCH_ATTEMPTS"))
local threads = tonumber(os.getenv("BENCH_THREADS") or "2")
local surface = os.getenv("BENCH_SURFACE") or "tool-calls"
local arguments = '{"lookup_by":"name","value":"Ann"}'
local bodies = {
  ["tool-calls"] = '{"tool":"crm","operation":"find_member","arguments":' .. arguments .. '}',
  mcp = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"find_member","arguments":'
    .. arguments .. '}}',
}
local body = assert(bodies[surface], "BENCH_SURFACE is tool-calls or mcp")
local started = 0

function setup(thread)
  thread:set("offset", started)
  started = started + 1
end

function init(args)
  requests = {}
  for i = offset + 1, #attempts, threads do
    local a = attempts[i]
    requests[#requests + 1] = wrk.format("POST", "/api/attempts/" .. a.id .. "/" .. surface, {
      ["Content-Type"] = "application/json",
      ["Accept"] = "application/json, text/event-stream",
      ["Authorization"] = "Bearer " .. a.capability,
    }, body)
  end
  next_request = 0
end

function request()
  next_request = next_request % #requests + 1
  return requests[next_request]
end
