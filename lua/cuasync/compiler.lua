-- The compile of a checked program: its cache key (everything that can change the output, never
-- the output), the cache look-up, NVRTC, and the numbered failing lines of a compile error.
local ffi = require("ffi")
local native = require("cuasync.native")
local cache = require("cuasync.cache")
local toolkit = require("cuasync.toolkit")
local util = require("cuasync.util")
require("cuasync.cdef.compile")
require("cuasync.cdef.loader")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

local M = {}

function M.options(p, arch)
  local opts = { "-arch=" .. arch, "-std=c++17", "-D__CUASYNC__=1" }
  for _, d in ipairs(toolkit.cuda_includes()) do opts[#opts + 1] = "-I" .. d end
  for _, k in ipairs(p.define_names) do opts[#opts + 1] = "-D" .. k .. "=" .. p.defines[k] end
  for _, o in ipairs(p.options) do opts[#opts + 1] = o end
  return opts
end

local function strings(list)
  local arr = ffi.new("const char *[?]", math.max(#list, 1))
  for i, s in ipairs(list) do arr[i - 1] = s end
  return arr
end

-- The failing lines of the source, numbered, for a compile error.
function M.failing_lines(name, source, log)
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

-- The SHA-256 of a source text, remembered (bounded) so that a program built again from the
-- same text — the common case in a sweep — is not hashed again.
local digests, ndigests = {}, 0
local function digest(text)
  local d = digests[text]
  if d then return d end
  if ndigests >= 256 then digests, ndigests = {}, 0 end
  d = cache.sha256(text)
  digests[text], ndigests = d, ndigests + 1
  return d
end

-- The cache key of program p for arch, and the header lists NVRTC gets. The device headers enter
-- by their digest (hashed once per process), the program's own headers by content.
function M.key(p, arch)
  local hdr = toolkit.device_headers()
  local opts = M.options(p, arch)
  local parts = { "cuasync " .. native.version, toolkit.nvrtc_identity(), arch, p.name, "s:" .. digest(p.source),
                  "d:" .. hdr.digest }
  for i, n in ipairs(p.headers.names) do parts[#parts + 1] = "h:" .. n; parts[#parts + 1] = digest(p.headers.sources[i]) end
  for _, o in ipairs(opts) do parts[#parts + 1] = "o:" .. o end
  for _, e in ipairs(p.expressions) do parts[#parts + 1] = "e:" .. e end
  return cache.key(parts), opts
end

-- build(p, arch) -> cache entry { ptx, cubin, log, lowered, nvrtc }, key
function M.build(p, arch)
  local key, opts = M.key(p, arch)
  local entry = cache.get(key)
  if entry then return entry, key end

  local hdr = toolkit.device_headers()
  local names, sources = {}, {}
  for i, n in ipairs(hdr.names) do names[i], sources[i] = n, hdr.sources[i] end
  for i, n in ipairs(p.headers.names) do
    names[#names + 1], sources[#sources + 1] = n, p.headers.sources[i]
  end
  local out = ffi.new("cuasync_compiled *[1]")
  local rc = C.cuasync_compile(p.source, p.name, #names, strings(sources), strings(names),
                               #opts, strings(opts), #p.expressions, strings(p.expressions),
                               out, errbuf, ERRLEN)
  local msg = native.message()
  local compiled = out[0]
  if compiled == nil then util.fail("program", msg) end
  compiled = ffi.gc(compiled, C.cuasync_compiled_free)
  cache.stats.nvrtc = cache.stats.nvrtc + 1
  local len = ffi.new("size_t[1]")
  local log = ffi.string(C.cuasync_compiled_log(compiled, len), len[0])
  if rc ~= 0 then
    util.fail("program", ("%s failed to compile for %s (%s)\n%s\n%s"):format(p.name, arch, msg,
              log, M.failing_lines(p.name, p.source, log)))
  end
  local function blob(fn)
    local b = fn(compiled, len)
    return b ~= nil and ffi.string(b, len[0]) or nil
  end
  entry = { ptx = blob(C.cuasync_compiled_ptx), cubin = blob(C.cuasync_compiled_cubin), log = log,
            lowered = {} }
  for i, e in ipairs(p.expressions) do
    local l = C.cuasync_compiled_lowered(compiled, i - 1)
    if l == nil then util.fail("program", ("no lowered name for expression '%s' in %s"):format(e, p.name)) end
    entry.lowered[e] = ffi.string(l)
  end
  if not entry.cubin and not entry.ptx then
    util.fail("program", ("%s compiled for %s but NVRTC returned neither PTX nor a cubin"):format(p.name, arch))
  end
  local major, minor = ffi.new("int[1]"), ffi.new("int[1]")
  if C.cuasync_nvrtc_version(major, minor, errbuf, ERRLEN) == 0 then
    entry.nvrtc = major[0] .. "." .. minor[0]
  end
  cache.put(key, entry)
  return entry, key
end

return M
