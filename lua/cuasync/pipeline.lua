-- Pipelines as Lua objects: one plan is the single source of truth for a kernel's byte counts,
-- its shared-memory layout, its launch and a CPU model of its protocol.
--   local P = cuasync.pipeline{ name = "main", stages = 4, loads = { tmA, tmB },
--                               producer = { warps = 1 }, consumer = { warps = 4 } }
--   P.tx_bytes, P.smem_bytes, P.block, P:layout(), P:explain(), P:header(), P:defines(),
--   P:check(dev), P:program{ file = ... }, P:launch_config{ grid = n }, P:simulate{}, P:mutate{}
-- A load is a tensor map, or { map = tm, name = "A", boxes = n } (n boxes per stage, e.g. a tile
-- wider than the swizzle span). stage_bytes = n instead of loads: bulk copies of n bytes a stage.
-- scratch = n: n bytes of the kernel's own after the barriers (an epilogue's staging buffer),
-- counted in smem_bytes and in check(); pipe.scratch() on the device.
-- The arithmetic lives in model/pipeline_plan.lua, the protocol in model/pipeline_protocol.lua.
local util = require("cuasync.util")
local device = require("cuasync.device")
local program = require("cuasync.program")
local tensormap = require("cuasync.tensormap")
local R = require("cuasync.model.tensormap_rules")
local rules = require("cuasync.model.launch_rules")
local plans = require("cuasync.model.pipeline_plan")
local header = require("cuasync.model.pipeline_header")
local cxx = require("cuasync.model.cxx_names")
local cp_async = require("cuasync.model.cp_async_plan")
local pipeline_loads = require("cuasync.pipeline_loads")
local protocol = require("cuasync.model.pipeline_protocol")
local orders = require("cuasync.model.order_plan")

local M = {}
local Pipeline = {}
Pipeline.__index = Pipeline

-- The fields cuasync.pipeline{...} takes (the one list; docs_spec holds the reference to it).
M.FIELDS = { name = true, stages = true, loads = true, stage_bytes = true, producer = true, consumer = true,
             cluster = true, multicast = true, scratch = true, release = true, completion = true, order = true }
local FIELDS = M.FIELDS

local function fail(msg) util.fail("pipeline", msg) end

function M.new(spec)
  util.kind("pipeline", "argument", spec, "table")
  util.known_fields("pipeline", spec, FIELDS)
  local name = spec.name or "main"
  util.kind("pipeline", "name", name, "string")
  if not name:match("^[%a_][%w_]*$") or #name > 64 then
    fail(("name must be a C identifier of at most 64 characters (it names the generated struct and header; got %s)"):format(
         util.describe(name)))
  end
  if cxx.refusal(name) then
    fail(("name %s %s: it names the generated C++ struct"):format(util.describe(name), cxx.refusal(name)))
  end
  local stages = util.int_in("pipeline", "stages", spec.stages, 1, plans.MAX_STAGES)
  local loads, cp = pipeline_loads.of(spec)
  -- a load's name becomes a member of the generated struct (Config::NAME is its index)
  for i, l in ipairs(loads) do
    local given = type(spec.loads) == "table" and type(spec.loads[i]) == "table" and rawget(spec.loads[i], "name") ~= nil
    if not given and l.name == name then
      fail(("name %s is also the name loads[%d] takes by default; name the pipeline or the load something else"):format(
           util.describe(name), i))
    end
    local why = cxx.refusal(l.name) or (header.MEMBERS[l.name] and "is a member the generated Config already has")
                or (l.name == name and "is the pipeline's own name (the generated struct's)")
    if why then
      fail(("loads[%d].name %s %s; name the load something else"):format(i, util.describe(l.name), why))
    end
  end
  local roles = plans.roles(spec.producer, spec.consumer, spec.release, cp)
  local cluster, size = plans.cluster(spec.cluster)
  local completion
  if cp then
    completion = cp_async.check(spec, loads, roles, spec.cluster ~= nil)
  elseif spec.completion ~= nil then
    fail(("completion = %s is for cp.async loads; a TMA or bulk stage completes when its tx bytes land"):format(
         util.describe(spec.completion)))
  end
  pipeline_loads.multicast(spec, loads, cluster)
  local scratch = util.int_in("pipeline", "scratch", spec.scratch or 0, 0, 2 ^ 20)
  local order = orders.check(spec.order, roles, cp)
  local plan = plans.derive{ name = name, stages = stages, loads = loads, roles = roles, cluster = cluster,
                             cluster_size = size, scratch = scratch, completion = completion, order = order }
  plan.cluster_given = spec.cluster ~= nil
  plans.check_layout(plan)
  return setmetatable(plan, Pipeline)
