-- Kernels: typed signatures checked against the cubin, attributes, and launches. A prepared
-- launch does every check and all packing once; run(...) only writes the arguments and calls the
-- driver, and run() with no arguments relaunches with the last ones.
local ffi = require("ffi")
local native = require("cuasync.native")
local launchcfg = require("cuasync.launchcfg")
local signature = require("cuasync.signature")
local streams = require("cuasync.stream")
local util = require("cuasync.util")
local clusters = require("cuasync.clusters")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

local M = {}
local Kernel = {}
Kernel.__index = Kernel

local CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
local CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14
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
      self.sig, #self.params, #self.params == 1 and "" or "s", self.name, n, describe_sizes(n, sizes)), 3)
  end
  for i, p in ipairs(self.params) do
    local real = tonumber(sizes[i - 1])
    if real ~= p.size then
      util.fail("kernel", ("signature \"%s\": parameter %d is %s (%d bytes) but kernel '%s' takes %d bytes there"):format(
        self.sig, i, p.kind, p.size, self.name, real), 3)
    end
  end
end

function M.new(mod, name, lowered, params, sig)
  local fn = ffi.new("CUfunction[1]")
  local rc = C.cuasync_module_function(fn, mod.handle.handle, lowered, mod.name, errbuf, ERRLEN)
  if rc ~= 0 then
    local msg = native.message()
    if msg:find("CUDA_ERROR_NOT_FOUND", 1, true) then
      msg = msg .. " (declare it extern \"C\", or list a template or C++ name in the program's expressions)"
    end
    error(msg, 3)
  end
  local k = setmetatable({ module = mod, name = name, lowered = lowered, fn = fn[0], params = params,
                           sig = sig, device = mod.device }, Kernel)
  k:check_signature()
  return k
end

-- { regs, static_smem, local_bytes, max_threads, const_bytes, max_dynamic_smem, ptx_version,
--   binary_version, required_cluster = {x, y, z} }
function Kernel:attributes()
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

function Kernel:set_attribute(attrib, value, what)
  native.check(C.cuasync_func_set_attribute(self.fn, attrib, value, what, errbuf, ERRLEN))
end

-- Dynamic shared memory above the default limit (48 KiB) needs the kernel's opt-in attribute
-- raised first, for launches and for occupancy queries alike.
function Kernel:reserve_smem(smem, attrs)
  attrs = attrs or self:attributes()
  if smem > attrs.max_dynamic_smem then
    self:set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem,
      ("raising kernel '%s''s dynamic shared memory limit to %d bytes"):format(self.name, smem))
  end
end

-- The CUlaunchConfig (and its attribute array) for a checked config; a cluster launch is also
-- checked against the driver's occupancy answers unless `no_preflight`.
function Kernel:launch_config(cfg, no_preflight)
  local attrs = self:attributes()
  local c = launchcfg.check(cfg, self.device:limits(), attrs, self.name)
  local stream = streams.handle(c.stream)
  self:reserve_smem(c.smem, attrs)
  if c.non_portable and not attrs.non_portable_cluster_allowed then
    self:set_attribute(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1,
      ("allowing kernel '%s' non-portable cluster sizes"):format(self.name))
  end
  local lc = ffi.new("CUlaunchConfig")
  lc.gridDimX, lc.gridDimY, lc.gridDimZ = c.grid[1], c.grid[2], c.grid[3]
  lc.blockDimX, lc.blockDimY, lc.blockDimZ = c.block[1], c.block[2], c.block[3]
  lc.sharedMemBytes = c.smem
  lc.hStream = stream
  local la = ffi.new("CUlaunchAttribute[2]")
  local n = 0
  if c.cluster then
    la[n].id = 4                   -- CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    la[n].value.clusterDim.x, la[n].value.clusterDim.y, la[n].value.clusterDim.z =
      c.cluster[1], c.cluster[2], c.cluster[3]
    n = n + 1
    if c.policy then
      la[n].id = 5                 -- CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE
      la[n].value.clusterSchedulingPolicyPreference = c.policy
      n = n + 1
    end
  end
  lc.attrs = n > 0 and la or nil
  lc.numAttrs = n
  if c.cluster and not no_preflight then self:cluster_preflight(lc, c, attrs) end
  return lc, la, c
end

local function query(fn, self, lc)
  local n = ffi.new("int[1]")
  native.check(fn(self.fn, lc, n, self.name, errbuf, ERRLEN))
  return n[0]
end

