-- bench_launch.lua: host cost of one launch of an empty kernel, three ways, measured side by side
-- in one run: a raw FFI cuLaunchKernel, kernel:launch (checks + packing every time) and a
-- prepared launch (run()). Prints µs per launch and each one's ratio to the raw call.
--   luajit examples/bench_launch.lua [launches_per_round] [rounds]
dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/_path.lua")
local ffi = require("ffi")
local cuasync = require("cuasync")

local ok, why = cuasync.available()
local prog = cuasync.program{ source = 'extern "C" __global__ void empty(int *p) {}', name = "empty.cu" }
if not ok then
  print(("compiled empty.cu for %s (%d bytes); launches skipped: %s"):format(prog:arch(), #prog:cubin(), why))
  return
end

local N, ROUNDS = tonumber(arg[1]) or 20000, tonumber(arg[2]) or 9
local k = prog:compile():kernel("empty", "ptr")
local buf = cuasync.alloc(256)
local cfg = { grid = 1, block = 32 }

local raw = cuasync.driver_symbol("cuLaunchKernel", ffi.typeof([[
  int (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **)]]))
local slot = ffi.new("uint64_t[1]", buf.ptr)
local params = ffi.new("void *[1]", slot)
local fn = k.fn

local run = k:prepare(cfg, buf)
local ways = {
  { "raw FFI cuLaunchKernel", function()
      for _ = 1, N do
        if raw(fn, 1, 1, 1, 32, 1, 1, 0, nil, params, nil) ~= 0 then error("cuLaunchKernel failed") end
      end
    end },
  { "prepared run()", function() for _ = 1, N do run() end end },
  { "prepared run(buf)", function() for _ = 1, N do run(buf) end end },
  { "kernel:launch(cfg, buf)", function() for _ = 1, N do k:launch(cfg, buf) end end },
}

local samples = {}
for _, w in ipairs(ways) do samples[w[1]] = {}; w[2]() end   -- warm up (and let the JIT compile)
cuasync.synchronize()
for _ = 1, ROUNDS do
  for _, w in ipairs(ways) do    -- interleaved, so drift hits every way alike
    cuasync.synchronize()
    local t0 = cuasync.now_ns()
    w[2]()
    local t1 = cuasync.now_ns()
    cuasync.synchronize()
    table.insert(samples[w[1]], (t1 - t0) / N / 1e3)
  end
end

local function median(t) table.sort(t) return t[math.floor((#t + 1) / 2)] end
local base = median(samples[ways[1][1]])
print(("%d launches x %d rounds, median µs per launch (host side)"):format(N, ROUNDS))
for _, w in ipairs(ways) do
  local m = median(samples[w[1]])
  print(("%-26s %7.3f µs   %.3f x raw"):format(w[1], m, m / base))
end
buf:close()
