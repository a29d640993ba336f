-- Programs: CUDA C++ source + defines + options + headers, every field checked; compile() goes
-- through compiler.lua (key, cache, NVRTC). Every kernels-src/cuasync/*.cuh is includable as
-- <cuasync/...>; the toolkit's CCCL headers (<cuda/barrier>, <cuda/pipeline>, <cuda/ptx>,
-- <cooperative_groups.h>) are found without -I (toolkit.lua).
local device = require("cuasync.device")
local util = require("cuasync.util")
local toolkit = require("cuasync.toolkit")
local compiler = require("cuasync.compiler")
local watchdog = require("cuasync.watchdog")
local trace = require("cuasync.trace")
local module = require("cuasync.module")

local M = {}
local Program = {}
Program.__index = Program

M.kernels_dir = toolkit.kernels_dir
M.device_headers = toolkit.device_headers

-- The fields cuasync.program{...} and P:program{...} take (the one list; docs_spec holds the
-- reference to it).
M.FIELDS = { source = true, file = true, name = true, defines = true, options = true,
             headers = true, expressions = true, arch = true, watchdog = true, pch = true, trace = true }
local FIELDS = M.FIELDS

local function fail(msg) util.fail("program", msg) end

-- Text NVRTC reads: no NUL (C cuts the string there) and no byte 0xFF (NVRTC stops reading at
-- it: a source with one compiled "successfully" to nothing).
local function text(field, s)
  util.kind("program", field, s, "string")
  local at = s:find("[%z\255]")
  if at then
    fail(("%s has byte 0x%02X at offset %d, which NVRTC cannot read (%s)"):format(field, s:byte(at), at - 1,
         s:byte(at) == 0 and "C strings end at NUL" or "NVRTC stops reading at 0xFF"))
  end
  return s
end

local function resolve_file(path)
  if toolkit.file_exists(path) then return path end
  local k = toolkit.kernels_dir() .. "/" .. path
  if toolkit.file_exists(k) then return k end
  fail(("file %s not found (looked in the current directory and %s)"):format(util.describe(path), toolkit.kernels_dir()))
end

local function check_arch(arch)
  if arch == "auto" or (type(arch) == "string" and (arch:match("^sm_%d%d%d?a?$")
     or arch:match("^compute_%d%d%d?a?$"))) then return arch end
  fail(('arch must be "auto", "sm_XY[a]" or "compute_XY[a]" (got %s)'):format(util.describe(arch)))
end

-- A define's value as the C preprocessor will see it. Integers print exactly and only within
-- ±2^53 (beyond, a double no longer holds every integer: 2^63 would print as INT64_MIN).
local function define_value(name, v)
  local t = type(v)
  if t == "boolean" then return v and "1" or "0" end
  if t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then fail(("defines.%s is not finite"):format(name)) end
    if v == math.floor(v) then
      if math.abs(v) > 2 ^ 53 then
        fail(("defines.%s = %s is an integer beyond 2^53, which a Lua number cannot hold exactly (pass it as a string)"):format(
             name, util.describe(v)))
      end
      return ("%.0f"):format(v)
    end
    return ("%.17g"):format(v)
  end
  if t == "string" then
    text("defines." .. name, v)
    if v:find("[\r\n]") then fail(("defines.%s must not contain a newline"):format(name)) end
    return v
  end
  fail(("defines.%s must be a number, string or boolean (got %s)"):format(name, t))
end

-- M.new(spec[, hooks]): hooks are the library's own (cuasync.program passes one argument): checks
-- a kernel of this program runs when prepared (check_config(name, c), map_check(name, i, j)) and
-- the plan the watchdog reads; P:program installs them, so kernel.lua needs no pipeline.lua.
local function new(spec, hooks)
  if type(spec) ~= "table" then fail(("expects a table {source = ... or file = ...} (got %s)"):format(type(spec))) end
  util.known_fields("program", spec, FIELDS)
  local p = setmetatable({}, Program)
  if type(spec.source) ~= "nil" and type(spec.file) ~= "nil" then fail("give source or file, not both") end
  if type(spec.name) ~= "nil" then text("name", spec.name) end
  if type(spec.source) ~= "nil" then
    p.source = text("source", spec.source)
    p.name = spec.name or "program.cu"
  elseif type(spec.file) ~= "nil" then
    text("file", spec.file)
    p.path = resolve_file(spec.file)
    p.source = toolkit.read_file(p.path) or fail(("cannot read '%s'"):format(p.path))
    text("source of " .. p.path, p.source)
    p.name = spec.name or p.path:match("([^/]+)$")
  else
    fail("source or file is required")
  end
  if p.name == "" then fail("name must not be empty") end

  local defines = spec.defines or {}
  util.kind("program", "defines", defines, "table")
  p.defines = {}
  local dnames = {}
  for k, v in pairs(defines) do
    if type(k) ~= "string" or not k:match("^[%a_][%w_]*$") then
      fail(("defines key %s is not a C identifier"):format(util.describe(k)))
    end
    p.defines[k] = define_value(k, v)
    dnames[#dnames + 1] = k
  end
  -- pch = true: NVRTC's automatic precompiled header where the program qualifies (compiler.lua)
  if spec.pch ~= nil and type(spec.pch) ~= "boolean" then fail(("pch must be a boolean (got %s)"):format(util.describe(spec.pch))) end
  p.pch = spec.pch
  -- the watchdog (watchdog.lua) and the timeline (trace/init.lua): their defines compile
  -- watchdog.cuh's bounded waits and trace.cuh's records; a user's define may not take one
  p.watchdog, p.trace = watchdog.options(spec.watchdog), trace.options(spec.trace)
  for _, f in ipairs({ { "watchdog", watchdog }, { "trace", trace } }) do
    if p[f[1]] then
      for k, v in pairs(f[2].defines(p[f[1]])) do
        if p.defines[k] then fail(("defines.%s is set by the %s (use %s = { ... })"):format(k, f[1], f[1])) end
        p.defines[k] = define_value(k, v)
        dnames[#dnames + 1] = k
      end
    end
  end
  table.sort(dnames)
  p.define_names = dnames

  p.options = {}
  for i, o in ipairs(util.list("program", "options", spec.options or {})) do
    if type(o) ~= "string" then fail(("options[%d] must be a string (got %s)"):format(i, type(o))) end
    text(("options[%d]"):format(i), o)
    if o:match("^%-arch") or o:match("^%-%-gpu%-architecture") then
      fail(("options[%d] = %s sets the architecture: use arch = instead"):format(i, util.describe(o)))
    end
    p.options[i] = o
  end

  p.headers = { names = {}, sources = {} }
  local hnames = {}
  for k, v in pairs(util.kind("program", "headers", spec.headers or {}, "table")) do
    if type(k) ~= "string" or type(v) ~= "string" then
      fail("headers must map include names to source strings")
    end
    text(("headers key %s"):format(util.describe(k)), k)
    text(("headers[%s]"):format(util.describe(k)), v)
    hnames[#hnames + 1] = k
  end
  table.sort(hnames)
  for i, k in ipairs(hnames) do p.headers.names[i], p.headers.sources[i] = k, spec.headers[k] end

  p.expressions = {}
  for i, e in ipairs(util.list("program", "expressions", spec.expressions or {})) do
    if type(e) ~= "string" then fail(("expressions[%d] must be a string (got %s)"):format(i, type(e))) end
    text(("expressions[%d]"):format(i), e)
    p.expressions[i] = e
  end
  p.arch_request = check_arch(spec.arch or "auto")
  p.hooks = hooks
  return p
end
M.new = new
-- the public constructor: one argument, whatever else is passed
function M.public(spec) return new(spec) end

-- The program spec of a plan's P:program (a pipeline's, a scheduler's, a layout's): spec's
-- fields with each part's generated headers and defines added, none of them given already (a
-- refusal names the header or define and its writer, parts[i].who: "the pipeline", "pipeline
-- 'xs'"), and the watchdog on unless told otherwise (a plan's kernels are watched: a hang becomes
-- a post-mortem). where: the calling method ("pipeline.program").
function M.bound(where, spec, parts)
  local s = {}
  for k, v in pairs(spec) do s[k] = v end
  local headers, defines = {}, {}
  for k, v in pairs(util.kind(where, "headers", spec.headers or {}, "table")) do headers[k] = v end
  for k, v in pairs(util.kind(where, "defines", spec.defines or {}, "table")) do defines[k] = v end
  for _, part in ipairs(parts) do
    for k, v in pairs(part.headers or {}) do
      if headers[k] then util.fail(where, ("headers already has %s: %s writes it"):format(k, part.who)) end
      headers[k] = v
    end
  end
  for _, part in ipairs(parts) do
    for k, v in pairs(part.defines or {}) do
      if defines[k] ~= nil then util.fail(where, ("defines.%s is set by %s (%s)"):format(k, part.who, tostring(v))) end
      defines[k] = v
    end
  end
  s.headers, s.defines = headers, defines
  if s.watchdog == nil then s.watchdog = true end
  return s
end

-- "auto": the current device's (opening device 0 when a GPU is there), sm_90a where none is.
function Program:arch()
  if self.arch_request ~= "auto" then return self.arch_request end
  local dev = device.peek()
  if not dev and device.available() then dev = device.current() end
  return dev and dev.arch or "sm_90a"
end

function Program:build(arch)
  return compiler.build(self, arch or self:arch())
end

-- prog:compile() -> module (loaded into the device at its first :kernel()).
function Program:compile()
  local arch = self:arch()
  local entry, key = compiler.build(self, arch)
  self.entry, self.key, self.built_arch = entry, key, arch
  return module.new(self, entry, arch)
end

function Program:ptx()
  return (self.entry or self:build()).ptx
end

function Program:cubin()
  return (self.entry or self:build()).cubin
end

function Program:log()
  return (self.entry or self:build()).log
end

-- prog:resources(): each kernel's registers, shared memory, stack and spills (compiler.resources)
function Program:resources()
  local entry = self.entry or self:build()
  return compiler.resources(entry, self:arch())
end

M.Program = Program
util.methods(Program, "program", "prog")

return M
