-- bench_launch.lua: host cost of one launch of an empty kernel, four ways, measured side by side
-- in one run: a raw FFI cuLaunchKernel, a prepared launch (run() and run(buf)) and kernel:launch
-- (its checked config cached per config identity). Two modes: rounds of 20,000 launches (the
-- launch queue fills, so the device's pace shows), and bursts of 500 (host cost below the queue
-- depth: synchronize between bursts, time only the launches). Prints µs per launch and each
-- way's ratio to the raw call in the same mode.
--   luajit examples/bench_launch.lua [launches_per_round] [rounds]
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local ffi = require("ffi")
local cuasync = require("cuasync")
local o = require("cuasync.tools.cli").script{ args = {
  { "LAUNCHES", "launches per round", default = 20000 },
  { "ROUNDS", "rounds", default = 9 },
} }

local ok, why = cuasync.available()
local prog = cuasync.program{ source = 'extern "C" __global__ void empty(int *p) {}', name = "empty.cu" }
if not ok then
  print(("compiled empty.cu for %s (%d bytes); launches skipped: %s"):format(prog:arch(), #prog:cubin(), why))
  return
end

local N, ROUNDS = o.launches, o.rounds
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
  { "raw FFI cuLaunchKernel", function(n)
      for _ = 1, n do
        if raw(fn, 1, 1, 1, 32, 1, 1, 0, nil, params, nil) ~= 0 then error("cuLaunchKernel failed") end
      end
    end },
  { "prepared run()", function(n) for _ = 1, n do run() end end },
  { "prepared run(buf)", function(n) for _ = 1, n do run(buf) end end },
  { "kernel:launch(cfg, buf)", function(n) for _ = 1, n do k:launch(cfg, buf) end end },
  { "kernel:launch({...}, buf)", function(n) for _ = 1, n do k:launch({ grid = 1, block = 32 }, buf) end end },
}

local BURST = 500
local function timed(w, n, burst)
  local total = 0
  for _ = 1, n / burst do
    cuasync.synchronize()
    local t0 = cuasync.now_ns()
    w[2](burst)
    total = total + tonumber(cuasync.now_ns() - t0)
  end
  cuasync.synchronize()
  return total / n / 1e3
end

for _, w in ipairs(ways) do w[2](N) end   -- warm up (and let the JIT compile)
cuasync.synchronize()
for _, mode in ipairs({ { ("rounds of %d"):format(N), N }, { ("bursts of %d"):format(BURST), BURST } }) do
  local samples = {}
  for _, w in ipairs(ways) do samples[w[1]] = {} end
  for _ = 1, ROUNDS do
    for _, w in ipairs(ways) do    -- interleaved, so drift hits every way alike
      table.insert(samples[w[1]], timed(w, N, mode[2]))
    end
  end
  local base = cuasync.median(samples[ways[1][1]])
  print(("%s, %d x %d launches, median µs per launch (host side)"):format(mode[1], ROUNDS, N))
  for _, w in ipairs(ways) do
    local m = cuasync.median(samples[w[1]])
    print(("  %-26s %7.3f µs   %.3f x raw"):format(w[1], m, m / base))
  end
end
buf:close()
