-- Cancel from the host: the watchdog's abort word of every watched module with launches
-- pending (watchdog.pending) is raised (watchdog.raise: a 4-byte copy from pinned memory on a
-- stream of its own, which a copy engine carries while the kernel holds every SM: 74 us on the
-- H200, where a store to host-mapped memory the kernel polls took 7.9 ms,
-- examples/bench_cancel.lua). The kernel's watched waits see the word and leave through PTX
-- exit, as after a timeout of their own; stream.poll then raises a Cancelled error.
local watchdog = require("cuasync.watchdog")
local errors = require("cuasync.errors")

local M = {}

-- Raise the abort words; returns the records reached (none: no watched kernel is running).
function M.cancel()
  local hit = watchdog.pending()
  for _, w in ipairs(hit) do watchdog.raise(w) end
  return hit
end

-- After the cancelled kernels left: lower the words again (a record written meanwhile, by a
-- wait that timed out on its own, stays for watchdog.check to raise, and to lower).
function M.lower(hit)
  for _, w in ipairs(hit) do
    if w.record.state == 0 then watchdog.lower(w) end
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
