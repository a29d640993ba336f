-- Several pipelines in one kernel: cuasync.layout places pipeline plans (and regions of the
-- kernel's own, such as epilogue buffers) in one block's dynamic shared memory, checks them
-- together against the device, and builds the kernel's program with every plan's Config.
--   local L = cuasync.layout{ name = "attn", pipelines = { Pk, Pv }, regions = { o = 16384 } }
--   L.smem_bytes, L.block, L.pipelines.k (the placed plan), L:explain(), L:header(), L:check(dev),
--   L:program{ file = ... }, L:launch_config{ grid = n }, L:simulate{}
-- On the device each plan is used as alone (cuasync::pipeline<cuasync::pipelines::k>): its Config
-- carries base_offset and base_align, so its stages land inside the layout; a region is
-- cuasync::layouts::attn::o(). The arithmetic is in model/layout_plan.lua.
local util = require("cuasync.util")
local pipeline = require("cuasync.pipeline")
local program = require("cuasync.program")
local plans = require("cuasync.model.layout_plan")
local cxx = require("cuasync.model.cxx_names")
local device = require("cuasync.device")
local rules = require("cuasync.model.launch_rules")

local M = {}
local SharedLayout = {}
SharedLayout.__index = SharedLayout

M.FIELDS = { name = true, pipelines = true, regions = true }

local function fail(msg) util.fail("layout", msg) end

function M.new(spec)
  util.kind("layout", "argument", spec, "table")
  util.known_fields("layout", spec, M.FIELDS)
  local name = spec.name or "main"
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") or #name > 64 then
    fail(("name must be a C identifier of at most 64 characters (it names the generated struct and header; got %s)"):format(
         util.describe(name)))
  end
  if cxx.refusal(name) then fail(("name %s %s: it names the generated C++ struct"):format(util.describe(name), cxx.refusal(name))) end
  local list = util.list("layout", "pipelines", spec.pipelines)
  if #list < 1 then fail("pipelines must name at least one cuasync.pipeline plan") end
  for i, P in ipairs(list) do
    if getmetatable(P) ~= pipeline.Pipeline then
      fail(("pipelines[%d] must be a cuasync.pipeline plan (got %s)"):format(i, util.describe(P)))
    end
    if P.mutation then fail(("pipelines[%d] ('%s') is a mutated plan: it is for :simulate only"):format(i, P.name)) end
    if P.placed_in then
      fail(("pipelines[%d] ('%s') is already placed in layout '%s': give the plan itself (cuasync.pipeline{...})"):format(i, P.name, P.placed_in))
    end
  end
  local regions = plans.regions(spec.regions)
  plans.check_parts(list, regions)
  local placed = plans.place{ name = name, pipelines = list, regions = regions }
  local L = setmetatable(placed, SharedLayout)
  L.block, L.cluster, L.cluster_size = list[1].block, list[1].cluster, list[1].cluster_size
  L.cluster_given = list[1].cluster_given
  L.pipelines = {}
  for i, part in ipairs(L.parts) do
    local c = {}   -- the plan as placed: its Config starts at the part's offset in the layout
    for k, v in pairs(part.plan) do c[k] = v end
    c.base_offset, c.base_align, c.placed_in = part.offset, L.align, name
    part.plan = setmetatable(c, pipeline.Pipeline)
    L.pipelines[i], L.pipelines[c.name] = part.plan, part.plan
  end
  return L
end

function SharedLayout:header() return plans.header(self) end

-- Every header the kernel includes: each plan's and the layout's own.
function SharedLayout:headers()
  local h = {}
  for _, p in ipairs(self.parts) do h[("cuasync/pipelines/%s.cuh"):format(p.plan.name)] = p.plan:header() end
  h[("cuasync/layouts/%s.cuh"):format(self.name)] = self:header()
  return h
end

function SharedLayout:explain()
  local out = { ("layout '%s': %d pipeline%s and %d region%s in one block of %d threads"):format(self.name, #self.parts,
    #self.parts == 1 and "" or "s", #self.regions, #self.regions == 1 and "" or "s", self.block) }
  for _, p in ipairs(self.parts) do
    out[#out + 1] = ("  pipeline '%s' at %d: %d B (%d stages x %d B + barriers%s), aligned to %d"):format(p.plan.name, p.offset,
      p.bytes, p.plan.stages, p.plan.pitch, (p.plan.scratch_bytes or 0) > 0 and (" + %d B scratch"):format(p.plan.scratch_bytes) or "",
      p.plan.align)
  end
  for _, r in ipairs(self.regions) do
    out[#out + 1] = ("  region '%s' at %d: %d B, aligned to %d"):format(r.name, r.offset, r.bytes, plans.REGION_ALIGN)
  end
  out[#out + 1] = ("  %d B used + %d B slack to align the dynamic base to %d = %d B of dynamic shared memory"):format(
    self.used, self.slack, self.align, self.smem_bytes)
  return table.concat(out, "\n")
end

-- L:check(dev): each plan's own rules on the device, then the layout's total against its limit.
function SharedLayout:check(dev)
  for _, p in ipairs(self.parts) do p.plan:check(dev) end
  local limits = dev
  if rawequal(dev, nil) then limits = device.current() end
  if limits == "sm_90" or limits == "sm_90a" then limits = rules.sm_90 end
  if self.smem_bytes > limits.smem_optin then
    local each = {}
    for _, p in ipairs(self.parts) do each[#each + 1] = ("'%s' %d"):format(p.plan.name, p.bytes) end
    for _, r in ipairs(self.regions) do each[#each + 1] = ("region '%s' %d"):format(r.name, r.bytes) end
    fail(("layout '%s' needs %d bytes of dynamic shared memory (%s, + alignment and %d slack) but %s allows %d per block (smem_optin): %d bytes over"):format(
      self.name, self.smem_bytes, table.concat(each, " + "), self.slack, limits.name or "the device", limits.smem_optin,
      self.smem_bytes - limits.smem_optin))
  end
  return self
end

-- L:program{ source | file, ... }: every plan's and the layout's header bound, the plans'
-- defines added, the watchdog on unless told otherwise; its kernels check block and smem against
-- the layout and their tensor maps against the plans' loads, in the order of the pipelines.
function SharedLayout:program(spec)
  util.kind("layout.program", "argument", spec, "table")
  util.null_fields("layout.program", spec)
  if spec.trace ~= nil and spec.trace ~= false then
    util.fail("layout.program", "trace: a kernel of several pipelines is not traced yet (their events would share one ring per warp and role); trace each pipeline in a kernel of its own")
  end
  local parts = { { who = "the layout", headers = self:headers() } }
  for _, p in ipairs(self.parts) do parts[#parts + 1] = { who = ("pipeline '%s'"):format(p.plan.name), defines = p.plan:defines() } end
  local s = program.bound("layout.program", spec, parts)
  local L = self
  return program.new(s, {
    parts = self.parts,   -- the post-mortem finds the pipeline that owns a hung wait's barrier
    check_config = function(kernel_name, c) M.config_check(L, kernel_name, c) end,
    map_check = function(kernel_name, i, j)   -- the j-th tensor map: the loads of the pipelines in order
      for _, p in ipairs(L.parts) do
        if j <= #p.plan.loads then return pipeline.map_check(p.plan, kernel_name, i, j) end
        j = j - #p.plan.loads
      end
    end,
  })
end

function M.config_check(L, kernel_name, c) pipeline.block_smem_check("layout", "L", L, kernel_name, c) end

-- L:launch_config{ grid = ..., stream = ... }: block, smem and cluster filled from the layout.
function SharedLayout:launch_config(cfg)
  return pipeline.filled_config("layout.launch_config", "the layout", "the plans' cluster", self, cfg)
end

-- L:simulate(o): each pipeline's protocol through the CPU model (their barriers are disjoint);
-- returns { [name] = that plan's result }, and ok = every one passed.
function SharedLayout:simulate(o)
  local out, ok = {}, true
  for _, p in ipairs(self.parts) do
    local r = p.plan:simulate(o)
    out[p.plan.name] = r
    if not r.ok then ok = false end
  end
  out.ok = ok
  return out
end

M.SharedLayout = SharedLayout
util.methods(SharedLayout, "layout", "L")

return M
