-- The compile of a checked program: its cache key (everything that can change the output, never
-- the output), the cache look-up, NVRTC, and the numbered failing lines of a compile error.
local ffi = require("ffi")
local native = require("cuasync.native")
local cache = require("cuasync.cache")
local toolkit = require("cuasync.toolkit")
local util = require("cuasync.util")
require("cuasync.cdef.compile")
require("cuasync.cdef.loader")
require("cuasync.cdef.toolkit")
require("cuasync.cdef.fs")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

local M = {}

-- ptxas' resource report (registers, shared memory, stack, spills per kernel) comes with every
-- cubin: M.report splits it out of the log into entry.resources, so a clean compile's log stays
-- "" and prog:resources() needs no GPU and no second compile.
local REPORT = "--ptxas-options=-v"   -- added where there is a cubin (arch sm_*)

-- NVRTC's command line for p: the defines for which on_line(name) holds (all, without it).
local function command_line(p, arch, on_line)
  local opts = { "-arch=" .. arch, "-std=c++17", "-D__CUASYNC__=1" }
  for _, d in ipairs(toolkit.cuda_includes()) do opts[#opts + 1] = "-I" .. d end
  for _, k in ipairs(p.define_names) do
    if not on_line or on_line(k) then opts[#opts + 1] = "-D" .. k .. "=" .. p.defines[k] end
  end
  for _, o in ipairs(p.options) do if o ~= REPORT then opts[#opts + 1] = o end end
  if arch:match("^sm_") then opts[#opts + 1] = REPORT end
  return opts
end

function M.options(p, arch) return command_line(p, arch) end

-- The log without ptxas' "info" lines, and the report they held:
-- { [kernel] = { registers, static_smem, stack, spill_stores, spill_loads, barriers } }.
function M.report(log)
  local rest, res, cur, props = {}, {}, nil, nil
  for line in (log .. "\n"):gmatch("([^\n]*)\n") do
    local info = line:match("^ptxas info%s*: (.*)$") or line:match("^ptxas%s+%.%s+(.*)$")
    if info then
      local entry = info:match("^Compiling entry function '([^']+)'")
      if entry then cur = { registers = 0, static_smem = 0, stack = 0, spill_stores = 0, spill_loads = 0, barriers = 0 } res[entry] = cur end
      local fn = info:match("^Function properties for (%S+)")
      if fn then props = res[fn] end
      if props and info:match("bytes stack frame") then
        props.stack = tonumber(info:match("(%d+) bytes stack frame")) or 0
        props.spill_stores = tonumber(info:match("(%d+) bytes spill stores")) or 0
        props.spill_loads = tonumber(info:match("(%d+) bytes spill loads")) or 0
      end
      if cur and info:match("^Used %d+ registers") then
        cur.registers = tonumber(info:match("^Used (%d+) registers"))
        cur.static_smem = tonumber(info:match("(%d+) bytes smem")) or 0
        cur.barriers = tonumber(info:match("used (%d+) barriers")) or 0
        cur = nil
      end
    else
      rest[#rest + 1] = line
    end
  end
  return (table.concat(rest, "\n"):gsub("^\n+", ""):gsub("\n+$", "")), res
end

local function strings(list)
  local arr = ffi.new("const char *[?]", math.max(#list, 1))
  for i, s in ipairs(list) do arr[i - 1] = s end
  return arr
end

-- The line numbers of `name` that NVRTC's log names, sorted.
local function named_lines(name, log)
  local wanted, nums = {}, {}
  local esc = name:gsub("%p", "%%%0")
  for n in log:gmatch(esc .. "%((%d+)%)") do wanted[tonumber(n)] = true end
  for n in pairs(wanted) do nums[#nums + 1] = n end
  table.sort(nums)
  return nums
end

-- The failing lines of the source, numbered, with a line either side: the end of a compile
-- error's message.
function M.failing_lines(name, source, log)
  local lines, out = {}, {}
  for l in (source .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  for _, n in ipairs(named_lines(name, log)) do
    for i = math.max(1, n - 1), math.min(#lines, n + 1) do
      out[#out + 1] = ("%s%5d | %s"):format(i == n and ">" or " ", i, lines[i])
    end
    out[#out + 1] = ""
  end
  return table.concat(out, "\n")
end

-- Every line of the source, numbered the same way (">" on each line the log names): a compile
-- error's `lines` (CuPy's CompileException dumps the numbered source likewise). Also returns
-- the numbers the log names.
function M.numbered(name, source, log)
  local failing, lines, i = named_lines(name, log), {}, 0
  local mark = {}
  for _, n in ipairs(failing) do mark[n] = true end
  for l in (source:sub(-1) == "\n" and source or source .. "\n"):gmatch("([^\n]*)\n") do
    i = i + 1
    lines[i] = ("%s%5d | %s"):format(mark[i] and ">" or " ", i, l)
  end
  return lines, failing
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
  -- "report": entries hold resources split from the log (compiler.report); older ones do not
  local parts = { "cuasync " .. native.version, "report", toolkit.nvrtc_identity(), arch, p.name, "s:" .. digest(p.source),
                  "d:" .. hdr.digest }
  for i, n in ipairs(p.headers.names) do parts[#parts + 1] = "h:" .. n; parts[#parts + 1] = digest(p.headers.sources[i]) end
  for _, o in ipairs(opts) do parts[#parts + 1] = "o:" .. o end
  for _, e in ipairs(p.expressions) do parts[#parts + 1] = "e:" .. e end
  return cache.key(parts), opts
end

-- -- Precompiled headers ----------------------------------------------------------------------
-- NVRTC's automatic PCH (12.8+, -pch) precompiles the source's leading #include block and reuses
-- it while the block and the command line stay the same, and only within one process (its
-- files are deleted at exit; an explicit --create-pch file is refused by another process: its
-- heap address differs). A sweep's compile workers compile many variants one after another, so
-- they ask for it (p.pch). The variants' defines then move from the command line to #define
-- lines after the block, behind a declaration that ends it, with #line keeping the user's line
-- numbers. A program qualifies only where that changes nothing: its block includes none of its
-- own headers (a plan header differs per variant), and no define it moves is named in a header
-- cuasync can read (the device headers and the program's own); CUASYNC_* and _-prefixed
-- defines stay on the command line. The cache key is the program's, either way (the PTX can
-- differ only in the order of its declarations). CUASYNC_PCH=0 turns it off; CUASYNC_PCH=verbose
-- puts NVRTC's PCH messages (created, used, why not) in the compile log.
local named = setmetatable({}, { __mode = "k" })
local function in_headers(hdr, p, name)
  local seen = named[hdr] or {}
  named[hdr] = seen
  local pat = "%f[%w_]" .. name .. "%f[^%w_]"
  if seen[name] == nil then
    seen[name] = false
    for _, src in ipairs(hdr.sources) do if src:find(pat) then seen[name] = true break end end
  end
  if seen[name] then return true end
  for _, src in ipairs(p.headers.sources) do if src:find(pat) then return true end end
  return false
end

local has_pch
local function nvrtc_has_pch()
  if has_pch == nil then
    local major, minor = ffi.new("int[1]"), ffi.new("int[1]")
    has_pch = C.cuasync_nvrtc_version(major, minor, errbuf, ERRLEN) == 0
              and (major[0] > 12 or (major[0] == 12 and minor[0] >= 8))
  end
  return has_pch
end

-- NVRTC's PCH directory, one per process: PCH files are of no use to another process, and two
-- compile workers sharing one directory crashed NVRTC inside nvrtcCompileProgram (about 1 run in
-- 20 of the pool spec). The cache is often shared (nodes, containers): cuasync_fs_pid_dir's name
-- is no other process's and its lock is held for life, so only a dead owner's directory is reaped.
-- Asked before every PCH compile (one that vanished is made again); nil: cannot be made, no PCH.
local pch_out = ffi.new("char[?]", 4096)
local function pch_dir()
  local parent = (cache.dir() or (os.getenv("TMPDIR") or "/tmp") .. "/cuasync") .. "/pch"
  if C.cuasync_fs_pid_dir(parent, pch_out, 4096, errbuf, ERRLEN) ~= 0 then return nil end
  return ffi.string(pch_out)
end

-- The source and options of p's PCH form, or nil where p does not qualify.
function M.pch_form(p, arch)
  if os.getenv("CUASYNC_PCH") == "0" or not nvrtc_has_pch() then return nil end
  local own = {}
  for _, n in ipairs(p.headers.names) do own[n] = true end
  local lines, last, includes, comment = {}, 0, 0, false
  for l in (p.source .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  for i, l in ipairs(lines) do
    local inc = l:match('^%s*#%s*include%s*[<"]([^>"]+)[>"]%s*$') or l:match('^%s*#%s*include%s*[<"]([^>"]+)[>"]%s*//.*$')
    if comment then
      if l:find("%*/") then comment = l:find("%*/.*%S") ~= nil end
      if comment then break end
    elseif l:match("^%s*$") or l:match("^%s*//") then -- blank or a line comment
    elseif l:match("^%s*/%*") then comment = not l:find("%*/")
    elseif inc and not own[inc] then includes = includes + 1
    else break end
    last = i
  end
  if includes == 0 or comment then return nil end
  local hdr = toolkit.device_headers()
  local moved, kept = {}, {}
  for _, k in ipairs(p.define_names) do
    if k:match("^CUASYNC_") or k:match("^_") then kept[k] = true
    elseif in_headers(hdr, p, k) then return nil
    else moved[#moved + 1] = ("#define %s %s"):format(k, p.defines[k]) end
  end
  local dir = pch_dir()
  if not dir then return nil end
  local head = table.concat(lines, "\n", 1, last)
  local rest = table.concat(lines, "\n", last + 1)
  local source = ("%s\ntypedef int cuasync_pch_stop_;\n%s\n#line %d \"%s\"\n%s"):format(head, table.concat(moved, "\n"),
    last + 1, p.name, rest)
  local opts = command_line(p, arch, function(k) return kept[k] end)
  -- NVRTC's PCH messages stay out of the log unless asked for (CUASYNC_PCH=verbose)
  local say = os.getenv("CUASYNC_PCH") == "verbose" and "true" or "false"
  for _, o in ipairs({ "-pch", "--pch-dir=" .. dir, "--pch-verbose=" .. say, "--pch-messages=" .. say }) do opts[#opts + 1] = o end
  return { source = source, options = opts }
end

-- Each kernel's resources from ptxas' report (no GPU, no second compile; see compiler.report):
-- { [kernel] = { registers, static_smem, stack, spill_stores, spill_loads, barriers } }, or
-- an empty table and why for a PTX-only build (arch compute_XX: ptxas did not run).
function M.resources(entry, arch)
  local out = {}
  for k, r in pairs(entry.resources or {}) do
    out[k] = {}
    for f, v in pairs(r) do out[k][f] = v end
  end
  if next(out) == nil and not entry.cubin then
    return out, ("no cubin for %s: ptxas did not run, so there is no resource report"):format(arch)
  end
  if next(out) == nil then   -- native/cuasync_compile.c turns NVRTC's own cache off to prevent it
    return out, "ptxas gave no report for this compile (NVRTC answered it from the CUDA compute cache)"
  end
  return out
end

-- build(p, arch) -> cache entry { ptx, cubin, log, lowered, nvrtc }, key
function M.build(p, arch)
  local key, opts = M.key(p, arch)
  local entry = cache.get(key)
  if entry then return entry, key end   -- entries from before the "report" key part are never hit
  local source = p.source
  local form = p.pch and M.pch_form(p, arch)
  if form then source, opts = form.source, form.options end

  local hdr = toolkit.device_headers()
  local names, sources = {}, {}
  for i, n in ipairs(hdr.names) do names[i], sources[i] = n, hdr.sources[i] end
  for i, n in ipairs(p.headers.names) do
    names[#names + 1], sources[#sources + 1] = n, p.headers.sources[i]
  end
  local len = ffi.new("size_t[1]")
  local function compile(src, o)   -- -> status, message, the compiled handle, its raw log
    local out = ffi.new("cuasync_compiled *[1]")
    local status = C.cuasync_compile(src, p.name, #names, strings(sources), strings(names), #o, strings(o),
                                     #p.expressions, strings(p.expressions), out, errbuf, ERRLEN)
    local message = native.message()
    if out[0] == nil then util.fail("program", message) end
    cache.stats.nvrtc = cache.stats.nvrtc + 1
    local c = ffi.gc(out[0], C.cuasync_compiled_free)
    return status, message, c, ffi.string(C.cuasync_compiled_log(c, len), len[0])
  end
  local rc, msg, compiled, raw = compile(source, opts)
  -- the PCH directory went between pch_form and NVRTC's read of it: the plain form needs none
  if rc ~= 0 and form and raw:find("invalid PCH directory", 1, true) then
    source, opts = p.source, M.options(p, arch)
    rc, msg, compiled, raw = compile(source, opts)
  end
  local log, resources = M.report(raw)
  if rc ~= 0 then
    local lines, failing = M.numbered(p.name, p.source, log)
    util.fail("program", ("%s failed to compile for %s (%s)\n%s\n%s"):format(p.name, arch, msg,
              log, M.failing_lines(p.name, p.source, log)),
              { kind = "compile", name = p.name, arch = arch, log = log, source = p.source, options = opts,
                lines = lines, failing = failing })
  end
  local function blob(fn) local b = fn(compiled, len) return b ~= nil and ffi.string(b, len[0]) or nil end
  entry = { ptx = blob(C.cuasync_compiled_ptx), cubin = blob(C.cuasync_compiled_cubin), log = log,
            lowered = {}, resources = resources }
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
