-- Kernel parameter signatures ("ptr, u32, f32, tensormap, cond, bytes[24]") and the converters
-- that write one Lua value into one parameter slot.
local ffi = require("ffi")
local util = require("cuasync.util")
require("cuasync.cdef.types")
local buffer = require("cuasync.buffer")
local capture = require("cuasync.capture")

local M = {}

local TYPES = {
  ptr = { size = 8, ctype = "uint64_t" },
  i32 = { size = 4, ctype = "int32_t" },
  u32 = { size = 4, ctype = "uint32_t" },
  i64 = { size = 8, ctype = "int64_t" },
  u64 = { size = 8, ctype = "uint64_t" },
  f32 = { size = 4, ctype = "float" },
  f64 = { size = 8, ctype = "double" },
  tensormap = { size = 128, ctype = "CUtensorMap" },
  cond = { size = 8, ctype = "uint64_t" },   -- a graph's condition handle (cuasync::graph::condition)
}
M.TYPE_NAMES = "ptr, i32, u32, i64, u64, f32, f64, tensormap, cond, bytes[N]"
-- The driver's limit on the bytes of all parameters of one kernel (Volta and later, CUDA 12.1+).
M.MAX_PARAM_BYTES = 32764

local function fail(msg) util.fail("kernel", msg) end

-- "ptr, u64" -> { {kind="ptr", size=8, ctype="uint64_t"}, ... }
function M.parse(sig)
  if type(sig) ~= "string" then
    fail(('signature must be a string such as "ptr, ptr, u64" (got %s)'):format(type(sig)))
  end
  local params, total = {}, 0
  if sig:match("^%s*$") then return params end
  if #sig > 4096 then fail(("signature of %d bytes is too long (at most 4096)"):format(#sig)) end
  local pos = 0
  for item in (sig .. ","):gmatch("([^,]*),") do
    pos = pos + 1
    local name = item:match("^%s*(.-)%s*$")
    local p
    if name == "" then
      fail(('signature "%s": empty type at position %d'):format(sig, pos))
    end
    local n = name:match("^bytes%s*%[%s*(%d+)%s*%]$")
    if n then
      n = tonumber(n)
      if n < 1 or n > M.MAX_PARAM_BYTES then
        fail(('signature "%s": %s at position %d must hold 1..%d bytes'):format(sig, name, pos,
             M.MAX_PARAM_BYTES))
      end
      p = { kind = "bytes", size = n, ctype = ("uint8_t[%d]"):format(n) }
    elseif TYPES[name] then
      local t = TYPES[name]
      p = { kind = name, size = t.size, ctype = t.ctype }
    else
      fail(('signature "%s": unknown type \'%s\' at position %d (types: %s)'):format(sig, name, pos,
           M.TYPE_NAMES))
    end
    total = total + p.size
    params[#params + 1] = p
  end
  if total > M.MAX_PARAM_BYTES then
    fail(('signature "%s": parameters take %d bytes (at most %d per kernel)'):format(sig, total,
         M.MAX_PARAM_BYTES))
  end
  return params
end

-- -- Converters: set(slot, value) for each kind; errors name the argument and its kind.

local buffer_t = buffer.buffer_t
local i64_t, u64_t = ffi.typeof("int64_t"), ffi.typeof("uint64_t")
local tensormap_t = ffi.typeof("CUtensorMap")

-- An argument's refusal: at = { where = the public call ("launch", "graph.node.set"), prefix =
-- what the message starts with (the node, for an edit) }.
local LAUNCH = { where = "launch", prefix = "" }
local function arg_fail(at, i, kind, msg)
  util.fail(at.where, ("%sargument %d (%s) %s"):format(at.prefix, i, kind, msg))
end

local function integer(at, i, kind, v, lo, hi)
  if type(v) == "number" then
    if v ~= math.floor(v) or v < lo or v > hi then
      arg_fail(at, i, kind, ("must be an integer in %s..%s (got %s)"):format(
        ("%.0f"):format(lo), ("%.0f"):format(hi), util.describe(v)))
    end
    return v
  end
  arg_fail(at, i, kind, ("must be a number (got %s)"):format(type(v)))
end

local function int64(at, i, kind, v, unsigned)
  if type(v) == "cdata" and (ffi.istype(i64_t, v) or ffi.istype(u64_t, v)) then
    if unsigned and ffi.istype(i64_t, v) and v < 0 then arg_fail(at, i, kind, "must not be negative") end
    return v
  end
  return integer(at, i, kind, v, unsigned and 0 or -2 ^ 53, 2 ^ 53)
