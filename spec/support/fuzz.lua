-- The fuzz harness behind spec/house/fuzz_spec.lua, run in its own process (a crash or a hang there
-- fails the spec instead of killing busted). Feeds every public function random and boundary
-- values, seeded; classifies each call: returned, a clean cuasync error ("cuasync.<module>: ..."
-- at a position, or a driver error object), a raw error (anything else: an internal bug), an
-- over-long message, or a hang (a debug hook aborts any call running past its time).
--   luajit spec/support/fuzz.lua SEED CALLS
local ffi = require("ffi")
jit.off()   -- the hang hook needs the interpreter
local cuasync = require("cuasync")

local seed, calls = tonumber(arg[1]) or os.time(), tonumber(arg[2]) or 50000
math.randomseed(seed)
local R = math.random

local BIG = ("x"):rep(100000)
local POOL = {
  numbers = { 0, 1, -1, 2, 3, 4, 8, 16, 32, 100, 128, 255, 256, 1024, 4096, 65536, 2 ^ 31, 2 ^ 32, 2 ^ 40, 2 ^ 53,
              2 ^ 53 + 2, 2 ^ 63, 1e300, -1e300, -2 ^ 53, 0.5, -0.5, 1 / 0, -1 / 0, 0 / 0 },
  strings = { "", "x", "\0", "a\0b", "\255", "128B", "64B", "32B", "none", "f32", "bf16", "u8", "sm_90a", "auto",
              "ptr, u64", "ptr", "bytes[24]", "k", "stage_sync", "-O3", "-arch=sm_80", "zero", "nan", BIG },
}
local function cdata_value()
  local k = R(5)
  if k == 1 then return ffi.new("int[4]") end
  if k == 2 then return ffi.cast("void *", 0) end
  if k == 3 then return ffi.new("uint64_t", R(0, 2 ^ 20) * 16) end
  if k == 4 then return ffi.new("int64_t", -16) end
  return ffi.new("char[?]", R(1, 64))
end

local value
local function small_list(depth)
  local t, n = {}, R(0, 5)
  for i = 1, n do t[i] = value(depth + 1) end
  if R(4) == 1 then t[R(1, 6)] = nil end
  if R(6) == 1 then t.x = value(depth + 1) end
  return t
