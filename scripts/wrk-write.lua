-- wrk script: each request writes a 600-byte memory at a new path of one store.
--   wrk -t4 -c64 -d10s --latency -s scripts/wrk-write.lua http://127.0.0.1:7437 -- memstore_ID
-- (with a key: add -H "x-api-key: $GITMEM_API_KEY")
local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

local body = string.rep("The user prefers short answers. ", 19):sub(1, 600)
local url, n

function init(args)
  url = "/v1/memory_stores/" .. args[1] .. "/memories"
  n = 0
end

function request()
  n = n + 1
  local path = string.format("/wrk/t%d/c%d/n%07d.md", tid, n % 64, n)
  return wrk.format("POST", url, {["content-type"] = "application/json"},
    '{"path":"' .. path .. '","content":"' .. body .. '"}')
end
