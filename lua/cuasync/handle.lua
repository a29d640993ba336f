-- One way to make a leaf handle: an ffi.metatype struct whose close is also its __gc. close is
-- idempotent (the handle is marked dead before the driver is asked), and raises a failure the
-- caller can act on; a failure that only says the context is already gone (a sticky error, or the
-- driver shutting down at exit) is not raised, since the resource went with the context — and a
-- raising finaliser would surface in whatever code the GC happened to interrupt.
local ffi = require("ffi")
local native = require("cuasync.native")
local capture = require("cuasync.capture")

local M = {}

local GONE = { CUDA_ERROR_DEINITIALIZED = true }

-- Every live handle, so that cuasync.reset() can mark them all dead (weak: the GC still frees).
local all = setmetatable({}, { __mode = "k" })
local lost = setmetatable({}, { __mode = "k" })

-- Mark every handle dead without releasing it (its resource went with the context); `why` is
-- what lost(h) answers for them afterwards.
function M.forget_all(why)
  for h, o in pairs(all) do
    if o.live(h) then o.kill(h); lost[h] = why end
  end
end

-- "the <what> is closed", or why it was lost: the message for a dead handle.
function M.dead(what, h)
  local why = lost[h]
  if why then return ("the %s %s"):format(what, why) end
  return ("the %s is closed"):format(what)
end

-- define(ctype, { live = fn(h) -> bool, kill = fn(h) (mark dead; returns what release needs),
--                 release = fn(token) -> rc, methods = {...}, tostring = fn })
-- -> the metatype; methods.close is set.
function M.define(ctype, o)
  local live, kill, release = o.live, o.kill, o.release
  local function free(token)
    local rc = release(token)
    if rc ~= 0 then
      local ok, err = pcall(native.check, rc)
      if not ok and native.is_driver_error(err) and (err.sticky or GONE[err.code]) then return end
      if not ok then error(err, 0) end
    end
  end
  local function close(h)
    if not live(h) then return end
    local token = kill(h)
    capture.changed(h)   -- a graph that keeps h checks itself at its next launch
    -- while cuasync.graph captures, a free (a close, or the GC's) would break the capture: it
    -- waits until the capture has ended
    if capture.defer(free, token) then return end
    free(token)
  end
  o.methods.close = close
  return ffi.metatype(ctype, { __index = o.methods, __gc = close, __tostring = o.tostring,
    __new = function(ct, ...)
      local h = ffi.new(ct, ...)
      all[h] = o
      return h
    end })
end

return M
