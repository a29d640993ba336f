-- Cancel from the host: the watchdog's abort word of every watched module with launches
-- pending (watchdog.pending), raised by a 4-byte copy from pinned memory on a stream of its own
-- (non-blocking, so it does not queue behind the running kernel; a copy engine carries it
-- while the kernel holds every SM: 74 us on the H200, where a store to host-mapped memory the
-- kernel polls took 7.9 ms, examples/bench_cancel.lua). The kernel's watched waits see the word
-- and leave through PTX exit, as after a timeout of their own; stream.poll then raises a
-- Cancelled error.
local ffi = require("ffi")
local native = require("cuasync.native")
local watchdog = require("cuasync.watchdog")
local errors = require("cuasync.errors")
require("cuasync.cdef.memory")
require("cuasync.cdef.stream")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

local M = {}
local res = { generation = -1 }

local function resources()
  if res.generation ~= native.state.generation then
    local s, p = ffi.new("CUstream[1]"), ffi.new("void *[1]")
    native.check(C.cuasync_stream_create(s, 1, errbuf, ERRLEN))
    native.check(C.cuasync_mem_alloc_host(p, 4, errbuf, ERRLEN))
    ffi.cast("uint32_t *", p[0])[0] = 1
    res.stream, res.word, res.generation = s[0], p[0], native.state.generation
  end
  return res.stream, res.word
end

-- Raise the abort words; returns the records reached (none: no watched kernel is running).
function M.cancel()
  local hit = watchdog.pending()
  for _, w in ipairs(hit) do
    local stream, word = resources()
    native.check(C.cuasync_mem_htod_async(w.abort, word, 4, stream, errbuf, ERRLEN))
  end
  return hit
end

-- After the cancelled kernels left: lower the words again (a record written meanwhile, by a
-- wait that timed out on its own, stays for watchdog.check to raise).
function M.lower(hit)
  native.check(C.cuasync_stream_synchronize(res.stream, "lowering the watchdog's abort word", errbuf, ERRLEN))
  for _, w in ipairs(hit) do
    if w.record.state == 0 then
      native.check(C.cuasync_mem_set8(w.abort, 0, 4, errbuf, ERRLEN))
      native.check(C.cuasync_mem_set8(w.claim, 0, 4, errbuf, ERRLEN))
      native.check(C.cuasync_mem_set8(w.first, 0, 8, errbuf, ERRLEN))
    end
  end
end

M.is_cancelled = errors.is_cancelled

-- The error a cancelled wait raises (errors.lua, kind "cancelled"): { kind = "cancelled",
-- cause = "timeout" | "interrupt", elapsed_ms, kernels, message }.
function M.error(where, cause, elapsed_ms, limit_ms, hit)
  local names = {}
  for _, w in ipairs(hit) do for _, l in ipairs(w.labels or { "'" .. tostring(w.last) .. "'" }) do names[#names + 1] = l end end
  local e = { cause = cause, elapsed_ms = elapsed_ms, kernels = names }
  e.message = ("cuasync.%s: cancelled after %.0f ms (%s): the watchdog's abort word was raised from the host and kernel %s left its watched waits; the GPU is free for the next launch"):format(
    where, elapsed_ms, cause == "interrupt" and "Ctrl-C" or ("over timeout_ms = " .. limit_ms), table.concat(names, " or "))
  return errors.new("cancelled", e)
end

return M
