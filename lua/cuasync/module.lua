-- Modules: a compiled program's cubin (or PTX), loaded into the current device at first use.
local ffi = require("ffi")
local native = require("cuasync.native")
local device = require("cuasync.device")
local util = require("cuasync.util")
local handle = require("cuasync.handle")
local buffer = require("cuasync.buffer")
local signature = require("cuasync.signature")
local kernel = require("cuasync.kernel")
local watchdog = require("cuasync.watchdog")
local trace = require("cuasync.trace")
local compiler = require("cuasync.compiler")
require("cuasync.cdef.module")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

ffi.cdef [[ typedef struct cuasync_module { CUmodule handle; int loaded; } cuasync_module; ]]

local M = {}
local Module = {}
Module.__index = Module

local handle_t = handle.define("cuasync_module", {
  methods = {},
  live = function(h) return h.loaded ~= 0 end,
  kill = function(h) h.loaded = 0; return h.handle end,
  release = function(m) return C.cuasync_module_unload(m, errbuf, ERRLEN) end,
  tostring = function(h) return ("cuasync.module handle (%s)"):format(h.loaded ~= 0 and "loaded" or "unloaded") end,
})

function M.new(program, entry, arch)
  return setmetatable({ program = program, entry = entry, arch = arch, name = program.name,
                        views = setmetatable({}, { __mode = "k" }) }, Module)
end

-- A view keeps its module loaded (the view is the key, the module the value: weak keys only).
local owners = setmetatable({}, { __mode = "k" })

-- Load into the current device (once). The cubin when there is one, else the PTX (JIT).
function Module:load()
  if self.handle and self.handle.loaded ~= 0 then return self end
  local dev = device.current()
  local cc = tonumber(self.arch:match("^sm_(%d+)"))
  if cc and cc ~= dev.cc then
    util.fail("module", ("program %s was compiled for %s but device %d is %s (compile with arch = \"auto\")"):format(
              self.name, self.arch, dev.ordinal, dev.arch))
  end
  local image = self.entry.cubin or self.entry.ptx
  local h = ffi.new("CUmodule[1]")
  native.check(C.cuasync_module_load(h, image, self.name, errbuf, ERRLEN))
  self.handle = handle_t(h[0], 1)
  self.device = dev
  if self.program.watchdog then watchdog.attach(self) end
  if self.program.trace then trace.attach(self) end
  return self
end

-- mod:global("name" or a name expression) -> a device buffer view of a __device__ or __constant__
-- variable (upload/download/fill as any buffer; close only forgets it). The view keeps the
-- module loaded, and closing the module closes its views.
function Module:global(name)
  util.cstring("module.global", "name", name)
  self:load()
  local lowered = self.entry.lowered[name] or name
  local p, n = ffi.new("CUdeviceptr[1]"), ffi.new("size_t[1]")
  local rc = C.cuasync_module_global(p, n, self.handle.handle, lowered, self.name, errbuf, ERRLEN)
  if rc ~= 0 then
    local ok, err = pcall(native.check, rc)
    if not ok and native.is_driver_error(err) and err.code == "CUDA_ERROR_NOT_FOUND" then
      util.fail("module.global", ("program %s has no __device__ or __constant__ variable '%s' (declare it extern \"C\", or list a C++ name in the program's expressions)"):format(
        self.name, name))
    end
    error(err, 0)
  end
  local view = buffer.view(p[0], n[0], self.device.ordinal)
  owners[view] = self
  self.views[view] = true
  return view
end

-- mod:kernel("name" or a name expression, "ptr, u64")
function Module:kernel(name, sig)
  util.cstring("module.kernel", "name", name)
  local params = signature.parse(sig)
  self:load()
  return kernel.new(self, name, self.entry.lowered[name] or name, params, sig)
end

-- The mangled name NVRTC gave a name expression.
function Module:lowered(expr)
  return self.entry.lowered[expr]
end

function Module:ptx() return self.entry.ptx end
function Module:cubin() return self.entry.cubin end
function Module:log() return self.entry.log or "" end   -- "" for a compile that said nothing
function Module:resources() return compiler.resources(self.entry, self.arch) end

function Module:close()
  for v in pairs(self.views) do v:close() end   -- forgets the address (a view frees nothing)
  if self.handle then self.handle:close() end
end

util.methods(Module, "module", "mod")

return M
