-- wrk script: POST /api/attempts/{id}/tool-calls, `crm` / `find_member`
-- with the Prism anchor's arguments (fixtures/bench/prism/post.lua), each
-- request under its attempt's capability (scripts/bench-api.sh).
-- BENCH_ATTEMPTS: a Lua file returning {{id = ..., capability = ...}, ...};
-- BENCH_THREADS: wrk's -t. Thread k takes the attempts k+1, k+1+T, k+1+2T, …
-- in turn, so the two threads never call the same attempt.
local attempts = dofile(os.getenv("BENCH_ATTEMPTS"))
local threads = tonumber(os.getenv("BENCH_THREADS") or "2")
local body = '{"tool":"crm","operation":"find_member","arguments":{"lookup_by":"name","value":"Ann"}}'
local started = 0

function setup(thread)
  thread:set("offset", started)
  started = started + 1
end

function init(args)
  requests = {}
  for i = offset + 1, #attempts, threads do
    local a = attempts[i]
    requests[#requests + 1] = wrk.format("POST", "/api/attempts/" .. a.id .. "/tool-calls", {
      ["Content-Type"] = "application/json",
      ["Authorization"] = "Bearer " .. a.capability,
    }, body)
  end
  next_request = 0
end

function request()
  next_request = next_request % #requests + 1
  return requests[next_request]
end
