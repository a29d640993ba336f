-- The sweep's progress line on stderr ("name compiled 12/48  1.3 s, ETA 3.9 s"), only where
-- stderr is a terminal and the run is not quiet: logs and CI stay clean.
local ffi = require("ffi")
local streams = require("cuasync.stream")

pcall(ffi.cdef, "int isatty(int fd);")

local M = {}

function M.new(name, quiet)
  local t0 = streams.now_ns()
  local live = not quiet and ffi.C.isatty(2) == 1
  return function(what, n, m)
    if not live then return end
    local el = (streams.now_ns() - t0) / 1e9
    local eta = n > 0 and el / n * (m - n) or 0
    io.stderr:write(("\r%s %s %d/%d  %.1f s, ETA %.1f s   "):format(name, what, n, m, el, eta))
    if n == m then io.stderr:write("\n") end
  end
end

return M
