-- bench_compile.lua: how long prog:compile() takes in a new process — cold (NVRTC) and again
-- from the disk cache — each in a fresh LuaJIT process with a fresh cache directory; and a
-- compile that hits the memory cache (the same program built again in one process).
--   luajit examples/bench_compile.lua
local root = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/_path.lua")

if arg[1] == "--child" then
  local cuasync = require("cuasync")
  local t0 = cuasync.now_ns()
  local prog = cuasync.program{ file = "copy_bulk.cu", defines = { STAGES = 4, CHUNK = 16384 }, arch = "sm_90a" }
  local mod = prog:compile()
  local t1 = cuasync.now_ns()
  -- memory-cache hits: a new program object with the same source and defines, compiled again
  local hits = {}
  for i = 1, 200 do
    local p = cuasync.program{ source = prog.source, name = prog.name, defines = { STAGES = 4, CHUNK = 16384 }, arch = "sm_90a" }
    local a = cuasync.now_ns()
    p:compile()
    hits[i] = tonumber(cuasync.now_ns() - a) / 1e6
  end
  print(("%.3f %d %d %.4f"):format((t1 - t0) / 1e6, cuasync.cache.stats.nvrtc, cuasync.cache.stats.disk,
        cuasync.median(hits)), #mod:cubin())
  return
end

local dir = os.tmpname()
os.remove(dir)
local function child()
  local p = io.popen(("CUASYNC_CACHE_DIR=%q luajit %q --child"):format(dir, arg[0]))
  local out = p:read("*a")
  p:close()
  local ms, nvrtc, disk, hit = out:match("^(%S+) (%d+) (%d+) (%S+)")
  assert(ms, "child failed: " .. out)
  return tonumber(ms), tonumber(nvrtc), tonumber(disk), tonumber(hit)
end
local cold, n1, _, hit = child()
local warm = {}
for i = 1, 5 do
  local ms, n2, d2 = child()
  assert(n2 == 0 and d2 == 1, "expected a disk-cache hit")
  warm[i] = ms
end
table.sort(warm)
print(("copy_bulk.cu, new process each: cold compile %.1f ms (NVRTC runs: %d); from the disk cache %.2f ms (median of 5)"):format(
  cold, n1, warm[3]))
print(("prog:compile() hitting the memory cache (a new program object, same source): %.3f ms (median of 200)"):format(hit))
os.execute(("rm -rf %q"):format(dir))
