-- example.copy(bytes), shared by the copy examples: `bytes` of fresh random data in src (and its
-- copy in the host buffer `host`), a dst, cuMemcpyDtoD as the yardstick variant, and verify(label)
-- that compares dst with the source word for word, on the device (kernels-src/compare_words.cu),
-- against `ref`: the same data in a buffer no kernel under test is given. close() frees it all.
local cuasync = require("cuasync")
local random = require("example.random")

return function(bytes)
  local c = { bytes = bytes }
  c.host = cuasync.host_alloc(bytes)
  c.src, c.dst, c.ref, c.bad = cuasync.alloc(bytes), cuasync.alloc(bytes), cuasync.alloc(bytes), cuasync.alloc(8)
  c.src:fill_random{ dtype = "u32", seed = random.seed() }
  c.ref:upload(c.src)
  c.src:download_to(c.host)
  local compare = cuasync.program{ file = "compare_words.cu" }:compile():kernel("compare_words", "ptr, ptr, u64, ptr")
  assert(bytes % 16 == 0, "example.copy: bytes must be a multiple of 16")
  function c.verify(label)
    c.bad:fill(0)
    compare:launch({ grid = 4 * cuasync.current_device().sms, block = 256 }, c.dst, c.ref, bytes / 16, c.bad)
    local bad = c.bad:download("uint64_t", 1)[0]
    if bad ~= 0 then error(("%s: the copy differs from the source in %d of %d 16-byte words"):format(label, tonumber(bad), bytes / 16), 0) end
  end
  -- poison dst, run once, verify: every variant goes through this before it is timed
  function c.check(label, run)
    c.dst:poison()
    run()
    cuasync.synchronize()
    c.verify(label)
  end
  c.base = { label = "cuMemcpyDtoD", run = function() c.dst:upload(c.src) end, times = {} }
  function c.gbps(ms) return 2 * bytes / (ms * 1e6) end
  -- a host buffer to download into, for the examples that check on the host (made on first use)
  setmetatable(c, { __index = function(t, k)
    if k == "back" then rawset(t, "back", cuasync.host_alloc(bytes)) return t.back end
  end })
  function c.close()
    c.host:close(); c.src:close(); c.dst:close(); c.ref:close(); c.bad:close()
    if rawget(c, "back") then c.back:close() end
  end
  return c
end
