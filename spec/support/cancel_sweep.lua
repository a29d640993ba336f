-- A sweep of four copies through planted_hangs.cu for spec/core/cancel_spec.lua: the variants in
-- o.hangs (default { 2 }) hang (full armed with more bytes than the loads bring), under a
-- watchdog whose own timeout is a minute, so only a cancel from the host (timeout_ms, or
-- Ctrl-C) ends them. o: { timeout_ms, marker (a file written, with the variant appended, when a
-- hung variant is launched), name, hangs }.
local cuasync = require("cuasync")
local ffi = require("ffi")
pcall(ffi.cdef, "int memcmp(const void *a, const void *b, size_t n);")

return function(o)
  local W, Hh, BX, BY = 512, 256, 64, 32
  local host = ffi.new("uint32_t[?]", W * Hh)
  for i = 0, W * Hh - 1 do host[i] = (i * 2654435761 + os.time()) % 2 ^ 32 end
  local hangs = {}
  for _, v in ipairs(o.hangs or { 2 }) do hangs[v] = true end
  local src, dst
  local function plan(map)
    return cuasync.pipeline{ name = "hang", stages = 3, loads = { { map = map, name = "in" } }, producer = { warps = 1 }, consumer = { warps = 4 } }
  end
  local function map(real)
    return cuasync.tensormap{ buffer = real and src or nil, ptr = not real and 2 ^ 20 or nil, bytes = not real and W * Hh * 4 or nil,
      encode = real or false, dtype = "f32", dims = { W, Hh }, box = { BX, BY } }
  end
  local function program(p)
    return plan(map(false)):program{ file = "planted_hangs.cu", defines = { BOX_X = BX, BOX_Y = BY, HANG = hangs[p.v] and 1 or 0 },
                                     watchdog = { timeout_ms = 60000 } }
  end
  return cuasync.sweep{ name = o.name or "cancel", params = { v = { 1, 2, 3, 4 } }, timeout_ms = o.timeout_ms, rounds = 1, reps = 2,
    program = program,
    build = function(p)
      if not src then
        src, dst = cuasync.alloc(W * Hh * 4), cuasync.alloc(W * Hh * 4)
        src:upload(host, W * Hh * 4)
      end
      local k = program(p):compile():kernel("planted", "tensormap, ptr, u32, u32, u32")
      local run = k:prepare(plan(map(false)):launch_config{ grid = 8 }, map(true), dst, W, W / BX, (W / BX) * (Hh / BY))
      return { bytes = 2 * W * Hh * 4,
        run = function()
          run()
          if hangs[p.v] and o.marker then local f = io.open(o.marker .. p.v, "w") f:write("launched\n") f:close() end
        end,
        poison = function() dst:fill(0xA5) end,
        verify = function() return ffi.C.memcmp(dst:download("uint32_t", W * Hh), host, W * Hh * 4) == 0 end }
    end }
end
