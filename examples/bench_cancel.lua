-- bench_cancel.lua: which path from the host reaches a running kernel, and how fast a cancel
-- lands. cancel_probe.cu fills every SM with blocks spinning on a word: (a) a word in pinned host
-- memory the host stores to, read by the kernel through the mapping; (b) a device global the host
-- copies 1 into with cuMemcpyHtoDAsync on a non-blocking stream of its own (what
-- cuasync.cancel does). Each: microseconds from the host's store or copy to the kernel's
-- end (stream query). Then the real thing: a watched pipeline kernel hung in a watched wait
-- (planted_hangs.cu, watchdog timeout a minute) under synchronize{ timeout_ms }: how long past
-- the budget the Cancelled error comes.
--   luajit examples/bench_cancel.lua [--trials 20] [--timeout 200]
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local ffi = require("ffi")
local cuasync = require("cuasync")
local native = require("cuasync.native")
local cancel = require("cuasync.cancel")
require("cuasync.cdef.memory")
require("cuasync.cdef.stream")
pcall(ffi.cdef, "int usleep(unsigned int usec);")
local o = require("cuasync.tools.cli").script{ options = {
  { "--trials N", "trials of each path", default = 20 },
  { "--timeout MS", "the synchronize{ timeout_ms } budget", default = 200 },
} }

local probe = cuasync.program{ file = "cancel_probe.cu" }
local W, Hh, BX, BY = 512, 256, 64, 32
local function map(buf)
  return cuasync.tensormap{ buffer = buf, ptr = not buf and 2 ^ 20 or nil, bytes = not buf and W * Hh * 4 or nil,
    encode = buf ~= nil, dtype = "f32", dims = { W, Hh }, box = { BX, BY } }
end
local P = cuasync.pipeline{ name = "hang", stages = 3, loads = { { map = map(), name = "in" } }, producer = { warps = 1 }, consumer = { warps = 4 } }
local hang = P:program{ file = "planted_hangs.cu", defines = { BOX_X = BX, BOX_Y = BY, HANG = 1 }, watchdog = { timeout_ms = 60000 } }
local ok, why = cuasync.available()
probe:compile()
hang:compile()
if not ok then return print("compiled cancel_probe.cu and planted_hangs.cu; launches skipped: " .. why) end

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN
local dev = cuasync.device(0)
local mod = probe:compile()
local spin_mapped = mod:kernel("spin_mapped", "u64, ptr")
local spin_global = mod:kernel("spin_global", "ptr")
local word = mod:global("cancel_probe_word")
local flag = cuasync.host_alloc(4)
local one = cuasync.host_alloc(4)
one:as("uint32_t")[0] = 1
local gave_up = cuasync.alloc(4)
gave_up:fill(0)
local side = ffi.new("CUstream[1]")
native.check(C.cuasync_stream_create(side, 1, errbuf, ERRLEN))
local done = ffi.new("int[1]")
local grid = dev.sms * 8

local function median(t) table.sort(t) return t[math.floor((#t + 1) / 2)] end

local function trial(path)
  if path == "mapped" then
    flag:as("uint32_t")[0] = 0
    spin_mapped:launch({ grid = grid, block = 256 }, ffi.cast("uint64_t", ffi.cast("uintptr_t", flag:as("uint32_t"))), gave_up)
  else
    word:fill(0)
    spin_global:launch({ grid = grid, block = 256 }, gave_up)
  end
  ffi.C.usleep(20000)   -- every block is spinning by now
  local t0 = cuasync.now_ns()
  if path == "mapped" then
    ffi.cast("volatile uint32_t *", flag:as("uint32_t"))[0] = 1
  else
    native.check(C.cuasync_mem_htod_async(word.ptr, one:as("uint32_t"), 4, side[0], errbuf, ERRLEN))
  end
  repeat native.check(C.cuasync_stream_query(nil, done, errbuf, ERRLEN)) until done[0] ~= 0
  local us = tonumber(cuasync.now_ns() - t0) / 1e3
  cuasync.synchronize()
  return us
end
print(("%s, %d blocks of 256 threads spinning (every SM full), %d trials each"):format(dev.name, grid, o.trials))
for _, path in ipairs({ "mapped", "copy" }) do
  local t = {}
  for i = 1, o.trials do t[i] = trial(path) end
  local mx = math.max(unpack(t))
  print(("  %-6s %s: median %7.1f us, max %7.1f us from the host's %s to the kernel's end"):format(path,
    path == "mapped" and "(host store to pinned memory, read over the mapping)" or "(cuMemcpyHtoDAsync, non-blocking stream)",
    median(t), mx, path == "mapped" and "store" or "copy"))
end
local stuck = gave_up:download("uint32_t", 1)[0]
print(("  threads that gave up waiting (a path that never arrived): %d"):format(stuck))

-- the watched kernel, cancelled by synchronize{ timeout_ms }
local src, dst = cuasync.alloc(W * Hh * 4), cuasync.alloc(W * Hh * 4)
src:fill(1)
local k = hang:compile():kernel("planted", "tensormap, ptr, u32, u32, u32")
local past = {}
for i = 1, o.trials do
  k:launch(P:launch_config{ grid = 8 }, map(src), dst, W, W / BX, (W / BX) * (Hh / BY))
  local okc, err = pcall(cuasync.synchronize, { timeout_ms = o.timeout })
  assert(not okc and cancel.is_cancelled(err), tostring(err))
  past[i] = err.elapsed_ms - o.timeout
end
print(("watched pipeline kernel (planted_hangs.cu HANG=1), synchronize{ timeout_ms = %d }: Cancelled %.2f ms past the budget (median), %.2f ms at most, over %d trials"):format(
  o.timeout, median(past), math.max(unpack(past)), o.trials))