end

local function pointer(at, i, v)
  local t = type(v)
  if t == "cdata" then
    if ffi.istype(buffer_t, v) then
      if v.ptr == 0 then arg_fail(at, i, "ptr", "is a closed buffer") end
      return v.ptr
    end
    if ffi.istype(u64_t, v) or ffi.istype(i64_t, v) then return v end
    local what = tostring(ffi.typeof(v))
    if not what:match("%*>$") then
      arg_fail(at, i, "ptr", ("must be device memory: a buffer, a device pointer or an address (got %s)"):format(what))
    end
    local ok, p = pcall(ffi.cast, u64_t, v)
    if ok then return p end
    arg_fail(at, i, "ptr", ("cannot be taken from %s"):format(tostring(ffi.typeof(v))))
  elseif t == "number" then
    return integer(at, i, "ptr", v, 0, 2 ^ 53)
  end
  arg_fail(at, i, "ptr", ("must be a buffer, a device pointer or an address (got %s)"):format(t))
end

-- The handle of a condition (cond parameter), taken only inside the capture that made it
-- (at.rec: the capture record it must belong to; default, the one open now).
local function condition(at, i, v)
  if not capture.is_condition(v) then
    arg_fail(at, i, "cond", ("must be a condition made by g:condition{...} inside cuasync.graph's function (got %s)"):format(
      util.describe(v)))
  end
  if v.rec ~= (at.rec or capture.state.active) then
    arg_fail(at, i, "cond", ("is %s, used outside its graph: a kernel sets a condition only inside the cuasync.graph function (or G:update) that made it"):format(
      tostring(v)))
  end
  return v.handle
end

-- setter(i, p, slot[, at]) -> function(v) writing argument i of kind p into slot; at names the
-- call in errors ({ where, prefix[, rec] }, default the launch).
function M.setter(i, p, slot, at)
  at = at or LAUNCH
  local k = p.kind
  if k == "ptr" then return function(v) slot[0] = pointer(at, i, v) end
  elseif k == "i32" then return function(v) slot[0] = integer(at, i, k, v, -2 ^ 31, 2 ^ 31 - 1) end
  elseif k == "u32" then return function(v) slot[0] = integer(at, i, k, v, 0, 2 ^ 32 - 1) end
  elseif k == "i64" then return function(v) slot[0] = int64(at, i, k, v, false) end
  elseif k == "u64" then return function(v) slot[0] = int64(at, i, k, v, true) end
  elseif k == "f32" or k == "f64" then
    return function(v)
      if type(v) ~= "number" then arg_fail(at, i, k, ("must be a number (got %s)"):format(type(v))) end
      slot[0] = v
    end
  elseif k == "cond" then
    return function(v) slot[0] = condition(at, i, v) end
  elseif k == "tensormap" then
    return function(v)
      local map = type(v) == "table" and v.map or v
      if type(v) == "table" and v.encoded == false then
        arg_fail(at, i, k, "was built with encode = false (a plan-only map): build it with a GPU present to launch with it")
      end
      if not ffi.istype(tensormap_t, map) then
        arg_fail(at, i, k, ("must be a cuasync.tensormap or a CUtensorMap (got %s)"):format(type(v)))
      end
      ffi.copy(slot, map, 128)
    end
  else -- bytes[N]
    local n = p.size
    return function(v)
      local t = type(v)
      if t == "string" then
        if #v ~= n then arg_fail(at, i, k .. "[" .. n .. "]", ("needs exactly %d bytes (got a string of %d)"):format(n, #v)) end
      elseif t == "cdata" then
        local size = ffi.sizeof(v)
        if size ~= n then arg_fail(at, i, k .. "[" .. n .. "]", ("needs exactly %d bytes (got cdata of %s)"):format(n, tostring(size))) end
      else
        arg_fail(at, i, k .. "[" .. n .. "]", ("must be a string or cdata of %d bytes (got %s)"):format(n, t))
      end
      ffi.copy(slot, v, n)
    end
  end
end

-- A slot holding one parameter: its cdata and the pointer the driver reads.
function M.slot(p)
  if p.kind == "tensormap" then return ffi.new("CUtensorMap") end
  if p.kind == "bytes" then return ffi.new(p.ctype) end
  return ffi.new(p.ctype .. "[1]")
end

return M
