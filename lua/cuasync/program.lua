-- Programs: CUDA C++ source + defines + options + headers, compiled by NVRTC through the cache.
-- Every kernels-src/cuasync/*.cuh is includable as <cuasync/...>; the toolkit's CCCL headers
-- (<cuda/barrier>, <cuda/pipeline>, <cuda/ptx>, <cooperative_groups.h>) are found without -I.
local ffi = require("ffi")
local native = require("cuasync.native")
local cache = require("cuasync.cache")
local device = require("cuasync.device")
local util = require("cuasync.util")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

local M = {}
local Program = {}
Program.__index = Program

-- -- Where things are ------------------------------------------------------------------------

local function file_exists(path)
  local f = io.open(path, "rb")
  if f then f:close() return true end
  return false
end

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."

-- kernels-src: $CUASYNC_KERNELS, beside the installed modules, or the source tree's.
function M.kernels_dir()
  local env = os.getenv("CUASYNC_KERNELS")
  if env and env ~= "" then return env end
  for _, d in ipairs({ here .. "/kernels-src", here .. "/../../kernels-src" }) do
    if file_exists(d .. "/cuasync/mbarrier.cuh") then return d end
  end
  error("cuasync.program: kernels-src not found beside " .. here .. " (set CUASYNC_KERNELS)", 0)
end

local device_headers   -- { names = {...}, sources = {...} }, read once per process
function M.device_headers()
  if device_headers then return device_headers end
  local dir = M.kernels_dir() .. "/cuasync"
  local list = ffi.new("char[8192]")
  native.check(C.cuasync_fs_list(dir, ".cuh", list, 8192, errbuf, ERRLEN))
  local names, sources = {}, {}
  for name in ffi.string(list):gmatch("[^\n]+") do
    names[#names + 1] = "cuasync/" .. name
    sources[#sources + 1] = assert(read_file(dir .. "/" .. name))
  end
  device_headers = { names = names, sources = sources }
  return device_headers
end

local identity
local function nvrtc_identity()
  if identity then return identity end
  local buf = ffi.new("char[4096]")
  native.check(C.cuasync_nvrtc_identity(buf, 4096, errbuf, ERRLEN))
  identity = ffi.string(buf)
  return identity
end

-- The toolkit include directories: $CUDA_HOME/include, else the one beside the NVRTC in use.
local include_dirs
local function cuda_includes()
  if include_dirs then return include_dirs end
  include_dirs = {}
  local candidates = {}
  local home = os.getenv("CUDA_HOME")
  if home and home ~= "" then candidates[#candidates + 1] = home .. "/include" end
  local lib = nvrtc_identity():match("^(%S+)")
  if lib then candidates[#candidates + 1] = lib:gsub("/[^/]+/[^/]+$", "") .. "/include" end
  candidates[#candidates + 1] = "/usr/local/cuda/include"
  for _, d in ipairs(candidates) do
    if file_exists(d .. "/cooperative_groups.h") then
      if file_exists(d .. "/cccl/cuda/barrier") then include_dirs[#include_dirs + 1] = d .. "/cccl" end
      include_dirs[#include_dirs + 1] = d
      break
    end
  end
  return include_dirs
end

-- -- Construction ------------------------------------------------------------------------------

local FIELDS = { source = true, file = true, name = true, defines = true, options = true,
                 headers = true, expressions = true, arch = true }

local function fail(msg) util.fail("program", msg, 3) end

local function resolve_file(path)
  if file_exists(path) then return path end
  local k = M.kernels_dir() .. "/" .. path
  if file_exists(k) then return k end
  fail(("file '%s' not found (looked in the current directory and %s)"):format(path, M.kernels_dir()))
end

local function check_arch(arch)
  if arch == "auto" or (type(arch) == "string" and (arch:match("^sm_%d%d%d?a?$")
     or arch:match("^compute_%d%d%d?a?$"))) then return arch end
  fail(('arch must be "auto", "sm_XY[a]" or "compute_XY[a]" (got %s)'):format(util.describe(arch)))
end

local function define_value(name, v)
  local t = type(v)
  if t == "boolean" then return v and "1" or "0" end
  if t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then fail(("defines.%s is not finite"):format(name)) end
    return v == math.floor(v) and ("%d"):format(v) or ("%.17g"):format(v)
  end
  if t == "string" then
    if v:find("[\r\n]") then fail(("defines.%s must not contain a newline"):format(name)) end
    return v
  end
  fail(("defines.%s must be a number, string or boolean (got %s)"):format(name, t))
end

function M.new(spec)
  if type(spec) ~= "table" then fail(("expects a table {source = ... or file = ...} (got %s)"):format(type(spec))) end
  util.known_fields("program", spec, FIELDS, 2)
  local p = setmetatable({}, Program)
  if spec.source ~= nil and spec.file ~= nil then fail("give source or file, not both") end
  if spec.source ~= nil then
    p.source = util.kind("program", "source", spec.source, "string", 2)
    p.name = spec.name or "program.cu"
  elseif spec.file ~= nil then
    util.kind("program", "file", spec.file, "string", 2)
    p.path = resolve_file(spec.file)
    p.source = read_file(p.path) or fail(("cannot read '%s'"):format(p.path))
    p.name = spec.name or p.path:match("([^/]+)$")
  else
    fail("source or file is required")
  end
  util.kind("program", "name", p.name, "string", 2)
  if p.source:find("\0", 1, true) then fail("source must not contain NUL bytes") end

  local defines = spec.defines or {}
  util.kind("program", "defines", defines, "table", 2)
  p.defines = {}
  local dnames = {}
  for k, v in pairs(defines) do
    if type(k) ~= "string" or not k:match("^[%a_][%w_]*$") then
      fail(("defines key %s is not a C identifier"):format(util.describe(k)))
    end
    p.defines[k] = define_value(k, v)
    dnames[#dnames + 1] = k
  end
  table.sort(dnames)
  p.define_names = dnames

  p.options = {}
  for i, o in ipairs(util.kind("program", "options", spec.options or {}, "table", 2)) do
    if type(o) ~= "string" then fail(("options[%d] must be a string (got %s)"):format(i, type(o))) end
    if o:match("^%-arch") or o:match("^%-%-gpu%-architecture") then
      fail(("options[%d] = %q sets the architecture: use arch = instead"):format(i, o))
    end
    p.options[i] = o
  end

  p.headers = { names = {}, sources = {} }
  local hnames = {}
  for k, v in pairs(util.kind("program", "headers", spec.headers or {}, "table", 2)) do
    if type(k) ~= "string" or type(v) ~= "string" then
      fail("headers must map include names to source strings")
    end
    hnames[#hnames + 1] = k
  end
  table.sort(hnames)
  for i, k in ipairs(hnames) do p.headers.names[i], p.headers.sources[i] = k, spec.headers[k] end

  p.expressions = {}
  for i, e in ipairs(util.kind("program", "expressions", spec.expressions or {}, "table", 2)) do
    if type(e) ~= "string" then fail(("expressions[%d] must be a string (got %s)"):format(i, type(e))) end
    p.expressions[i] = e
  end
  p.arch_request = check_arch(spec.arch or "auto")
  return p
end

-- -- Compilation -------------------------------------------------------------------------------

-- "auto": the current device's (opening device 0 when a GPU is there), sm_90a where none is.
function Program:arch()
  if self.arch_request ~= "auto" then return self.arch_request end
  local dev = device.peek()
  if not dev and device.available() then dev = device.current() end
  return dev and dev.arch or "sm_90a"
end

function Program:compile_options(arch)
  local opts = { "-arch=" .. arch, "-std=c++17", "-D__CUASYNC__=1" }
  for _, d in ipairs(cuda_includes()) do opts[#opts + 1] = "-I" .. d end
  for _, k in ipairs(self.define_names) do opts[#opts + 1] = "-D" .. k .. "=" .. self.defines[k] end
  for _, o in ipairs(self.options) do opts[#opts + 1] = o end
  return opts
end

local function strings(list)
  local arr = ffi.new("const char *[?]", math.max(#list, 1))
  for i, s in ipairs(list) do arr[i - 1] = s end
  return arr
end

-- The failing lines of the source, numbered, for a compile error.
local function failing_lines(name, source, log)
  local lines, wanted, out = {}, {}, {}
  for l in (source .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  local esc = name:gsub("%p", "%%%0")
  for n in log:gmatch(esc .. "%((%d+)%)") do wanted[tonumber(n)] = true end
  local nums = {}
  for n in pairs(wanted) do nums[#nums + 1] = n end
  table.sort(nums)
  for _, n in ipairs(nums) do
    for i = math.max(1, n - 1), math.min(#lines, n + 1) do
      out[#out + 1] = ("%s%5d | %s"):format(i == n and ">" or " ", i, lines[i])
    end
    out[#out + 1] = ""
  end
  return table.concat(out, "\n")
end

function Program:build(arch)
  arch = arch or self:arch()
  local hdr = M.device_headers()
  local names, sources = {}, {}
  for i, n in ipairs(hdr.names) do names[i], sources[i] = n, hdr.sources[i] end
  for i, n in ipairs(self.headers.names) do
    names[#names + 1], sources[#sources + 1] = n, self.headers.sources[i]
  end
  local opts = self:compile_options(arch)
  local parts = { "cuasync " .. native.version, nvrtc_identity(), arch, self.name, self.source }
  for i, n in ipairs(names) do parts[#parts + 1] = "h:" .. n; parts[#parts + 1] = sources[i] end
  for _, o in ipairs(opts) do parts[#parts + 1] = "o:" .. o end
  for _, e in ipairs(self.expressions) do parts[#parts + 1] = "e:" .. e end
  local key = cache.key(parts)

  local entry = cache.get(key)
  if entry then return entry, key end

  local out = ffi.new("cuasync_compiled *[1]")
  local rc = C.cuasync_compile(self.source, self.name, #names, strings(sources), strings(names),
                               #opts, strings(opts), #self.expressions, strings(self.expressions),
                               out, errbuf, ERRLEN)
  local msg = native.message()
  local compiled = out[0]
  if compiled == nil then error("cuasync.program: " .. msg, 3) end
  compiled = ffi.gc(compiled, C.cuasync_compiled_free)
  cache.stats.nvrtc = cache.stats.nvrtc + 1
  local len = ffi.new("size_t[1]")
  local log = ffi.string(C.cuasync_compiled_log(compiled, len), len[0])
  if rc ~= 0 then
    error(("cuasync.program: %s failed to compile for %s (%s)\n%s\n%s"):format(self.name, arch, msg,
          log, failing_lines(self.name, self.source, log)), 3)
  end
  local function blob(fn)
    local p = fn(compiled, len)
    return p ~= nil and ffi.string(p, len[0]) or nil
  end
  entry = { ptx = blob(C.cuasync_compiled_ptx), cubin = blob(C.cuasync_compiled_cubin), log = log,
            lowered = {} }
  for i, e in ipairs(self.expressions) do
    entry.lowered[e] = ffi.string(C.cuasync_compiled_lowered(compiled, i - 1))
  end
  local major, minor = ffi.new("int[1]"), ffi.new("int[1]")
  if C.cuasync_nvrtc_version(major, minor, errbuf, ERRLEN) == 0 then
    entry.nvrtc = major[0] .. "." .. minor[0]
  end
  cache.put(key, entry)
  return entry, key
end

-- prog:compile() -> module (loaded into the device at its first :kernel()).
function Program:compile()
  local arch = self:arch()
  local entry, key = self:build(arch)
  self.entry, self.key, self.built_arch = entry, key, arch
  return require("cuasync.module").new(self, entry, arch)
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

M.Program = Program
return M
