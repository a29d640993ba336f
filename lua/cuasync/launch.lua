-- The launch config object: a checked config (model/launch_rules.lua) bound to a kernel, owning
-- its native CUlaunchConfig and attribute array (ids by name), the function attributes the
-- kernel must have for it (.needs, which kernel.lua sets), the cluster and cooperative
-- preflights, and an identity key under which kernel:launch caches it. Data flows one way:
-- kernel.lua calls this module; this module reads the kernel's fields and calls none of its methods.
local ffi = require("ffi")
local native = require("cuasync.native")
local rules = require("cuasync.model.launch_rules")
local clusters = require("cuasync.model.clusters")
local streams = require("cuasync.stream")
local device = require("cuasync.device")
local util = require("cuasync.util")
require("cuasync.cdef.types")
require("cuasync.cdef.launch")
require("cuasync.cdef.module")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

local M = {}
local Config = {}
Config.__index = Config

local function fmt(d) return ("{%d, %d, %d}"):format(d[1], d[2], d[3]) end

function Config:__tostring()
  local c = self.c
  return ("launch of '%s': grid %s block %s smem %d%s%s%s%s"):format(self.kernel.name, fmt(c.grid), fmt(c.block), c.smem,
    c.cluster and (" cluster " .. fmt(c.cluster)) or "", c.cooperative and " cooperative" or "",
    c.programmatic and " programmatic" or "", c.stream and " on a stream" or "")
end

-- The identity of a config table: the same key means the same checked config. nil when the
-- table holds anything a key cannot stand for (then the config is checked in full, every call).
local KEYED = { grid = 1, block = 2, smem = 3, cluster = 4, stream = 5, non_portable = 6, cluster_policy = 7,
                cooperative = 8, programmatic = 9 }
local parts = {}
local function dims_part(v)
  local t = type(v)
  if t == "number" then return v end
  if t ~= "table" then return nil end
  local x, y, z = v[1], v[2], v[3]
  local n = 0
  for _ in pairs(v) do n = n + 1 end
  if z ~= nil then if n ~= 3 then return nil end return x .. "," .. y .. "," .. z end
  if y ~= nil then if n ~= 2 then return nil end return x .. "," .. y end
  if n ~= 1 or x == nil then return nil end
  return x .. ","
end

function M.key(cfg)
  if type(cfg) ~= "table" then return nil end
  for k in pairs(cfg) do
    if not KEYED[k] then return nil end
  end
  local grid, block = dims_part(cfg.grid), dims_part(cfg.block)
  if not grid or not block then return nil end
  parts[1], parts[2] = grid, block
  parts[3] = cfg.smem or ""
  local cl = cfg.cluster
  if cl ~= nil then cl = dims_part(cl); if not cl then return nil end end
  parts[4] = cl or ""
  local s = cfg.stream
  parts[5] = s == nil and "" or streams.key(s)   -- not a cuasync stream: no cached runner (prepare names it)
  parts[6] = tostring(cfg.non_portable)
  parts[7] = tostring(cfg.cluster_policy)
  parts[8] = tostring(cfg.cooperative)
  parts[9] = tostring(cfg.programmatic)
  for i = 1, 9 do
    local t = type(parts[i])
    if t ~= "string" and t ~= "number" then return nil end
  end
  return table.concat(parts, "|", 1, 9)
end

local function query(fn, k, lc)
  local n = ffi.new("int[1]")
  native.check(fn(k.fn, lc, n, k.name, errbuf, ERRLEN))
  return n[0]
end

-- Resident blocks per SM of kernel k for a block size and dynamic shared memory (the kernel's
-- attributes must already allow that much: kernel.lua sets them).
function M.occupancy(k, block_threads, smem)
  local n = ffi.new("int[1]")
  native.check(C.cuasync_func_occupancy(k.fn, block_threads, smem, n, k.name, errbuf, ERRLEN))
  return n[0]
end

-- The function attributes a checked config c needs beyond what the kernel has (attrs, read
-- once per kernel), keyed by their field there: { max_dynamic_smem = n,
-- non_portable_cluster_allowed = true }, each only when needed.
local function needs_of(c, attrs)
  local needs = {}
  if c.smem > attrs.max_dynamic_smem then needs.max_dynamic_smem = c.smem end
  if c.non_portable and not attrs.non_portable_cluster_allowed then needs.non_portable_cluster_allowed = true end
  return needs
