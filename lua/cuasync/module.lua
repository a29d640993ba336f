-- Modules: a compiled program's cubin (or PTX), loaded into the current device at first use.
local ffi = require("ffi")
local native = require("cuasync.native")
local device = require("cuasync.device")
local util = require("cuasync.util")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

ffi.cdef [[ typedef struct cuasync_module { CUmodule handle; int loaded; } cuasync_module; ]]

local M = {}
local Module = {}
Module.__index = Module

local Handle = {}
function Handle:close()
  if self.loaded ~= 0 then
    self.loaded = 0
    native.check(C.cuasync_module_unload(self.handle, errbuf, ERRLEN))
  end
end
local handle_t = ffi.metatype("cuasync_module", {
  __index = Handle,
  __gc = function(h) if h.loaded ~= 0 then h.loaded = 0; C.cuasync_module_unload(h.handle, errbuf, ERRLEN) end end,
})

function M.new(program, entry, arch)
  return setmetatable({ program = program, entry = entry, arch = arch, name = program.name }, Module)
end

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
  return self
end

-- mod:kernel("name" or a name expression, "ptr, u64")
function Module:kernel(name, sig)
  util.kind("module.kernel", "name", name, "string", 2)
  local params = require("cuasync.signature").parse(sig, 2)
  self:load()
  return require("cuasync.kernel").new(self, name, self.entry.lowered[name] or name, params, sig)
end

-- The mangled name NVRTC gave a name expression.
function Module:lowered(expr)
  return self.entry.lowered[expr]
end

function Module:ptx() return self.entry.ptx end
function Module:cubin() return self.entry.cubin end
function Module:log() return self.entry.log end

function Module:close()
  if self.handle then self.handle:close() end
end

return M
