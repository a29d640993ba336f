-- Shared by the copy benchmarks: `bytes` of fresh random data in src (kept on the host to verify
-- against), a dst, cuMemcpyDtoD as the yardstick variant, and verify(label) that compares dst
-- with the source byte for byte. close() frees it all.
local ffi = require("ffi")
local cuasync = require("cuasync")
local random = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/_random.lua")
pcall(ffi.cdef, "int memcmp(const void *a, const void *b, size_t n);")

return function(bytes)
  local c = { bytes = bytes }
  c.host = cuasync.host_alloc(bytes)
  random.fill(c.host.ptr, bytes / 8)
  c.src, c.dst = cuasync.alloc(bytes), cuasync.alloc(bytes)
  c.src:upload(c.host)
  c.back = cuasync.host_alloc(bytes)
  function c.verify(label)
    ffi.fill(c.back.ptr, bytes, 0)
    c.dst:download_to(c.back)
    if ffi.C.memcmp(c.back.ptr, c.host.ptr, bytes) ~= 0 then error(label .. ": the copy differs from the source", 0) end
  end
  -- poison dst, run once, verify: every variant goes through this before it is timed
  function c.check(label, run)
    c.dst:fill(0xA5)
    run()
    cuasync.synchronize()
    c.verify(label)
  end
  c.base = { label = "cuMemcpyDtoD", run = function() c.dst:upload(c.src) end, times = {} }
  function c.gbps(ms) return 2 * bytes / (ms * 1e6) end
  function c.close() c.host:close(); c.back:close(); c.src:close(); c.dst:close() end
  return c
end
