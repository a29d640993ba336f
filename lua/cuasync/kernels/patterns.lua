-- Drivers for the async-copy pattern kernels of kernels-src/ (patterns 1-7 and 9 of the device
-- library): each pattern's rules checked in Lua before launch, its grid sized from the device,
-- its CPU reference, and a verifier that checks every element of a result.
--   local p = cuasync.patterns.kernel("pipe_unified", { stages = 4 })
--   local run = p:prepare(out, inp, n [, { grid = g }])   -- out, inp: device buffers of u32
--   run(); p:verify(in_host, out_host, n)                 -- true, or false and the first wrong element
local ffi = require("ffi")
local bit = require("bit")
local program = require("cuasync.program")
local device = require("cuasync.device")
local rules = require("cuasync.model.launch_rules")
local ring = require("cuasync.model.ring")
local buffer = require("cuasync.buffer")
local stream = require("cuasync.stream")
local util = require("cuasync.util")

local M = {}

local function fail(msg) util.fail("patterns", msg) end

-- How each kernel computes (see the kernel files):
--   add_one  out[i] = in[i] + 1;   pad: also out[n .. round_up(n, 4)) = 1 (zero-filled tail)
--   split    out[i] = lcg^WORK(in[i]) + in[i ^ 1]
--   reduce   out[i] = out_before[i] + in[i]
-- vec: n must be a multiple of 4 (16-byte copies). smem(o): dynamic shared memory per block.
local WORK = 64
local PATTERNS = {
  stage_sync       = { file = "stage_copy.cu", threads = 256, op = "add_one", group = 1 },
  stage_ca4        = { file = "stage_copy.cu", threads = 256, op = "add_one", pad = true, group = 1 },
  stage_ca16       = { file = "stage_copy.cu", threads = 256, op = "add_one", pad = true, group = 1 },
  stage_cg16       = { file = "stage_copy.cu", threads = 256, op = "add_one", pad = true, group = 1 },
  block_groups     = { file = "block_async.cu", threads = 256, op = "add_one", vec = true, stages = 4, max_stages = 16,
                       smem = function(o) return ring.plan{ stages = o.stages, stage_bytes = 256 * 2 * 16 } end, group = 2 },
  block_mbarrier   = { file = "block_async.cu", threads = 256, op = "add_one", vec = true, stages = 4, max_stages = 16,
                       smem = function(o) return ring.plan{ stages = o.stages, stage_bytes = 256 * 2 * 16 } end, group = 2 },
  split_arrive     = { file = "split_arrive.cu", threads = 256, op = "split", defines = { WORK = WORK }, group = 3 },
  joined           = { file = "split_arrive.cu", threads = 256, op = "split", defines = { WORK = WORK }, group = 3 },
  warp_specialized = { file = "warp_specialized.cu", threads = 160, op = "add_one", vec = true,
                       smem = function() return ring.plan{ stages = 2, stage_bytes = 1024 * 16 } end, group = 4 },
  pipe_single      = { file = "pipelines.cu", threads = 256, op = "add_one", vec = true,
                       smem = function() return ring.plan{ stages = 1, stage_bytes = 256 * 2 * 16 } end, group = 5 },
  pipe_unified     = { file = "pipelines.cu", threads = 256, op = "add_one", vec = true, stages = 4, max_stages = 64,
                       smem = function(o) return ring.plan{ stages = o.stages, stage_bytes = 256 * 2 * 16 } end, group = 5 },
  pipe_partitioned = { file = "pipelines.cu", threads = 160, op = "add_one", vec = true, stages = 4, max_stages = 64,
                       tile_bytes = 8192, smem = function(o) return ring.plan{ stages = o.stages, stage_bytes = o.tile_bytes } end, group = 5 },
  cxx_single       = { file = "libcudacxx_pipelines.cu", threads = 256, op = "add_one", vec = true, group = 6 },
  cxx_unified      = { file = "libcudacxx_pipelines.cu", threads = 256, op = "add_one", vec = true, stages = 4,
                       max_stages = 8, group = 6 },
  cxx_partitioned  = { file = "libcudacxx_pipelines.cu", threads = 256, op = "add_one", vec = true, stages = 4,
                       max_stages = 8, group = 6 },
  bulk_add_one     = { file = "bulk_add_one.cu", threads = 256, op = "add_one", vec = true, stages = 4, max_stages = 16,
                       tile_bytes = 8192, smem = function(o) return ring.plan{ stages = o.stages, stage_bytes = o.tile_bytes } end, group = 7 },
  reduce_add_u32   = { file = "bulk_reduce.cu", threads = 32, op = "reduce", vec = true, elem = "uint32_t",
                       tile_bytes = 16384, smem = function(o) return ring.plan{ stages = 2, stage_bytes = o.tile_bytes } end, group = 9 },
  reduce_add_f32   = { file = "bulk_reduce.cu", threads = 32, op = "reduce", vec = true, elem = "float",
                       tile_bytes = 16384, smem = function(o) return ring.plan{ stages = 2, stage_bytes = o.tile_bytes } end, group = 9 },
}
M.WORK = WORK

