-- wrk script for e2e/load/run.sh: cycles through the request targets in the
-- file named by WRK_PATHS (one per line). Thread k of WRK_THREADS starts at
-- k/WRK_THREADS of the list, so with at least as many targets as
-- connections the requests in flight name distinct sources. done() prints
-- one machine-readable line:
--   RESULT <requests> <req/s> <p50 ms> <p99 ms> <non-2xx/3xx> <socket errors>

local paths = {}
for line in io.lines(os.getenv("WRK_PATHS")) do
  if #line > 0 then paths[#paths + 1] = line end
end
local nthreads = tonumber(os.getenv("WRK_THREADS") or "1")
local counter = 1
local created = 0

function setup(thread)
  thread:set("id", created)
  created = created + 1
end

function init(args)
  counter = (id or 0) * math.floor(#paths / nthreads) % #paths + 1
end

function request()
  local p = paths[counter]
  counter = counter % #paths + 1
  return wrk.format("GET", p)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %.2f %.1f %.1f %d %d\n",
    summary.requests, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    e.status, e.connect + e.read + e.write + e.timeout))
end