end

function Pipeline:layout() return plans.layout(self) end
function Pipeline:explain() return plans.explain(self) end
function Pipeline:header() return header.header(self) end
function Pipeline:defines() return header.defines(self) end
function Pipeline:__tostring()
  return ("cuasync.pipeline '%s': %d stages, tx %d B, smem %d B, block %d%s"):format(self.name, self.stages,
    self.tx_bytes, self.smem_bytes, self.block, self.mutation and " (mutated)" or "")
end

-- P:check(dev): raises naming the limit the plan breaks on this device; returns the plan.
-- dev may be an architecture, "sm_90" or "sm_90a" (cuasync.limits.sm_90), or a limits table of
-- the same fields (cuasync.limits.sm_90 edited): it checks a plan where no GPU is present.
function Pipeline:check(dev)
  if rawequal(dev, nil) then dev = device.current() end
  if dev == "sm_90" or dev == "sm_90a" then dev = rules.sm_90 end
  if type(dev) ~= "table" or type(dev.smem_optin) ~= "number" then
    fail(('check\'s argument must be a cuasync device, "sm_90", "sm_90a" or a limits table like cuasync.limits.sm_90 (got %s)'):format(util.describe(dev)))
  end
  -- a hand-made device table: every limit it gives must be a count (NaN would pass every test)
  for _, f in ipairs({ "smem_optin", "reserved_smem_per_block", "max_threads_per_block", "cc" }) do
    local v = dev[f]
    if v ~= nil and (not util.is_integer(v) or v < 0) then
      fail(("check's device.%s must be a non-negative integer (got %s)"):format(f, util.describe(v)))
    end
  end
  if self.kind == "cp_async" and dev.cc and dev.cc < 80 then
    fail(("pipeline '%s' copies with cp.async, which needs sm_80 or newer; %s is sm_%d"):format(self.name, dev.name or "the device", dev.cc))
  end
  local optin, reserved = dev.smem_optin, dev.reserved_smem_per_block or 0
  if self.smem_bytes > optin then
    -- what does not grow with the stages: the alignment slack and the scratch region (with its
    -- own alignment); what does: the stage buffer and its two barriers
    local per_stage = self.pitch + 16
    local fixed = self.smem_bytes - self.stages * per_stage
    fail(("pipeline '%s' needs %d bytes of dynamic shared memory (%d stages x %d + barriers%s and slack) but %s allows %d per block (smem_optin; the system reserves %d more per block): %d bytes over; each stage takes %d, so at most %d stages fit"):format(
      self.name, self.smem_bytes, self.stages, self.pitch, (self.scratch_bytes or 0) > 0 and (" + %d B scratch"):format(self.scratch_bytes) or "",
      dev.name or "the device", optin, reserved, self.smem_bytes - optin, per_stage, math.max(0, math.floor((optin - fixed) / per_stage))))
  end
  if dev.max_threads_per_block and self.block > dev.max_threads_per_block then
    fail(("pipeline '%s' needs %d threads per block; the device allows %d"):format(self.name, self.block,
         dev.max_threads_per_block))
  end
  if self.cluster_size > 1 then
    if dev.cluster == false then fail(("pipeline '%s' has a cluster but %s has no cluster launch"):format(self.name, dev.name)) end
    if self.cluster_size > rules.PORTABLE_CLUSTER then
      fail(("pipeline '%s': cluster of %d blocks is above the portable %d"):format(self.name, self.cluster_size,
           rules.PORTABLE_CLUSTER))
    end
  end
  for _, l in ipairs(self.loads) do
    if l.map then R.device_supports(R.dtype(l.dtype), l.dtype, dev.cc, dev.name) end
  end
  plans.check_layout(self)
  return self
end

-- P:program{ source = s | file = f, ... }: a cuasync.program with the config header bound as
-- <cuasync/pipelines/NAME.cuh> and the defines added; its kernels check their tensor-map
-- arguments and launch config against this plan when prepared.
function Pipeline:program(spec)
  if self.mutation then fail(("pipeline '%s' is a mutated plan: it is for :simulate only"):format(self.name)) end
  if self.placed_in then
    util.fail("pipeline.program", ("pipeline '%s' is placed in layout '%s': build the kernel with the layout's program (L:program{...}), which binds every plan it holds"):format(
      self.name, self.placed_in))
  end
  util.kind("pipeline.program", "argument", spec, "table")
  -- before a default replaces one: a NULL watchdog would read as not given, and become true
  util.null_fields("pipeline.program", spec)
  local s = program.bound("pipeline.program", spec, { { who = "the pipeline", defines = self:defines(),
    headers = { [("cuasync/pipelines/%s.cuh"):format(self.name)] = self:header() } } })
  local plan = self
  return program.new(s, {
    plan = plan,   -- what the watchdog's post-mortem names barriers and stages from
    check_config = function(kernel_name, c) M.config_check(plan, kernel_name, c) end,
    map_check = function(kernel_name, i, j) return M.map_check(plan, kernel_name, i, j) end,
  })
