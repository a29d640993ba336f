-- The one ffi.load of libcuasync, its version check, and the error buffer every call writes into.
local ffi = require("ffi")

for _, m in ipairs({ "types", "core", "error", "loader", "device", "memory", "compile", "module",
                     "launch", "stream", "event", "hash", "fs", "tensormap" }) do
  require("cuasync.cdef." .. m)
end

local VERSION = "0.1.0"   -- must equal CUASYNC_VERSION_STRING in native/cuasync.h
local ABI = 1             -- must equal CUASYNC_ABI

local function find_library()
  local override = os.getenv("CUASYNC_LIB")
  if override and override ~= "" then return override end
  local path, tried = package.searchpath("libcuasync", package.cpath)
  if not path then
    error("cuasync: libcuasync.so not found on package.cpath (build it with `make`, or install with "
          .. "`luarocks make`; set CUASYNC_LIB to point at it)\n" .. tried, 0)
  end
  return path
end

local path = find_library()
local ok, C = pcall(ffi.load, path)
if not ok then error("cuasync: cannot load " .. path .. ": " .. tostring(C), 0) end

local native_version, native_abi = ffi.string(C.cuasync_version()), C.cuasync_abi()
if native_abi ~= ABI or native_version ~= VERSION then
  error(("cuasync: native library %s is version %s (ABI %d) but the Lua modules are %s (ABI %d): "
         .. "rebuild with `make` or reinstall"):format(path, native_version, native_abi, VERSION, ABI), 0)
end

local ERRLEN = 4096
local errbuf = ffi.new("char[?]", ERRLEN)

local M = { C = C, path = path, version = VERSION, errbuf = errbuf, ERRLEN = ERRLEN }

-- The message of the last failed call.
function M.message()
  return ffi.string(errbuf)
end

-- Raise the native message when rc is not 0. The message names the call and what was being
-- done; no position is prefixed (from inside the library it would point at cuasync, not at you).
function M.check(rc)
  if rc ~= 0 then error(ffi.string(errbuf), 0) end
end

return M
