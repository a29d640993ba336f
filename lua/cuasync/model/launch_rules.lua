-- The rules of a launch configuration, checked before the driver sees it. Pure Lua: the device's
-- limits and the kernel's attributes are passed in (launch.lua owns the native config object).
local util = require("cuasync.util")

local M = {}

M.PORTABLE_CLUSTER = 8    -- blocks per cluster every sm_90 device guarantees
M.MAX_CLUSTER = 16        -- with the non-portable attribute (H100/H200)

-- The limits of an sm_90 device (H100/H200), for checking a config where no GPU is present. The
-- same fields as a device's :limits(), so a plan's :check takes either. Per block: threads, block
-- and grid dimensions, shared memory without opt-in (48 KiB) and with it (227 KiB). Per SM (the
-- CUDA programming guide's table for compute capability 9.0; the device's own attributes where a
-- GPU is open): threads 2048, warps 64, resident blocks 32, 64 Ki 32-bit registers, 228 KiB of
-- shared memory; registers per thread 255 (a compile limit: no driver attribute reports it).
M.sm_90 = {
  name = "sm_90 (H100/H200)", cc = 90, max_threads_per_block = 1024, max_block = { 1024, 1024, 64 },
  max_grid = { 2147483647, 65535, 65535 }, smem_per_block = 49152, smem_optin = 232448, cluster = true,
  reserved_smem_per_block = 1024,
  max_threads_per_sm = 2048, max_warps_per_sm = 64, max_blocks_per_sm = 32, regs_per_sm = 65536,
  smem_per_sm = 233472, regs_per_thread = 255,
}

-- The registers __launch_bounds__(threads, 1) lets ptxas give each thread of a block: the SM's
-- 65536 over the threads, down to a multiple of 8 (the allocation unit), at most 248. The GEMM's
-- and attention's kernels compile for it and move registers from the producer with setmaxnreg.
function M.launch_bound_registers(threads)
  return math.min(248, math.floor(M.sm_90.regs_per_sm / threads / 8) * 8)
end

-- The one fallback: the open device's limits, else sm_90's (a compile-only path has no GPU).
function M.limits_of(dev)
  return dev and dev:limits() or M.sm_90
end

-- The fields a launch config takes (k:launch, k:prepare, cuasync.check_launch): the one list,
-- which docs/reference.md's `cfg` must name exactly (spec/house/docs_spec.lua).
M.FIELDS = { grid = true, block = true, cluster = true, smem = true, stream = true,
             non_portable = true, cluster_policy = true, cooperative = true, programmatic = true }
local FIELDS = M.FIELDS
local POLICIES = { default = 0, spread = 1, load_balancing = 2 }
local AXIS = { "x", "y", "z" }

local function fail(msg) util.fail("launch", msg) end

local function fmt(d) return ("{%d, %d, %d}"):format(d[1], d[2], d[3]) end

-- n or {x[, y[, z]]} -> {x, y, z}
local function dims(name, v)
  local d
  if type(v) == "number" then
    d = { v }
  elseif type(v) == "table" then
    local n, top = 0, 0
    for k in pairs(v) do
      if type(k) ~= "number" or k < 1 or k ~= math.floor(k) then
        fail(("%s must be a list {x[, y[, z]]} (got key %s)"):format(name, util.describe(k)))
      end
      n, top = n + 1, math.max(top, k)
    end
    if n < 1 or top > 3 then
      fail(("%s must have 1 to 3 dimensions (got %d)"):format(name, math.max(n, top)))
    end
    if n ~= top then
      fail(("%s has a nil before its last dimension (a hole is refused, never read as 1)"):format(name))
    end
    d = { v[1], v[2], v[3] }
  elseif type(v) == "nil" then
    fail(("%s is required"):format(name))
  else
    fail(("%s must be a number or {x[, y[, z]]} (got %s)"):format(name, type(v)))
  end
  for i = 1, 3 do
    local x = d[i]
    if x == nil then
      d[i] = 1
    elseif not util.is_integer(x) or x < 1 then
      fail(("%s.%s must be a positive integer (got %s)"):format(name, AXIS[i], util.describe(x)))
    end
  end
  return d