-- Refuse, with the limit that makes it impossible, a cluster larger than this kernel can have
-- in this config, or one that can never be resident.
function Kernel:cluster_preflight(lc, c, attrs)
  local size = c.cluster[1] * c.cluster[2] * c.cluster[3]
  local info = { cluster = c.cluster, size = size, kernel = self.name, block = c.block, dev = self.device,
                 k = { threads = c.threads, smem = c.smem + attrs.static_smem, regs = attrs.regs } }
  if size > launchcfg.PORTABLE_CLUSTER then
    info.max = query(C.cuasync_launch_max_cluster_size, self, lc)
    if size > info.max then util.fail("launch", clusters.too_large(info), 4) end
  end
  if query(C.cuasync_launch_max_active_clusters, self, lc) == 0 then
    util.fail("launch", clusters.never_resident(info), 4)
  end
end

-- A function of exactly n arguments, generated so that LuaJIT compiles it straight: each
-- argument goes through its setter into its slot, then launch().
local function runner(n, setters, launch, not_packed, wrong_count, state)
  if n == 0 then
    return function(...)
      if select("#", ...) ~= 0 then wrong_count(select("#", ...)) end
      return launch()
    end
  end
  local names, sets, args = {}, {}, {}
  for i = 1, n do
    names[i], args[i], sets[i] = "s" .. i, "a" .. i, ("s%d(a%d)"):format(i, i)
  end
  local src = ([[
local launch, not_packed, wrong_count, state, %s = ...
return function(...)
  local n = select("#", ...)
  if n == 0 then
    if not state.packed then not_packed() end
    return launch()
  end
  if n ~= %d then wrong_count(n) end
  local %s = ...
  %s
  state.packed = true
  return launch()
end]]):format(table.concat(names, ", "), n, table.concat(args, ", "), table.concat(sets, " "))
  return assert(loadstring(src, "=cuasync.prepared"))(launch, not_packed, wrong_count, state, unpack(setters))
end

-- k:prepare(cfg[, ...]) -> run: run(...) packs and launches; run() relaunches with the last arguments.
function Kernel:prepare(cfg, ...)
  local lc, la, c = self:launch_config(cfg)
  local n = #self.params
  local params = ffi.new("void *[?]", math.max(n, 1))
  local slots, setters = {}, {}
  for i, p in ipairs(self.params) do
    slots[i] = signature.slot(p)
    params[i - 1] = slots[i]
    setters[i] = signature.setter(i, p, slots[i])
  end
  local fn, name, launch_c = self.fn, self.name, C.cuasync_launch
  local keep = { self, lc, la, slots, params }   -- everything the driver reads stays alive
  local function launch()
    local rc = launch_c(fn, lc, params, name, errbuf, ERRLEN)
    if rc ~= 0 then error(ffi.string(errbuf), 3) end
    return keep
  end
  local sig = self.sig
  local function not_packed()
    error(("cuasync.launch: kernel '%s' takes %d argument%s (%s) and none were given yet"):format(
      name, n, n == 1 and "" or "s", sig), 3)
  end
  local function wrong_count(got)
    error(("cuasync.launch: kernel '%s' takes %d argument%s (%s), got %d"):format(
      name, n, n == 1 and "" or "s", sig, got), 3)
  end
  local state = { packed = false }
  local run = runner(n, setters, launch, not_packed, wrong_count, state)
  if select("#", ...) > 0 then
    -- pack now, so that run() launches with these arguments
    runner(n, setters, function() end, not_packed, wrong_count, state)(...)
  end
  return run, c
end

-- k:launch(cfg, ...): check, pack and launch in one call (the slow path: prepare once instead
-- when launching in a loop).
function Kernel:launch(cfg, ...)
  local run = self:prepare(cfg)
  run(...)
end

-- Resident blocks per SM for a block size and dynamic shared memory.
function Kernel:occupancy(block_threads, smem)
  util.count("kernel.occupancy", "block_threads", block_threads)
  util.count("kernel.occupancy", "smem", smem or 0, 2, true)
  local attrs = self:attributes()
  if (smem or 0) + attrs.static_smem > self.device.smem_optin then return 0 end
  self:reserve_smem(smem or 0, attrs)
  local n = ffi.new("int[1]")
  native.check(C.cuasync_func_occupancy(self.fn, block_threads, smem or 0, n, self.name, errbuf, ERRLEN))
  return n[0]
end

-- How many clusters of cfg's shape can be co-resident (0: the config cannot run as clusters).
function Kernel:max_active_clusters(cfg)
  if type(cfg) == "table" and cfg.cluster == nil then
    util.fail("kernel.max_active_clusters", "cfg.cluster is required (the cluster shape to count)")
  end
  return query(C.cuasync_launch_max_active_clusters, self, (self:launch_config(cfg, true)))
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
  local n = query(C.cuasync_launch_max_cluster_size, self, (self:launch_config(cfg, true)))
  -- the attribute non_portable sets stays set on the function: without it, 8 is the most a launch may ask
  if not cfg.non_portable and n > launchcfg.PORTABLE_CLUSTER then n = launchcfg.PORTABLE_CLUSTER end
  return n
end

M.Kernel = Kernel
return M