end
function value(depth)
  depth = depth or 0
  local k = R(depth > 1 and 8 or 10)
  if k <= 3 then return POOL.numbers[R(#POOL.numbers)] end
  if k <= 5 then return POOL.strings[R(#POOL.strings)] end
  if k == 6 then return nil end
  if k == 7 then return R(2) == 1 end
  if k == 8 then return cdata_value() end
  if k == 9 then return small_list(depth) end
  return function() end
end

-- A table with some of `fields`, each a random value (and now and then a stray field).
local function record(fields)
  local t = {}
  for _, f in ipairs(fields) do if R(2) == 1 then t[f] = value(1) end end
  if R(8) == 1 then t[POOL.strings[R(#POOL.strings)] or "zz"] = value(1) end
  return t
end

local layout = cuasync.swizzle.layout("128B", { 32, 8 }, 4)
local stage_sync = cuasync.patterns.kernel("stage_sync")
local compiles = 0

local plan_map = cuasync.tensormap{ ptr = 2 ^ 20, bytes = 2 ^ 26, encode = false, dtype = "f32", dims = { 1024, 1024 },
                                    box = { 32, 32 } }
local plan = cuasync.pipeline{ stages = 2, loads = { plan_map }, producer = { warps = 1 }, consumer = { warps = 1 } }
local mb = cuasync.model.mbarrier(1000)
local MB_METHODS = { "arrive", "arrive_drop", "expect_tx", "complete_tx", "arrive_expect_tx", "test_wait",
                     "test_wait_parity", "pending_count" }

local TARGETS = {
  { "available", function() return cuasync.available() end },
  { "device", function() return cuasync.device(value()) end },
  { "alloc", function() return cuasync.alloc(value()) end },
  { "host_alloc", function() return cuasync.host_alloc(value()) end },
  { "program", function() return cuasync.program(R(3) == 1 and value() or record({ "source", "file", "name", "defines",
      "options", "headers", "expressions", "arch", "watchdog" })) end },
  { "program:compile", function()
      if compiles >= 12 then return end
      compiles = compiles + 1
      local src = ({ "\255", "extern \"C\" __global__ void k() {}\255", "nope(", 'extern "C" __global__ void k(int *p) {}' })[R(4)]
      return cuasync.program{ source = src, arch = "sm_90a", expressions = R(2) == 1 and { "k" } or nil }:compile()
    end },
  { "signature", function() return cuasync.signature(value()) end },
  { "check_launch", function()
      return cuasync.check_launch(R(4) == 1 and value() or record({ "grid", "block", "cluster", "smem", "stream",
        "non_portable", "cluster_policy", "cooperative" }), R(3) == 1 and value() or nil)
    end },
  { "stream", function() return cuasync.stream(value()) end },
  { "event", function() return cuasync.event() end },
  { "bench", function() return cuasync.bench(value(), value()) end },
  { "median", function() return cuasync.median(value()) end },
  { "bench_rounds", function() return cuasync.bench_rounds(value(), value()) end },
  { "copy.bulk_kernel", function() return cuasync.copy.bulk_kernel(R(3) == 1 and value() or
      record({ "stages", "chunk", "store_lag", "inflight" })) end },
  { "copy.check_bulk", function() return cuasync.copy.check_bulk(value(), value(), value()) end },
  { "patterns.kernel", function() return cuasync.patterns.kernel(({ "stage_sync", "nope", 5 })[R(3)], value()) end },
  { "pattern:check", function() return stage_sync:check(value(), value(), value()) end },
  { "pattern:verify", function() return stage_sync:verify(value(), value(), value(), value()) end },
  { "tensormap", function() return cuasync.tensormap(R(4) == 1 and value() or record({ "buffer", "ptr", "bytes",
      "dtype", "dims", "strides", "box", "element_strides", "swizzle", "interleave", "l2_promotion", "oob_fill",
      "load_only", "im2col" })) end },
  { "swizzle.layout", function() return cuasync.swizzle.layout(value(), value(), value()) end },
  { "swizzle.show", function() return cuasync.swizzle.show(value(), value(), value(), value()) end },
  { "layout:offset", function() return layout:offset(value(), value()) end },
  { "layout:at", function() return layout:at(value()) end },
  { "layout:bank_conflicts", function() return layout:bank_conflicts(value()) end },
  { "synchronize", function() return cuasync.synchronize(value()) end },
  { "driver_symbol", function() return cuasync.driver_symbol(value(), value()) end },
  { "model.ring.plan", function() return cuasync.model.ring.plan(R(4) == 1 and value() or
      record({ "stages", "stage_bytes", "align", "barriers" })) end },
  { "model.mbarrier", function() return cuasync.model.mbarrier(value(), R(2) == 1 and value() or nil) end },
  { "mbarrier:method", function()
      if mb.invalid or R(50) == 1 then mb = cuasync.model.mbarrier(1000) end
      return mb[MB_METHODS[R(#MB_METHODS)]](mb, value(), value())
    end },
  { "pipeline", function()
      local spec = R(4) == 1 and value() or record({ "name", "stages", "loads", "stage_bytes", "producer", "consumer",
                                                     "cluster", "multicast" })
      if type(spec) == "table" and R(2) == 1 then spec.loads = { plan_map } end
      return cuasync.pipeline(spec)
    end },
  { "pipeline:simulate", function() return plan:simulate(R(3) == 1 and value() or record({ "iterations", "seed", "runs",
      "explore", "bound", "async" })) end },
  { "pipeline:mutate", function() return plan:mutate(R(3) == 1 and value() or record({ "tx_delta", "consumer_arrivals",
      "parity_flip", "producer_exits_at" })) end },
  { "pipeline:methods", function()
      local m = ({ "layout", "explain", "header", "defines", "check", "launch_config", "program" })[R(7)]
      return plan[m](plan, value())
    end },
  { "stream:synchronize", function() return cuasync.stream():synchronize(value()) end },
  { "model.run", function() return cuasync.model.run(R(4) == 1 and value() or record({ "barriers", "roles", "explore",
      "seed", "runs", "bound", "async", "max_steps" })) end },
}

-- the layers added after the core: random, known-bad and result-checked calls
local layers, more = require("support.fuzz_layers")(R, value, record)
for _, t in ipairs(more) do TARGETS[#TARGETS + 1] = t end

local LIMIT_S, MAX_MSG = 5, 8192
local deadline = math.huge
debug.sethook(function() if os.clock() > deadline then error("FUZZ-HANG", 0) end end, "", 10000)

local counts = { returned = 0, clean = 0, raw = 0, long = 0, hang = 0 }
local firsts = {}
local function clean(err)
  if cuasync.is_driver_error(err) then return true end
  -- cuasync's other error objects (a compile error, a plan's refusal) read as their text
  if cuasync.errors.kind(err) then err = tostring(err) end
  if type(err) ~= "string" then return false end
  local body = err:gsub("^[^\n]-:%d+: ", "", 1)
  return body:match("^cuasync[%.%w_]*: ") ~= nil or body:match("^no CUDA driver") ~= nil
         or body:match("^no NVRTC") ~= nil
end

local t0 = os.clock()
for i = 1, calls do
  local t = TARGETS[R(#TARGETS)]
  deadline = os.clock() + LIMIT_S
  local ok, err = pcall(t[2])
  deadline = math.huge
  local kind
  if ok then kind = "returned"
  elseif err == "FUZZ-HANG" then kind = "hang"
  elseif not clean(err) then kind = "raw"
  elseif #tostring(err) > MAX_MSG and cuasync.errors.kind(err) ~= "compile" then kind = "long"
  else kind = "clean" end
  counts[kind] = counts[kind] + 1
  if kind ~= "returned" and kind ~= "clean" then
    local key = t[1] .. " " .. kind
    if not firsts[key] then firsts[key] = ("call %d: %s: %s"):format(i, key, tostring(err):sub(1, 300)) end
  end
  if i % 5000 == 0 then collectgarbage() end
end
debug.sethook()
for _, v in pairs(firsts) do print("FIRST " .. v) end
for _, v in pairs(layers.firsts) do print("FIRST " .. v) end
print(("fuzz seed %d: %d calls in %.1f s: %d returned, %d clean errors, %d raw errors, %d over-long messages, %d hangs, 0 crashes"):format(
  seed, calls, os.clock() - t0, counts.returned, counts.clean, counts.raw, counts.long, counts.hang))
print(("fuzz layers: %d known-bad inputs refused, %d silent acceptances; %d results checked (%d plan headers compiled), %d wrong results"):format(
  layers.bad, layers.silent, layers.checked, layers.compiled or 0, layers.wrong))