function M.names()
  local t = {}
  for name in pairs(PATTERNS) do t[#t + 1] = name end
  table.sort(t, function(a, b)
    local ga, gb = PATTERNS[a].group, PATTERNS[b].group
    if ga ~= gb then return ga < gb end
    return a < b
  end)
  return t
end

local Pattern = {}
Pattern.__index = Pattern

-- The checked options, the shared memory and the program (not compiled) of pattern `name`.
local KERNEL_FIELDS, PROGRAM_FIELDS = { stages = true, tile_bytes = true }, { stages = true, tile_bytes = true, name = true }
local function checked(name, opts, fields)
  util.kind("patterns", "name", name, "string")
  local spec = PATTERNS[name]
  if not spec then fail(("unknown pattern '%s' (patterns: %s)"):format(name, table.concat(M.names(), ", "))) end
  opts = opts or {}
  util.kind("patterns", "opts", opts, "table")
  util.known_fields("patterns", opts, fields or KERNEL_FIELDS, 2)
  local o = { stages = spec.stages, tile_bytes = spec.tile_bytes }
  if opts.stages ~= nil then
    if not spec.stages then fail(("pattern '%s' has no stages to set"):format(name)) end
    o.stages = util.count("patterns", "stages", opts.stages)
    if o.stages > spec.max_stages then
      fail(("stages = %d exceeds %d for pattern '%s'"):format(o.stages, spec.max_stages, name))
    end
  end
  if opts.tile_bytes ~= nil then
    if not spec.tile_bytes then fail(("pattern '%s' has no tile_bytes to set"):format(name)) end
    o.tile_bytes = util.count("patterns", "tile_bytes", opts.tile_bytes)
    if o.tile_bytes % 64 ~= 0 then
      fail(("tile_bytes = %d is not a multiple of 64 (bulk copies move 16-byte units, in up to 4 parts)"):format(o.tile_bytes))
    end
  end
  local r = spec.smem and spec.smem(o)
  local smem = r and r.smem or 0
  local limits = rules.limits_of(device.peek())
  if smem > limits.smem_optin then
    fail(("pattern '%s' with stages = %s needs %d bytes of shared memory per block, over the device's %d (smem_optin) by %d: fewer stages or smaller tiles"):format(
      name, tostring(o.stages), smem, limits.smem_optin, smem - limits.smem_optin))
  end
  local defines = {}
  for k, v in pairs(spec.defines or {}) do defines[k] = v end
  if o.stages then defines.STAGES = o.stages end
  if o.tile_bytes then defines.TILE_BYTES = o.tile_bytes end
  return spec, o, smem, program.new{ file = spec.file, defines = defines }
end

-- patterns.program{ name = "pipe_unified", stages = n, tile_bytes = n } -> the checked program
-- (not compiled): what a sweep prunes and compiles with.
function M.program(opts)
  util.kind("patterns", "opts", opts, "table")
  local _, _, _, prog = checked(opts.name, opts, PROGRAM_FIELDS)
  return prog
end

local function compiled(name, opts, fields)
  local spec, o, smem, prog = checked(name, opts, fields)
  return setmetatable({ name = name, spec = spec, stages = o.stages, tile_bytes = o.tile_bytes, smem = smem,
                        module = prog:compile(), elem = spec.elem or "uint32_t" }, Pattern)
end

-- patterns.kernel(name[, { stages = n, tile_bytes = n }])
function M.kernel(name, opts) return compiled(name, opts, KERNEL_FIELDS) end

function Pattern:kernel()
  self.k = self.k or self.module:kernel(self.name, "ptr, ptr, u64")
  return self.k
end

-- Elements the kernel writes for n inputs (the cp.async kernels zero-fill up to a whole vector).
function Pattern:out_elems(n)
  if self.spec.pad then return math.ceil(n / 4) * 4 end
  return n
end

-- Resident blocks per SM for this pattern (0 if it cannot run).
function Pattern:resident()
  return self:kernel():occupancy(self.spec.threads, self.smem)
end

local function address(name, b) return buffer.memory("patterns", name, b) end

-- The rules, checked before launch: n, 16-byte vectors, alignment, buffer sizes.
function Pattern:check(out, inp, n)
  util.count("patterns", "n", n)
  if self.spec.vec and n % 4 ~= 0 then
    fail(("n = %d is not a multiple of 4 elements (pattern '%s' moves 16-byte vectors)"):format(n, self.name))
  end
  for _, x in ipairs({ { "out", out, self:out_elems(n) }, { "inp", inp, n } }) do
    local p, size = address(x[1], x[2])
    local a = tonumber(ffi.cast("uint64_t", p) % 16)
    if a ~= 0 then
      fail(("%s address 0x%x is not 16-byte aligned (pattern '%s' copies 16-byte units)"):format(
        x[1], tonumber(ffi.cast("uint64_t", p)), self.name))
    end
    if size and size < x[3] * 4 then
      fail(("%s holds %d bytes but pattern '%s' with n = %d needs %d"):format(x[1], size, self.name, n, x[3] * 4))
    end
  end
end

-- :prepare(out, inp, n[, { grid = g, stream = s }]) -> run; grid defaults to every resident
-- block (resident per SM × SMs).
function Pattern:prepare(out, inp, n, opts)
  self:check(out, inp, n)
  opts = opts or {}
  util.kind("patterns", "opts", opts, "table")
  util.known_fields("patterns", opts, { grid = true, stream = true }, 2)
  local k = self:kernel()
  local grid = opts.grid
  if grid == nil then
    local r = self:resident()
    if r == 0 then fail(("pattern '%s' cannot be resident on this device (%d bytes of shared memory)"):format(self.name, self.smem)) end
    grid = r * k.device.sms
  end
  return (k:prepare({ grid = grid, block = self.spec.threads, smem = self.smem, stream = opts.stream },
                    (address("out", out)), (address("inp", inp)), n))
end

-- -- CPU reference ----------------------------------------------------------------------------

local function lcg_power(work)
  -- x -> x * a + c applied `work` times is x * A + C (mod 2^32)
  local A, Cc = 1ULL, 0ULL
  for _ = 1, work do
    A = (A * 1664525ULL) % 2 ^ 32
    Cc = (Cc * 1664525ULL + 1013904223ULL) % 2 ^ 32
  end
  return A, Cc
end

-- :verify(in_host, out_host, n[, before]) -> true, or false and a message naming the first wrong
-- element (a sweep's verify convention: only true passes).
-- in_host/out_host: pointers or arrays of the pattern's element type; out_host must hold
-- out_elems(n) + any guard the caller checks. before: the output's contents before a reduce.
-- The host data verify reads: a cdata pointer (trusted for n) or an array holding `need` elements.
local function host(name, p, need, esize)
  if type(p) ~= "cdata" then fail(("verify: %s must be a host array or pointer (got %s)"):format(name, type(p))) end
  local ty = tostring(ffi.typeof(p))
  if ty:match("%*>$") then
    if p == nil then fail(("verify: %s is a NULL pointer"):format(name)) end
    -- read element by element: it must point to 4-byte numbers, not void or structs
    if not (ty:match("^ctype<[%w ]-unsigned int %*>$") or ty:match("^ctype<[%w ]-int %*>$") or ty:match("^ctype<[%w ]-float %*>$")) then
      fail(("verify: %s must point to uint32_t, int32_t or float elements (got %s): cast it, e.g. ffi.cast(\"uint32_t *\", p)"):format(name, ty))
    end
    return
  end
  if not ty:match("%]>$") then fail(("verify: %s must be a host array or pointer (got %s)"):format(name, ty)) end
  local ok, size = pcall(ffi.sizeof, p)
  if not ok or not size or size < need * esize then
    fail(("verify: %s holds %s bytes but n = %d needs %d"):format(name, tostring(ok and size), need, need * esize))
  end
end

function Pattern:verify(inp, out, n, before)
  util.count("patterns", "n", n, true)
  local esize = 4   -- u32 and f32 alike
  host("inp", inp, n, esize)
  host("out", out, self:out_elems(n), esize)
  if self.spec.op == "reduce" then host("before", before, n, esize) end
  local op = self.spec.op
  local function wrong(i, want, got)
    return ("pattern '%s': element %d is %s, expected %s"):format(self.name, i, tostring(got), tostring(want))
  end
  if op == "add_one" then
    for i = 0, n - 1 do
      local want = bit.tobit(inp[i] + 1)
      if bit.tobit(out[i]) ~= want then return false, wrong(i, tonumber(ffi.cast("uint32_t", want)), out[i]) end
    end
    for i = n, self:out_elems(n) - 1 do
      if out[i] ~= 1 then return false, wrong(i, "1 (zero-filled tail + 1)", out[i]) end
    end
  elseif op == "split" then
    local A, Cc = lcg_power(WORK)
    for i = 0, n - 1 do
      local y = (A * inp[i] + Cc) % 2 ^ 32
      local j = bit.bxor(i, 1)
      if j < n then y = (y + inp[j]) % 2 ^ 32 end
      if out[i] ~= tonumber(y) then return false, wrong(i, tonumber(y), out[i]) end
    end
  elseif op == "reduce" then
    local float = self.elem == "float"
    local f = ffi.new("float[1]")
    for i = 0, n - 1 do
      local want
      if float then f[0] = before[i] + inp[i]; want = f[0]   -- one correctly rounded f32 add
      else want = (before[i] + inp[i]) % 2 ^ 32 end
      if out[i] ~= want then return false, wrong(i, want, out[i]) end
    end
  end
  return true
end

-- patterns.build({ name = ..., stages, tile_bytes }, { out = buf, inp = buf, n = n[, grid, stream] })
--   -> { run, verify, poison, bytes }: the driver shape a sweep's build returns. bytes: read +
-- written; verify() downloads the input and the output and checks every element.
function M.build(opts, b)
  util.kind("patterns", "opts", opts, "table")
  util.kind("patterns", "buffers", b, "table")
  util.known_fields("patterns", b, { out = true, inp = true, n = true, grid = true, stream = true }, "buffers")
  local p = compiled(opts.name, opts, PROGRAM_FIELDS)
  local n = b.n
  local run = p:prepare(b.out, b.inp, n, { grid = b.grid, stream = b.stream })
  local elems = p:out_elems(n)
  local before
  -- add_one and split write every element: poisoned first (buf:poison, a NaN as f32, 0x7FFA7FFA
  -- as u32). reduce adds into out, reading every element: fresh finite values instead (a NaN
  -- start would make every sum NaN, and NaN ~= NaN), kept to compute the want
  local function poison()
    if p.spec.op == "reduce" then
      b.out:fill_random{ dtype = p.elem == "float" and "f32" or "u32" }
      before = b.out:download(p.elem, n)
    else
      b.out:poison(b.stream)
    end
  end
  local function verify()
    stream.synchronize()
    return p:verify(b.inp:download(p.elem, n), b.out:download(p.elem, elems), n, before)
  end
  return { run = run, verify = verify, poison = poison, bytes = 4 * (n + elems), kernel = p }
end

util.methods(Pattern, "patterns", "p")

return M
