-- cuasync: Hopper async copies, barriers, pipelines, tensor maps and cluster launches from LuaJIT.
-- This file only assembles the submodules; each public name is documented where it is defined.
-- The core (lua/cuasync/*.lua) never requires tools/ or kernels/: their names below load on first
-- use, so `require("cuasync")` stays the core alone.
local native = require("cuasync.native")
local util = require("cuasync.util")
local errors = require("cuasync.errors")
local watchdog = require("cuasync.watchdog")
local cancel = require("cuasync.cancel")
local pipeline = require("cuasync.pipeline")
local scheduler = require("cuasync.scheduler")
local layout = require("cuasync.layout")
local layout_plan = require("cuasync.model.layout_plan")
local ring = require("cuasync.model.ring")
local clusters = require("cuasync.model.clusters")
local tensormap_rules = require("cuasync.model.tensormap_rules")
local mbarrier = require("cuasync.model.mbarrier")
local protocol = require("cuasync.model.protocol")
local pipeline_plan = require("cuasync.model.pipeline_plan")
local tile_scheduler = require("cuasync.model.tile_scheduler")
local device = require("cuasync.device")
local conditions = require("cuasync.conditions")
local buffer = require("cuasync.buffer")
local data = require("cuasync.data")   -- also installs buf:fill_random, buf:poison and the host buffer's
local program = require("cuasync.program")
local streams = require("cuasync.stream")
local cache = require("cuasync.cache")
local rules = require("cuasync.model.launch_rules")
local signature = require("cuasync.signature")
local tensormap = require("cuasync.tensormap")
local swizzle = require("cuasync.model.swizzle")
local graph = require("cuasync.graph")
local conditional = require("cuasync.graph.conditional")
local pdl = require("cuasync.pdl")
local trace = require("cuasync.trace")
local timeline = require("cuasync.model.timeline")


-- cuasync.graph(fn[, opts]) makes a graph; cuasync.graph.condition / .while_ / .if_ act on the
-- capture open now, as its builder's g:condition / g:while_ / g:if_ (graph/conditional.lua).
local graph_api = setmetatable({ condition = conditional.condition, while_ = conditional.while_, if_ = conditional.if_ },
  { __call = function(_, fn, opts) return graph.new(fn, opts) end })

local M = {
  version = native.version,
  library = native.path,

  available = device.available,
  device = device.open,
  device_count = device.count,
  current_device = device.current,
  conditions = conditions,

  alloc = buffer.alloc,
  host_alloc = buffer.host_alloc,
  fill_random = data.fill_random,
  poison = data.poison,
  compare = data.compare,

  program = program.public,
  kernels_dir = program.kernels_dir,
  signature = signature.parse,
  check_launch = rules.check,
  limits = { sm_90 = rules.sm_90 },

  stream = streams.stream,
  event = streams.event,
  graph = graph_api,
  pdl = { check = pdl.check },
  tensormap = tensormap.new,
  pipeline = pipeline.new,
  scheduler = scheduler.new,
  layout = layout.new,
  swizzle = swizzle,
  model = { swizzle = swizzle, launch_rules = rules, ring = ring, clusters = clusters,
            tensormap_rules = tensormap_rules, mbarrier = mbarrier, run = protocol.run,
            pipeline_plan = pipeline_plan, timeline = timeline, tile_scheduler = tile_scheduler,
            layout_plan = layout_plan },
  cache = { stats = cache.stats, dir = cache.dir, clear_memory = cache.clear_memory },
  errors = errors,
  trace = { read = trace.read, raw = trace.raw, last = trace.last },
  is_driver_error = native.is_driver_error,
  synchronize = streams.synchronize,
  reset = device.reset,
  now_ns = streams.now_ns,
  is_hang = watchdog.is_hang,
  is_cancelled = cancel.is_cancelled,
  driver_symbol = device.driver_symbol,
}

-- the façade's functions by name, so that a missing driver names the call (util.entry_name)
for k, v in pairs(M) do if type(v) == "function" and not util.public[v] then util.public[v] = k end end
for k, v in pairs(M.model) do if type(v) == "function" then util.public[v] = "model." .. k end end
util.public[pdl.check] = "pdl.check"
util.public[graph.new] = "graph"
for k, v in pairs(graph_api) do util.public[v] = "graph." .. k end

-- Names loaded on first use: name -> { module, field (nil: the module itself) }.
local LAZY = {
  bench = { "cuasync.tools.bench", "bench" }, median = { "cuasync.tools.bench", "median" },
  bench_rounds = { "cuasync.tools.bench", "rounds" }, isolate = { "cuasync.tools.isolate" },
  copy = { "cuasync.kernels.copy" }, patterns = { "cuasync.kernels.patterns" }, gemm = { "cuasync.kernels.gemm" },
  sweep = { "cuasync.tools.sweep" }, nvtx = { "cuasync.tools.nvtx" }, probe = { "cuasync.tools.probe" },
}
setmetatable(M, { __index = function(t, k)
  local l = LAZY[k]
  if not l then return nil end
  local mod = require(l[1])   -- lazy: tools/ and kernels/ sit above the core, loaded on first use
  local v = l[2] and mod[l[2]] or mod
  rawset(t, k, v)
  return v
end })

return M