end

-- The kernel attributes the rules read: a kernel's :attributes(), or those of them a caller of
-- check_launch knows. Each rule on an attribute is checked where that attribute is given.
local ATTRS = { "max_threads", "static_smem", "binary_version" }
local function check_attrs(attrs)
  util.not_null("launch", "attrs", attrs, "a kernel's :attributes() table")
  if type(attrs) == "nil" then return nil end
  if type(attrs) ~= "table" then
    fail(("attrs must be a kernel's :attributes() table (got %s)"):format(type(attrs)))
  end
  for _, f in ipairs(ATTRS) do
    local v = attrs[f]
    if type(v) ~= "nil" and (not util.is_integer(v) or v < 0) then
      fail(("attrs.%s must be a non-negative integer (got %s)"):format(f, util.describe(v)))
    end
  end
  local rc = attrs.required_cluster
  if type(rc) ~= "nil" then
    local ok = type(rc) == "table"
    for i = 1, 3 do ok = ok and util.is_integer(rc[i]) and rc[i] >= 0 end
    if not ok then
      fail(("attrs.required_cluster must be a list of 3 non-negative integers {x, y, z} (got %s)"):format(util.describe(rc)))
    end
  end
  return attrs
end

-- check(cfg, limits[, attrs[, kernel_name]]) -> normalized config.
-- limits: a device's :limits() or M.sm_90; attrs: the kernel's attributes when known (see check_attrs).
function M.check(cfg, limits, attrs, kname)
  if type(cfg) ~= "table" then
    fail(("config must be a table {grid = ..., block = ...} (got %s)"):format(type(cfg)))
  end
  util.not_null("launch", "limits", limits, "a device's :limits() or cuasync.limits.sm_90")
  if limits == nil then limits = M.limits_of(nil) end
  if type(limits) ~= "table" or type(limits.max_grid) ~= "table" or type(limits.max_block) ~= "table" then
    fail("limits must be a device's :limits() or cuasync.limits.sm_90")
  end
  attrs = check_attrs(attrs)
  -- docs/reference.md once listed this field as pdl; it was never taken (issue 41)
  if type(cfg.pdl) ~= "nil" then
    fail(("unknown field 'pdl' (programmatic dependent launch is programmatic = true; fields: %s)"):format(util.sorted_keys(FIELDS)))
  end
  util.known_fields("launch", cfg, FIELDS)
  local grid, block = dims("grid", cfg.grid), dims("block", cfg.block)
  for i = 1, 3 do
    if grid[i] > limits.max_grid[i] then
      fail(("grid.%s = %d exceeds the device's limit of %d"):format(AXIS[i], grid[i], limits.max_grid[i]))
    end
    if block[i] > limits.max_block[i] then
      fail(("block.%s = %d exceeds the device's limit of %d"):format(AXIS[i], block[i], limits.max_block[i]))
    end
  end
  local threads = block[1] * block[2] * block[3]
  if threads > limits.max_threads_per_block then
    fail(("block %s has %d threads (at most %d per block on this device)"):format(fmt(block), threads,
         limits.max_threads_per_block))
  end
  if attrs and attrs.max_threads and threads > attrs.max_threads then
    fail(("block %s has %d threads but kernel '%s' can run at most %d per block (its register use "
         .. "limits it)"):format(fmt(block), threads, kname or "?", attrs.max_threads))
  end

  local smem = cfg.smem or 0
  if not util.is_integer(smem) or smem < 0 then
    fail(("smem must be a non-negative integer number of bytes (got %s)"):format(util.describe(smem)))
  end
  local static = attrs and attrs.static_smem or 0
  if smem + static > limits.smem_optin then
    fail(("smem = %d plus %d bytes of static shared memory exceeds the device's %d bytes per block "
         .. "(smem_optin)"):format(smem, static, limits.smem_optin))
  end

  local non_portable = cfg.non_portable
  if type(non_portable) ~= "nil" and type(non_portable) ~= "boolean" then
    fail(("non_portable must be a boolean (got %s)"):format(type(non_portable)))
  end
  local policy = cfg.cluster_policy
  if type(policy) ~= "nil" and (type(policy) ~= "string" or POLICIES[policy] == nil) then
    fail(("cluster_policy must be \"default\", \"spread\" or \"load_balancing\" (got %s)"):format(
         util.describe(policy)))
  end

  local cluster
  if type(cfg.cluster) ~= "nil" then
    cluster = dims("cluster", cfg.cluster)
    if not limits.cluster then
      fail("cluster launch needs a device that supports thread-block clusters (compute capability "
           .. "9.0 or newer); " .. (limits.name or "this device") .. " does not")
    end
    for i = 1, 3 do
      if grid[i] % cluster[i] ~= 0 then
        fail(("grid.%s = %d is not divisible by cluster.%s = %d (the grid must be a whole number of "
             .. "clusters)"):format(AXIS[i], grid[i], AXIS[i], cluster[i]))
      end
    end
    local size = cluster[1] * cluster[2] * cluster[3]
    if size > M.MAX_CLUSTER then
      fail(("cluster %s has %d blocks (at most %d, and more than %d needs non_portable = true)"):format(
           fmt(cluster), size, M.MAX_CLUSTER, M.PORTABLE_CLUSTER))
    elseif size > M.PORTABLE_CLUSTER and not non_portable then
      fail(("cluster %s has %d blocks (at most %d portable; set non_portable = true for up to %d)"):format(
           fmt(cluster), size, M.PORTABLE_CLUSTER, M.MAX_CLUSTER))
    end
    if attrs and attrs.binary_version and attrs.binary_version < 90 then
      fail(("kernel '%s' is built for sm_%d, which has no thread-block clusters (build it for sm_90 or newer to launch it with cluster dims)"):format(
           kname or "?", attrs.binary_version))
    end
    if attrs then
      local rc = attrs.required_cluster
      if rc and rc[1] > 0 and (rc[1] ~= cluster[1] or rc[2] ~= cluster[2] or rc[3] ~= cluster[3]) then
        fail(("cluster %s differs from kernel '%s''s __cluster_dims__ %s"):format(fmt(cluster),
             kname or "?", fmt(rc)))
      end
    end
  elseif type(policy) ~= "nil" then
    fail("cluster_policy needs cluster dims")
  end
  local cooperative = cfg.cooperative
  if type(cooperative) ~= "nil" and type(cooperative) ~= "boolean" then
    fail(("cooperative must be a boolean (got %s)"):format(type(cooperative)))
  end
  -- programmatic dependent launch: this grid may start while the one before it on the stream
  -- runs, and waits for it in griddepcontrol.wait (cuasync::pdl::wait())
  local programmatic = cfg.programmatic
  if type(programmatic) ~= "nil" and type(programmatic) ~= "boolean" then
    fail(("programmatic must be a boolean (got %s)"):format(type(programmatic)))
  end
  if programmatic and limits.cc and limits.cc < 90 then
    fail(("programmatic = true needs compute capability 9.0 or newer (programmatic dependent launch); %s is %d.%d"):format(
         limits.name or "this device", math.floor(limits.cc / 10), limits.cc % 10))
  end
  if programmatic and attrs and attrs.binary_version and attrs.binary_version < 90 then
    fail(("programmatic = true: kernel '%s' is built for sm_%d, which has no griddepcontrol (build it for sm_90 or newer)"):format(
         kname or "?", attrs.binary_version))
  end

  return { grid = grid, block = block, smem = smem, cluster = cluster, stream = cfg.stream,
           non_portable = non_portable or false, policy = policy and POLICIES[policy] or nil,
           threads = threads, blocks = grid[1] * grid[2] * grid[3], cooperative = cooperative or false,
           programmatic = programmatic or false }
end

return M
