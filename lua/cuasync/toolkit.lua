-- Where the files a compile needs are: kernels-src (the project's kernels and device headers) and
-- the CUDA toolkit's include directories. One search order each, read once per process:
--   kernels-src   $CUASYNC_KERNELS, beside the installed modules, the source tree's
--   CUDA includes native: the toolkit roots ($CUDA_HOME, $CUASYNC_NVRTC's, /usr/local/cuda), then
--                 the include/ beside the NVRTC loaded (native/cuasync_toolkit.c, cuasync_toolkit_include)
local ffi = require("ffi")
local native = require("cuasync.native")
local util = require("cuasync.util")
local cache = require("cuasync.cache")
require("cuasync.cdef.fs")
require("cuasync.cdef.loader")
require("cuasync.cdef.toolkit")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

local M = {}

function M.file_exists(path)
  local f = io.open(path, "rb")
  if f then f:close() return true end
  return false
end

function M.read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."

function M.kernels_dir()
  local env = os.getenv("CUASYNC_KERNELS")
  if env and env ~= "" then return env end
  for _, d in ipairs({ here .. "/kernels-src", here .. "/../../kernels-src" }) do
    if M.file_exists(d .. "/cuasync/mbarrier.cuh") then return d end
  end
  util.fail("program", "kernels-src not found beside " .. here .. " (set CUASYNC_KERNELS)")
end

-- { names = {...}, sources = {...}, digest = sha256 of all of them }: read and hashed once per
-- process, so a compile that hits the memory cache never re-hashes ~50 KiB of headers.
local device_headers
function M.device_headers()
  if device_headers then return device_headers end
  local dir = M.kernels_dir() .. "/cuasync"
  local list = ffi.new("char[8192]")
  native.check(C.cuasync_fs_list(dir, ".cuh", list, 8192, errbuf, ERRLEN))
  local names, sources, parts = {}, {}, {}
  for name in ffi.string(list):gmatch("[^\n]+") do
    names[#names + 1] = "cuasync/" .. name
    sources[#sources + 1] = assert(M.read_file(dir .. "/" .. name))
    parts[#parts + 1] = names[#names]
    parts[#parts + 1] = sources[#sources]
  end
  device_headers = { names = names, sources = sources, digest = cache.key(parts) }
  return device_headers
end

local identity
function M.nvrtc_identity()
  if identity then return identity end
  local buf = ffi.new("char[4096]")
  native.check(C.cuasync_nvrtc_identity(buf, 4096, errbuf, ERRLEN))
  identity = ffi.string(buf)
  return identity
end

-- The toolkit's include directories (and its cccl/ where the CCCL headers live there): the one
-- toolkit search is native (cuasync_toolkit_roots), shared with the NVRTC and cuBLAS loaders.
local include_dirs
function M.cuda_includes()
  if include_dirs then return include_dirs end
  local buf = ffi.new("char[4096]")
  native.check(C.cuasync_toolkit_include(buf, 4096, errbuf, ERRLEN))
  local d = ffi.string(buf)
  include_dirs = {}
  if d ~= "" then
    if M.file_exists(d .. "/cccl/cuda/barrier") then include_dirs[#include_dirs + 1] = d .. "/cccl" end
    include_dirs[#include_dirs + 1] = d
  end
  return include_dirs
end

return M
