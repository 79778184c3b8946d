-- wrk script for e2e/load/mixed.sh: replays the request list in the file
-- named by WRK_PATHS (one target a line, in order). Thread k of WRK_THREADS
-- walks its own contiguous slice k of the list, from its start, so the
-- threads together replay the list's first requests of every slice, each
-- slice in the order it was drawn; a slice wraps round only when the run
-- outlasts it. Responses whose header WRK_HIT_HEADER (default
-- X-Service-TransformationCache, compared case-insensitively) is "Hit" are
-- counted. done() prints one machine-readable line:
--   RESULT <requests> <req/s> <p50 ms> <p99 ms> <non-2xx/3xx> <socket errors> <hits> <wrapped>

local paths = {}
for line in io.lines(os.getenv("WRK_PATHS")) do
  if #line > 0 then paths[#paths + 1] = line end
end
local nthreads = tonumber(os.getenv("WRK_THREADS") or "1")
local hitHeader = string.lower(os.getenv("WRK_HIT_HEADER") or "X-Service-TransformationCache")
local threads = {}
local mine = {}
local counter = 1
hits = 0
wrapped = 0

function setup(thread)
  thread:set("id", #threads)
  threads[#threads + 1] = thread
end

function init(args)
  local k = (id or 0) % nthreads
  local per = math.floor(#paths / nthreads)
  for i = k * per + 1, (k + 1) * per do mine[#mine + 1] = paths[i] end
  if #mine == 0 then mine = paths end
end

function request()
  local p = mine[counter]
  counter = counter + 1
  if counter > #mine then
    counter = 1
    wrapped = 1
  end
  return wrk.format("GET", p)
end

function response(status, headers, body)
  for k, v in pairs(headers) do
    if v == "Hit" and string.lower(k) == hitHeader then
      hits = hits + 1
      return
    end
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  local h, w = 0, 0
  for _, t in ipairs(threads) do
    h = h + (t:get("hits") or 0)
    w = math.max(w, t:get("wrapped") or 0)
  end
  io.write(string.format("RESULT %d %.2f %.1f %.1f %d %d %d %d\n",
    summary.requests, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    e.status, e.connect + e.read + e.write + e.timeout, h, w))
end
