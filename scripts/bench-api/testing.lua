-- wrk script: GET /api/tools/{id}/testing with a JWT (scripts/bench-api.sh).
-- BENCH_TOOL_ID: the tool; BENCH_TOKEN: a token with AIManager:ManageTools.
wrk.method = "GET"
wrk.path = "/api/tools/" .. os.getenv("BENCH_TOOL_ID") .. "/testing"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN")