end

-- The native config for checked config c (the attribute array kept alive beside it).
local function native_config(c, stream)
  local lc = ffi.new("CUlaunchConfig")
  lc.gridDimX, lc.gridDimY, lc.gridDimZ = c.grid[1], c.grid[2], c.grid[3]
  lc.blockDimX, lc.blockDimY, lc.blockDimZ = c.block[1], c.block[2], c.block[3]
  lc.sharedMemBytes = c.smem
  lc.hStream = stream
  local la = ffi.new("CUlaunchAttribute[4]")
  local n = 0
  if c.cluster then
    la[n].id = C.CUASYNC_CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    la[n].value.clusterDim.x, la[n].value.clusterDim.y, la[n].value.clusterDim.z =
      c.cluster[1], c.cluster[2], c.cluster[3]
    n = n + 1
    if c.policy then
      la[n].id = C.CUASYNC_CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE
      la[n].value.clusterSchedulingPolicyPreference = c.policy
      n = n + 1
    end
  end
  if c.cooperative then
    la[n].id = C.CUASYNC_CU_LAUNCH_ATTRIBUTE_COOPERATIVE
    la[n].value.cooperative = 1
    n = n + 1
  end
  if c.programmatic then
    la[n].id = C.CUASYNC_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    la[n].value.programmaticStreamSerializationAllowed = 1
    n = n + 1
  end
  lc.attrs = n > 0 and la or nil
  lc.numAttrs = n
  return lc, la
end

-- M.new(kernel, cfg) -> Config: checked against the device's limits and the kernel's attributes,
-- its native struct built, and .needs: the attributes kernel.lua must set before a launch or a
-- query. Reads the kernel's fields; calls nothing on it.
function M.new(k, cfg)
  local attrs = k.attrs
  local c = rules.check(cfg, k.device:limits(), attrs, k.name)
  if c.programmatic and device.driver_version() < 11080 then
    util.fail("launch", ("programmatic = true needs a CUDA 11.8 driver or newer (this one is %d)"):format(device.driver_version()))
  end
  local lc, la = native_config(c, streams.handle(c.stream))
  return setmetatable({ kernel = k, c = c, lc = lc, la = la, attrs = attrs, key = M.key(cfg),
                        needs = needs_of(c, attrs) }, Config)
end

-- Refuse, with the limit that makes it impossible, a cluster larger than this kernel can have
-- in this config, or one that can never be resident; a cooperative grid that cannot be
-- co-resident (the grid-wide sync waits for every block). Run after .needs are set.
function Config:preflight()
  local k, c, attrs = self.kernel, self.c, self.attrs
  if c.cluster then
    local size = c.cluster[1] * c.cluster[2] * c.cluster[3]
    local info = { cluster = c.cluster, size = size, kernel = k.name, block = c.block, dev = k.device,
                   k = { threads = c.threads, smem = c.smem + attrs.static_smem, regs = attrs.regs } }
    if size > rules.PORTABLE_CLUSTER then
      info.max = query(C.cuasync_launch_max_cluster_size, k, self.lc)
      if size > info.max then util.fail("launch", clusters.too_large(info)) end
    end
    if query(C.cuasync_launch_max_active_clusters, k, self.lc) == 0 then
      util.fail("launch", clusters.never_resident(info))
    end
  end
  if c.cooperative then
    local per_sm = M.occupancy(k, c.threads, c.smem)
    local most = per_sm * k.device.sms
    if c.blocks > most then
      util.fail("launch", ("cooperative launch of kernel '%s' has %d blocks but only %d can be resident at once (%d per SM x %d SMs with block %s and %d bytes of dynamic shared memory): a grid-wide sync needs every block resident"):format(
        k.name, c.blocks, most, per_sm, k.device.sms, fmt(c.block), c.smem))
    end
  end
  return self
end

-- How many clusters of this config's shape can be co-resident (with .needs set).
function Config:max_active_clusters()
  return query(C.cuasync_launch_max_active_clusters, self.kernel, self.lc)
end

-- The largest cluster this config's kernel can have (with .needs set).
function Config:max_cluster_size()
  return query(C.cuasync_launch_max_cluster_size, self.kernel, self.lc)
end

M.Config = Config
return M
