-- cuasync info: the driver and NVRTC, every device's limits, the compile cache.
local cli = require("cuasync.tools.cli")

local M = {
  name = "info",
  summary = "driver, NVRTC, devices, limits, cache",
  usage = { "" },
  about = "  the driver and NVRTC versions, every device (arch, SMs, shared memory limits, clusters) and the\n"
       .. "  compile cache (directory, files, size)",
}

function M.run()
  -- lazy: --help and usage errors need no native library; a missing one is this command's error
  local ok_lib, native = pcall(require, "cuasync.native")
  if not ok_lib then cli.fail(native) end
  local ffi = require("ffi")
  local device = require("cuasync.device")
  local cache = require("cuasync.cache")
  local toolkit = require("cuasync.toolkit")
  require("cuasync.cdef.loader")
  require("cuasync.cdef.toolkit")
  local v = ffi.new("int[1]")
  local drv = native.C.cuasync_driver_version(v, native.errbuf, native.ERRLEN) == 0
    and ("%d.%d"):format(math.floor(v[0] / 1000), v[0] % 1000 / 10) or ("none (" .. native.message() .. ")")
  print(("cuasync %s, library %s"):format(native.version, native.path))
  print("driver:  CUDA " .. drv)
  -- the identity is "path size mtime" (what keys the compile cache): each number labelled
  local ok_n, nvrtc = pcall(toolkit.nvrtc_identity)
  if ok_n then
    local mj, mn = ffi.new("int[1]"), ffi.new("int[1]")
    local ver = native.C.cuasync_nvrtc_version(mj, mn, native.errbuf, native.ERRLEN) == 0 and ("%d.%d"):format(mj[0], mn[0]) or "?"
    local path, size, mtime = nvrtc:match("^(.*) (%d+) (%d+)$")
    print(("NVRTC:   %s, %s (%s bytes, modified %s)"):format(ver, path or nvrtc, size or "?",
      mtime and os.date("!%Y-%m-%d %H:%M:%S UTC", tonumber(mtime)) or "?"))
  else
    print("NVRTC:   none (" .. tostring(nvrtc) .. ")")
  end
  local ok, why = device.available()
  if not ok then
    print("devices: none (" .. why .. ")")
  else
    for i = 0, device.count() - 1 do
      local d = device.open(i)
      print(("device %d: %s, %s, %d SMs, %.1f GiB; shared memory %d B per block (%d opt-in, %d reserved), %d per SM; clusters %s"):format(
        i, d.name, d.arch, d.sms, d.total_mem / 2 ^ 30, d.smem_per_block, d.smem_optin, d.reserved_smem_per_block, d.smem_per_sm,
        d.cluster and "yes" or "no"))
    end
  end
  local dir = cache.dir()
  local files, bytes = cli.dir_usage(dir)
  print(("cache:   %s (%d files, %d KiB)%s"):format(dir, files, math.ceil(bytes / 1024),
    os.getenv("CUASYNC_CACHE") == "0" and ", disk cache off (CUASYNC_CACHE=0)" or ""))
end

return M