end

-- P:launch_config{ grid = ..., stream = ... }: block, smem and cluster filled from the plan.
function Pipeline:launch_config(cfg)
  if self.placed_in then
    util.fail("pipeline.launch_config", ("pipeline '%s' is placed in layout '%s': its kernel launches with the layout's smem (L:launch_config{...})"):format(
      self.name, self.placed_in))
  end
  return M.filled_config("pipeline.launch_config", "the pipeline", "the plan's cluster", self, cfg)
end

-- cfg (grid, stream, ...) with block, smem and the cluster filled from `of` (a plan or a
-- cuasync.layout: its block, smem_bytes, cluster, cluster_given), none of them given.
function M.filled_config(where, who, cluster_word, of, cfg)
  util.kind(where, "argument", cfg, "table")
  local out = {}
  for k, v in pairs(cfg) do
    if k == "block" or k == "smem" or k == "cluster" then
      util.fail(where, ("%s is filled by %s (%s); do not give it"):format(k, who,
        k == "block" and of.block or k == "smem" and of.smem_bytes or cluster_word))
    end
    out[k] = v
  end
  if out.grid == nil then util.fail(where, "grid is required") end
  out.block, out.smem = of.block, of.smem_bytes
  if of.cluster_given then out.cluster = { of.cluster[1], of.cluster[2], of.cluster[3] } end
  return out
end

function Pipeline:simulate(o)
  return protocol.simulate(self, o, self.mutation)
end

-- P:mutate{ tx_delta = n | consumer_arrivals = n | parity_flip = true | producer_exits_at = i }:
-- the same plan with a planted fault, for :simulate to find.
function Pipeline:mutate(m)
  protocol.check_mutation(self, m)
  local c = {}
  for k, v in pairs(self) do c[k] = v end
  c.mutation = {}
  for k, v in pairs(self.mutation or {}) do c.mutation[k] = v end
  for k, v in pairs(m) do c.mutation[k] = v end
  return setmetatable(c, Pipeline)
end

-- Used by kernel:prepare: the checks a kernel built from P:program makes before its first launch.
-- Returns a wrapper for the tensor-map setter of kernel parameter i (the j-th tensor map), or nil.
function M.map_check(P, kernel_name, i, j)
  local l = P.loads[j]
  if not l or not l.map then return nil end
  local last
  return function(v)
    if v == last then return end
    if not tensormap.is(v) then
      util.fail("launch", ("argument %d of '%s' is a raw CUtensorMap; pipeline '%s' needs the cuasync.tensormap to check its box against load %s"):format(
        i, kernel_name, P.name, l.name))
    end
    if v.box_bytes ~= l.bytes or v.dtype ~= l.dtype then
      util.fail("launch", ("tensormap argument %d brings %d bytes per box of %s; pipeline '%s' was built for %d of %s (load %s, stage tx %d)"):format(
        i, v.box_bytes, v.dtype, P.name, l.bytes, l.dtype, l.name, P.tx_bytes))
    end
    last = v
  end
end

-- The launch config a kernel built from a plan's program must have: its block and at least its
-- smem. what: "pipeline" or "layout", and the letter of its launch_config (P or L).
function M.block_smem_check(what, letter, X, kernel_name, c)
  local threads = c.block[1] * c.block[2] * c.block[3]
  if threads ~= X.block then
    util.fail("launch", ("kernel '%s' launches %d threads per block but %s '%s' has roles for %d (use %s:launch_config)"):format(
      kernel_name, threads, what, X.name, X.block, letter))
  end
  if c.smem < X.smem_bytes then
    util.fail("launch", ("kernel '%s' launches with %d bytes of dynamic shared memory but %s '%s' lays out %d (use %s:launch_config)"):format(
      kernel_name, c.smem, what, X.name, X.smem_bytes, letter))
  end
end
function M.config_check(P, kernel_name, c) M.block_smem_check("pipeline", "P", P, kernel_name, c) end

M.Pipeline = Pipeline
util.methods(Pipeline, "pipeline", "P")

return M
