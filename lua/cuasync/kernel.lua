-- Kernels: typed signatures checked against the cubin, attributes, and launches. A prepared
-- launch does every check and all packing once; run(...) only writes the arguments and calls the
-- driver, and run() with no arguments relaunches with the last ones.
local ffi = require("ffi")
local native = require("cuasync.native")
local launch = require("cuasync.launch")
local rules = require("cuasync.model.launch_rules")
local signature = require("cuasync.signature")
local util = require("cuasync.util")
local handle = require("cuasync.handle")
local capture = require("cuasync.capture")
local watchdog = require("cuasync.watchdog")
local trace = require("cuasync.trace")
local pdl = require("cuasync.pdl")
local runner = require("cuasync.runner")
local cstate = capture.state   -- .active: cuasync.graph's open capture (a launch there is a node)
require("cuasync.cdef.types")
require("cuasync.cdef.module")
require("cuasync.cdef.launch")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN
local M, Kernel = {}, {}
Kernel.__index = Kernel
local MAX_PARAMS = 512

local function describe_sizes(n, sizes)
  local s = {}
  for i = 0, n - 1 do s[#s + 1] = tostring(tonumber(sizes[i])) end
  return table.concat(s, ", ")
end

-- The signature must match the parameter layout the cubin records (a wrong one would make the
-- driver read past the packed arguments or split them wrongly).
function Kernel:check_signature()
  local offsets = ffi.new("unsigned long long[?]", MAX_PARAMS)
  local sizes = ffi.new("unsigned long long[?]", MAX_PARAMS)
  local count = ffi.new("int[1]")
  native.check(C.cuasync_func_params(self.fn, MAX_PARAMS, offsets, sizes, count, self.name, errbuf, ERRLEN))
  local n = count[0]
  if n < 0 then return end   -- driver older than 12.4: cannot tell
  if n ~= #self.params then
    util.fail("kernel", ('signature "%s" has %d parameter%s but kernel \'%s\' takes %d (sizes %s bytes)'):format(
      self.sig, #self.params, #self.params == 1 and "" or "s", self.name, n, describe_sizes(n, sizes)))
  end
  for i, p in ipairs(self.params) do
    local real = tonumber(sizes[i - 1])
    if real ~= p.size then
      util.fail("kernel", ("signature \"%s\": parameter %d is %s (%d bytes) but kernel '%s' takes %d bytes there"):format(
        self.sig, i, p.kind, p.size, self.name, real))
    end
  end
end

function M.new(mod, name, lowered, params, sig)
  local fn = ffi.new("CUfunction[1]")
  local rc = C.cuasync_module_function(fn, mod.handle.handle, lowered, mod.name, errbuf, ERRLEN)
  if rc ~= 0 then
    -- the driver's error object stays whole (code, status, where); a missed name gets the hint
    local _, err = pcall(native.check, rc)
    if native.is_driver_error(err) and err.code == "CUDA_ERROR_NOT_FOUND" then
      err.message = err.message .. " (declare it extern \"C\", or list a template or C++ name in the program's expressions)"
    end
    error(err, 0)
  end
  local k = setmetatable({ module = mod, name = name, lowered = lowered, fn = fn[0], params = params,
                           sig = sig, device = mod.device, runs = {}, nruns = 0,
                           generation = native.state.generation }, Kernel)
  k.attrs = k:read_attributes()
  k:check_signature()
  return k
end

-- The driver's attributes of the function, read once per kernel (k.attrs) and kept in step by
-- set_attribute: a prepare reads them from the table, not the driver.
function Kernel:read_attributes()
  local a = ffi.new("cuasync_func_attrs")
  native.check(C.cuasync_func_attributes(self.fn, a, self.name, errbuf, ERRLEN))
  return {
    regs = a.regs, static_smem = a.static_smem, local_bytes = a.local_bytes, max_threads = a.max_threads,
    const_bytes = a.const_bytes, max_dynamic_smem = a.max_dynamic_smem, ptx_version = a.ptx_version,
    binary_version = a.binary_version, cluster_size_must_be_set = a.cluster_size_must_be_set ~= 0,
    required_cluster = { a.required_cluster[0], a.required_cluster[1], a.required_cluster[2] },
    non_portable_cluster_allowed = a.non_portable_cluster_allowed ~= 0,
  }
end

-- { regs, static_smem, local_bytes, max_threads, const_bytes, max_dynamic_smem, ptx_version,
--   binary_version, required_cluster = {x, y, z}, ... }: a copy, so the caller may change it.
function Kernel:attributes()
  local out = {}
  for k, v in pairs(self.attrs) do out[k] = v end
  out.required_cluster = { unpack(self.attrs.required_cluster, 1, 3) }
  return out
end

-- The two attributes a launch may need raised, by their field in k.attrs.
local ATTRIBUTE = { max_dynamic_smem = C.CUASYNC_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    non_portable_cluster_allowed = C.CUASYNC_CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED }

local function set(k, field, v, what)
  local value = v == true and 1 or v == false and 0 or v
  native.check(C.cuasync_func_set_attribute(k.fn, ATTRIBUTE[field], value, what, errbuf, ERRLEN))
  k.attrs[field] = v
end

-- Set what a launch config needs (conf.needs, from launch.lua), for good.
local function apply(k, needs)
  for field, v in pairs(needs) do
    set(k, field, v, field == "max_dynamic_smem"
        and ("raising kernel '%s''s dynamic shared memory limit to %d bytes"):format(k.name, v)
        or ("allowing kernel '%s' non-portable cluster sizes"):format(k.name))
  end
end

-- Run f with what conf needs set, and put the old values back after: a query leaves no trace.
local function with_needs(k, needs, f)
  local old = {}
  for field, v in pairs(needs) do
    old[field] = k.attrs[field]
    set(k, field, v, "a query")
  end
  local ok, r = pcall(f)
  for field, v in pairs(old) do set(k, field, v, "a query") end
  if not ok then error(r, 0) end
  return r
end

-- k:prepare(cfg[, ...]) -> run: run(...) packs and launches; run() relaunches with the last arguments.
local function stale(k)
  util.fail("launch", ("kernel '%s' belongs to the CUDA context that cuasync.reset() ended: get it again with mod:kernel(\"%s\", ...)"):format(
    k.name, k.name))
end

-- The setter of k's parameter i into slot: the plan's tensor-map check first where k's program
-- has one (m: which tensor-map parameter this is); at: signature.setter's context. What
-- k:prepare and a graph node's :set (graph/nodes.lua) pack arguments through.
function M.setter(k, i, p, slot, m, at)
  local set = signature.setter(i, p, slot, at)
  local prog = k.module and k.module.program
  local hooks = prog and prog.hooks
  if hooks and hooks.map_check and p.kind == "tensormap" then
    local check = hooks.map_check(k.name, i, m)
    if check then
      local raw = set
      set = function(v) check(v); raw(v) end
    end
  end
  return set
end

function Kernel:prepare(cfg, ...)
  local nstate = native.state
  if self.generation ~= nstate.generation then stale(self) end
  local conf = launch.new(self, cfg)
  local skey, dep = pdl.prepared(self, conf.c), conf.c.programmatic   -- a dependent that never waits: refused
  apply(self, conf.needs)
  conf:preflight()
  local lc, c = conf.lc, conf.c
  local n = #self.params
  local params = ffi.new("void *[?]", math.max(n, 1))
  local slots, setters = {}, {}
  -- hooks a program carries (P:program installs the plan's config and tensor-map checks)
  local hooks = self.module.program.hooks
  if hooks and hooks.check_config then hooks.check_config(self.name, c) end
  local maps = 0
  for i, p in ipairs(self.params) do
    slots[i] = signature.slot(p)
    params[i - 1] = slots[i]
    if p.kind == "tensormap" then maps = maps + 1 end
    setters[i] = M.setter(self, i, p, slots[i], maps)
  end
  local fn, name, launch_c = self.fn, self.name, C.cuasync_launch
  local keep = { self, lc, slots, params, conf }   -- everything the driver reads stays alive
  local gen, watch, me = self.generation, self.module.watch, self
  -- a traced module (trace/init.lua): its buffer reset before, and the launch noted after
  local before, after
  if self.module.trace then before, after = trace.prepare(self, c) end
  -- state.args: the arguments last given inside a capture (or to prepare), which a graph node keeps
  local state = { packed = false }
  local function go()
    if nstate.generation ~= gen then stale(me) end
    if before then before(lc.hStream) end
    -- inside cuasync.graph's function the launch becomes a node (only on the capturing stream)
    local captured = cstate.active
    if captured and n > 0 and state.args == nil then
      util.fail("launch", ("kernel '%s': a prepared runner called with no arguments inside cuasync.graph's function, after it was last given them outside: pass the arguments inside the function (the graph keeps and checks what its nodes read)"):format(name))
    end
    if captured then
      capture.kernel(name, lc.hStream, keep, watch, { kind = "kernel", kernel = me, c = c, lc = lc, args = state.args })
      pdl.node(captured, me, dep)
    elseif watch and (watch.last ~= name or watch.where) then watchdog.launched(watch, name) end
    local rc = launch_c(fn, lc, params, name, errbuf, ERRLEN)
    if rc ~= 0 then native.check(rc) end
    if captured then capture.added() end
    pdl.launched(skey, me, dep)   -- its stream's last kernel (the note on a primary that never triggers)
    if after then after(lc.hStream) end
    return keep
  end
  local sig = self.sig
  local function not_packed()
    util.fail("launch", ("kernel '%s' takes %d argument%s (%s) and none were given yet"):format(
      name, n, n == 1 and "" or "s", sig))
  end
  local function wrong_count(got)
    util.fail("launch", ("kernel '%s' takes %d argument%s (%s), got %d"):format(
      name, n, n == 1 and "" or "s", sig, got))
  end
  local run = runner.make(n, setters, go, not_packed, wrong_count, state, cstate)
  if select("#", ...) > 0 then
    -- pack now, so that run() launches with these arguments
    runner.make(n, setters, function() end, not_packed, wrong_count, state, cstate)(...)
    state.args = { ... }
  end
  return run, c
end

-- k:launch(cfg, ...): check, pack and launch in one call. The checked config and its runner are
-- cached per config identity (launch.key): a config seen before costs a key and a look-up; a
-- changed one is a new key, checked in full. At most MAX_RUNS configs are kept per kernel.
local MAX_RUNS = 64
local launch_key = launch.key
function Kernel:launch(cfg, ...)
  -- before the arguments are packed: a stale kernel is named before a dead buffer argument is
  -- (the runner's own check comes after its setters)
  if self.generation ~= native.state.generation then stale(self) end
  local key = launch_key(cfg)
  local run = key and self.runs[key]
  if run then
    -- the cached config holds the stream's handle: a stream closed since must not reach the driver
    local s = cfg.stream
    if s ~= nil and s.open == 0 then util.fail("stream", handle.dead("stream", s)) end
  else
    run = self:prepare(cfg)
    if key then
      if self.nruns >= MAX_RUNS then self.runs, self.nruns = {}, 0 end
      self.runs[key], self.nruns = run, self.nruns + 1
    end
  end
  -- a cached runner would relaunch with the last arguments: k:launch takes them every time
  if select("#", ...) == 0 and #self.params > 0 then
    util.fail("launch", ("kernel '%s' takes %d argument%s (%s) and none were given yet"):format(
      self.name, #self.params, #self.params == 1 and "" or "s", self.sig))
  end
  return run(...)
end

-- Resident blocks per SM for a block size and dynamic shared memory.
function Kernel:occupancy(block_threads, smem)
  util.int_in("kernel.occupancy", "block_threads", block_threads, 1, 1024)
  smem = smem or 0
  util.int_in("kernel.occupancy", "smem", smem, 0, 2 ^ 31)
  local attrs = self.attrs
  if smem + attrs.static_smem > self.device.smem_optin then return 0 end
  if block_threads > attrs.max_threads then return 0 end
  -- the opt-in above 48 KiB is raised for the query and put back after
  local needs = smem > attrs.max_dynamic_smem and { max_dynamic_smem = smem } or {}
  return with_needs(self, needs, function() return launch.occupancy(self, block_threads, smem) end)
end

-- How many clusters of cfg's shape can be co-resident (0: the config cannot run as clusters).
function Kernel:max_active_clusters(cfg)
  if type(cfg) == "table" and cfg.cluster == nil then
    util.fail("kernel.max_active_clusters", "cfg.cluster is required (the cluster shape to count)")
  end
  local conf = launch.new(self, cfg)
  return with_needs(self, conf.needs, function() return conf:max_active_clusters() end)
end

-- The largest cluster (in blocks) this kernel can have with cfg's block and shared memory
-- (cuOccupancyMaxPotentialClusterSize); up to 16 with cfg.non_portable, else up to 8. cfg's
-- cluster field, if any, is not used.
function Kernel:max_cluster_size(cfg)
  if type(cfg) == "table" and cfg.cluster ~= nil then
    local c = {}
    for k, v in pairs(cfg) do c[k] = v end
    c.cluster, c.cluster_policy = nil, nil
    cfg = c
  end
  local conf = launch.new(self, cfg)
  local n = with_needs(self, conf.needs, function() return conf:max_cluster_size() end)
  -- without non_portable, 8 is the most a launch may ask
  return (not cfg.non_portable and n > rules.PORTABLE_CLUSTER) and rules.PORTABLE_CLUSTER or n
end

-- k:trace() -> the timeline of this module's last traced launch (trace/init.lua), after a synchronize.
function Kernel:trace() return trace.read(self) end

M.Kernel = Kernel
return M
