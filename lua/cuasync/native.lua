-- The one ffi.load of libcuasync, its version check, and the error buffer every call writes into.
-- Each module declares the C functions it calls by requiring their cdef module (the resty-core
-- way): this one calls those of cuasync.h and cuasync_error.h.
local ffi = require("ffi")
local util = require("cuasync.util")
local errors = require("cuasync.errors")
require("cuasync.cdef.core")
require("cuasync.cdef.error")

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

-- Driver results that leave the context unusable for the rest of the process (cuda.h: "the
-- process must be terminated and relaunched"). Named once here; compared by name.
M.STICKY = {
  CUDA_ERROR_ILLEGAL_ADDRESS = true, CUDA_ERROR_LAUNCH_TIMEOUT = true,
  CUDA_ERROR_HARDWARE_STACK_ERROR = true, CUDA_ERROR_ILLEGAL_INSTRUCTION = true,
  CUDA_ERROR_MISALIGNED_ADDRESS = true, CUDA_ERROR_INVALID_ADDRESS_SPACE = true,
  CUDA_ERROR_INVALID_PC = true, CUDA_ERROR_LAUNCH_FAILED = true, CUDA_ERROR_ECC_UNCORRECTABLE = true,
  CUDA_ERROR_CONTEXT_IS_DESTROYED = true,
}

-- A failed driver call as an error object (errors.lua, kind "driver"): tostring(err) is the
-- message ("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory) while ..."); err.code is the
-- driver's error name, err.status its number, err.sticky whether the context is lost, err.where
-- the user's line. String methods work on it (err:find, err:match) through its message.
M.DriverError = errors.DriverError
M.is_driver_error = errors.is_driver_error

function M.driver_error(message, status)
  local code = ffi.string(C.cuasync_cu_error_name(status))
  local sticky = M.STICKY[code] == true
  if sticky then
    message = message .. "; the CUDA context is lost: every later call on this device in this process fails the same way (the driver makes no new context after it either: only a new process uses the GPU again; cuasync.isolate runs code in one)"
  end
  return errors.new("driver", { message = message, status = status, code = code, sticky = sticky,
                                where = util.user_where() })
end

-- Incremented by cuasync.reset(): a kernel or prepared launch from an older generation refuses
-- to launch (its function handle belonged to the context that was reset).
M.state = { generation = 0 }

-- Raise when rc is not 0: a driver failure as a DriverError, anything else as its message. The
-- message names the call and what was being done; no position is prefixed.
function M.check(rc)
  if rc == 0 then return end
  if rc == C.CUASYNC_E_DRIVER then error(M.driver_error(ffi.string(errbuf), C.cuasync_last_cu_status()), 0) end
  -- no driver (or NVRTC) here: named by the call the user made, at their line
  if rc == C.CUASYNC_E_NODRIVER or rc == C.CUASYNC_E_NONVRTC then
    util.fail(util.entry_name() or "native", ffi.string(errbuf))
  end
  error(ffi.string(errbuf), 0)
end

-- The same, for a call whose refusals (a bad argument, cuBLAS missing) are the caller's to name:
-- they raise as "cuasync.<where>: <message>" at the user's line (C writes no prefix; the Lua side
-- owns them). Driver failures and a missing driver raise as check does.
function M.check_as(where, rc)
  if rc == C.CUASYNC_E_INVALID or rc == C.CUASYNC_E_NOBLAS then util.fail(where, ffi.string(errbuf)) end
  return M.check(rc)
end

return M
