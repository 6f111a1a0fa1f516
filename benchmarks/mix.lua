-- wrk script for `python -m benchmarks.throughput`: 60 % search, 20 % list, 20 % save, each request as a
-- random user of the tokens file (one bearer secret per line). Usage:
--   wrk -t2 -c16 -d10s -s benchmarks/mix.lua http://127.0.0.1:PORT -- TOKENS_FILE
-- `done` prints one JSON line the benchmark parses. A second argument `bare` sends `GET /healthz` instead
-- (the same server's ceiling, `python -m benchmarks.request_cost`):
--   wrk -t2 -c16 -d10s -s benchmarks/mix.lua http://127.0.0.1:PORT -- TOKENS_FILE bare
-- `floor N` sends `GET /floor?trips=N` to the floor app (benchmarks/floor_app.py): one hop and N round trips.

local tokens = {}
local words = { "zanzibar", "lighthouse", "deployment", "project" }
local counter = 0
local thread_number = 0
local threads = {}
local bare = false
local floor_path = nil

function setup(thread)
  thread_number = thread_number + 1
  thread:set("seed", thread_number)
  table.insert(threads, thread)
end

function init(args)
  for line in io.lines(args[1]) do
    if #line > 0 then
      tokens[#tokens + 1] = line
    end
  end
  math.randomseed(seed * 7919)
  bare = args[2] == "bare"
  if args[2] == "floor" then
    floor_path = "/floor?trips=" .. args[3]
  end
end

function request()
  if bare then
    return wrk.format("GET", "/healthz")
  end
  if floor_path then
    return wrk.format("GET", floor_path)
  end
  counter = counter + 1
  local headers = { ["Authorization"] = "Bearer " .. tokens[math.random(#tokens)] }
  local roll = math.random(100)
  if roll <= 60 then
    -- rare (about 1 in 1,000 memories), 1 %, 10 % and 84 % words, a quarter each
    local word = words[math.random(#words)]
    return wrk.format("GET", "/v1/memory/search?q=" .. word .. "&limit=20", headers)
  elseif roll <= 80 then
    return wrk.format("GET", "/v1/memory?limit=20", headers)
  end
  headers["Content-Type"] = "application/json"
  local body = string.format(
    '{"content":"Load test note %d-%d about the project deployment checklist","tags":["load"],'
      .. '"contexts":[{"snippet":"first snippet of note %d","conversation_id":"conv-%d"},'
      .. '{"snippet":"second snippet of note %d","origin":"active_conversation"}]}',
    seed, counter, counter, counter % 50, counter
  )
  return wrk.format("POST", "/v1/memory", headers, body)
end

function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,'
      .. '"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, errors.connect, errors.read, errors.write, errors.status, errors.timeout
  ))
end
