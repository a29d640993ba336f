-- Streams and events: metatyped handles with an idempotent :close().
local ffi = require("ffi")
local native = require("cuasync.native")
local device = require("cuasync.device")
local handle = require("cuasync.handle")
local util = require("cuasync.util")
local watchdog = require("cuasync.watchdog")
local cancel = require("cuasync.cancel")
local capture = require("cuasync.capture")
require("cuasync.cdef.stream")
require("cuasync.cdef.event")
require("cuasync.cdef.signal")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

ffi.cdef [[
typedef struct cuasync_stream { CUstream handle; int open; } cuasync_stream;
typedef struct cuasync_event { CUevent handle; int open; } cuasync_event;
]]

pcall(ffi.cdef, "int usleep(unsigned int usec);")

local M = {}
local Stream, Event = {}, {}
local live_streams = setmetatable({}, { __mode = "k" })
M.MAX_TIMEOUT_MS = 24 * 3600 * 1000

-- Host monotonic clock in nanoseconds.
function M.now_ns()
  return C.cuasync_now_ns()
end

-- { timeout_ms = n } (or nil): the bound of a host-side wait.
function M.timeout(where, opts)
  if opts == nil then return nil end
  util.kind(where, "argument", opts, "table")
  util.known_fields(where, opts, { timeout_ms = true })
  return util.int_in(where, "timeout_ms", opts.timeout_ms, 1, M.MAX_TIMEOUT_MS)
end

M.CANCEL_WAIT_MS = 1000   -- how long a cancelled kernel may take to leave its watched waits

-- Poll done() (a query that never blocks) until it holds. Past ms, or at a Ctrl-C (counted while
-- a sweep runs, native/cuasync_signal.c), a watched kernel is cancelled (its abort word raised
-- from the host) and a Cancelled error raised once it left; a kernel without the watchdog cannot
-- be reached: past ms it raises "still running", as before.
function M.poll(where, ms, what, done)
  local t0 = C.cuasync_now_ns()
  local seen = C.cuasync_interrupt_count()
  while not done() do
    local el = tonumber(C.cuasync_now_ns() - t0) / 1e6
    local interrupted = C.cuasync_interrupt_count() > seen
    if el > ms or interrupted then
      local hit = cancel.cancel()
      if #hit > 0 then
        local t1 = C.cuasync_now_ns()
        while not done() and tonumber(C.cuasync_now_ns() - t1) / 1e6 < M.CANCEL_WAIT_MS do ffi.C.usleep(50) end
        if done() then
          cancel.lower(hit)
          error(cancel.error(where, interrupted and "interrupt" or "timeout",
                                         tonumber(C.cuasync_now_ns() - t0) / 1e6, ms, hit), 0)
        end
        util.fail(where, ("still running after %d ms: %s; the watchdog's abort word was raised but the kernel did not leave within %d ms (it is not in a watched wait)"):format(
                  math.floor(el), what, M.CANCEL_WAIT_MS), { kind = "timeout", elapsed_ms = math.floor(el), watched = true })
      end
      if el > ms then
        util.fail(where, ("still running after %d ms: %s (the watchdog is off for it, so it cannot be cancelled; cuasync.program{ watchdog = true } turns a hung wait into a post-mortem)"):format(
                  ms, what), { kind = "timeout", elapsed_ms = ms, watched = false })
      end
      seen = C.cuasync_interrupt_count()   -- Ctrl-C with nothing watched to cancel: wait on
    end
    ffi.C.usleep(200)
  end
end

local flag = ffi.new("int[1]")
local function stream_done(h)
  return function()
    native.check(C.cuasync_stream_query(h, flag, errbuf, ERRLEN))
    return flag[0] ~= 0
  end
end

-- s:synchronize([{ timeout_ms = n }]): wait for the stream's work; with a timeout, raise "still
-- running" instead of blocking past it. A watched kernel's hang is raised here.
function Stream:synchronize(opts)
  if self.open == 0 then util.fail("stream.synchronize", handle.dead("stream", self)) end
  capture.refuse("stream.synchronize", "a wait on the host cannot be captured, a graph only records work to replay (wait after G:launch)")
  local ms = M.timeout("stream.synchronize", opts)
  if ms then M.poll("stream.synchronize", ms, "the work on this stream", stream_done(self.handle)) end
  watchdog.check(C.cuasync_stream_synchronize(self.handle, "waiting for a stream", errbuf, ERRLEN))
end

local function closer(kind, destroy, methods)
  return {
    methods = methods,
    live = function(h) return h.open ~= 0 end,
    kill = function(h) h.open = 0; return h.handle end,
    release = function(x) return destroy(x, errbuf, ERRLEN) end,
    tostring = function(h) return ("cuasync.%s(%s)"):format(kind, h.open ~= 0 and "open" or "closed") end,
  }
end

local stream_t = handle.define("cuasync_stream", closer("stream", C.cuasync_stream_destroy, Stream))

-- cuasync.stream{ non_blocking = true }
function M.stream(opts)
  if type(opts) ~= "nil" then   -- type(): a NULL cdata compares equal to nil
    util.kind("stream", "opts", opts, "table")
    util.known_fields("stream", opts, { non_blocking = true })
    if type(opts.non_blocking) ~= "nil" then util.kind("stream", "non_blocking", opts.non_blocking, "boolean") end
  end
  device.current()
  local h = ffi.new("CUstream[1]")
  native.check(C.cuasync_stream_create(h, opts and opts.non_blocking and 1 or 0, errbuf, ERRLEN))
  local s = stream_t(h[0], 1)
  live_streams[s] = true
  return s
end

-- Every open stream (cuasync.synchronize{ timeout_ms } waits for them all).
function M.live()
  local out = {}
  for s in pairs(live_streams) do if s.open ~= 0 then out[#out + 1] = s end end
  return out
end

-- The CUstream of a stream object or nil (the default stream).
function M.handle(s)
  if s == nil then return nil end
  if ffi.istype(stream_t, s) then
    if s.open == 0 then util.fail("stream", handle.dead("stream", s)) end
    return s.handle
  end
  util.fail("stream", ("expected a cuasync.stream() or nil (got %s)"):format(util.describe(s)))
end

-- A launch cache's key for a stream object (nil for anything else): its CUstream, since every
-- open stream prints alike ("cuasync.stream(open)"). A stream made after another was closed may
-- get its CUstream again, and a runner cached for that value then launches on the live one.
function M.key(s)
  if not ffi.istype(stream_t, s) then return nil end
  return tostring(ffi.cast("uintptr_t", s.handle))
end

function Event:record(stream)
  if self.open == 0 then util.fail("event.record", handle.dead("event", self)) end
  capture.refuse("event.record", "an event inside a capture cannot be waited on or timed from the host (record events around G:launch)")
  native.check(C.cuasync_event_record(self.handle, M.handle(stream), errbuf, ERRLEN))
  return self
end

function Event:query()
  if self.open == 0 then util.fail("event.query", handle.dead("event", self)) end
  capture.refuse("event.query", "an event inside a capture cannot be waited on or timed from the host (record events around G:launch)")
  native.check(C.cuasync_event_query(self.handle, flag, errbuf, ERRLEN))
  return flag[0] ~= 0
end

-- e:synchronize([{ timeout_ms = n }]): as Stream:synchronize, for the work before the event.
function Event:synchronize(opts)
  if self.open == 0 then util.fail("event.synchronize", handle.dead("event", self)) end
  capture.refuse("event.synchronize", "a wait on the host cannot be captured, a graph only records work to replay (wait after G:launch)")
  local ms = M.timeout("event.synchronize", opts)
  if ms then M.poll("event.synchronize", ms, "the work before this event", function() return self:query() end) end
  watchdog.check(C.cuasync_event_synchronize(self.handle, errbuf, ERRLEN))
end

-- Milliseconds from self to later (both recorded, later completed).
local ms = ffi.new("float[1]")
function Event:elapsed(later)
  if not ffi.istype("cuasync_event", later) then
    util.fail("event.elapsed", ("later must be a cuasync.event() (got %s)"):format(util.describe(later)))
  end
  if self.open == 0 or later.open == 0 then
    util.fail("event.elapsed", handle.dead("event", self.open == 0 and self or later))
  end
  native.check(C.cuasync_event_elapsed(ms, self.handle, later.handle, errbuf, ERRLEN))
  return ms[0]
end

local event_t = handle.define("cuasync_event", closer("event", C.cuasync_event_destroy, Event))

function M.event()
  device.current()
  local h = ffi.new("CUevent[1]")
  native.check(C.cuasync_event_create(h, errbuf, ERRLEN))
  return event_t(h[0], 1)
end

M.stream_t, M.event_t = stream_t, event_t
-- Wait for all work on the current device; asynchronous kernel faults, and the hang of a
-- watched kernel, surface here. synchronize{ timeout_ms = n } raises "still running" instead of
-- blocking past n ms (it polls events recorded on the default stream and on every open stream).
function M.synchronize(what)
  capture.refuse("synchronize", "a wait on the host cannot be captured, a graph only records work to replay (wait after G:launch)")
  if type(what) == "table" then
    local ms = M.timeout("synchronize", what)
    local dev = device.current()
    local events = {}
    for _, s in ipairs(M.live()) do events[#events + 1] = M.event():record(s) end
    events[#events + 1] = M.event():record(nil)
    M.poll("synchronize", ms, "kernels or copies on the device", function()
      for _, e in ipairs(events) do if not e:query() then return false end end
      return true
    end)
    for _, e in ipairs(events) do e:close() end
    return dev:synchronize()
  end
  if what ~= nil then util.cstring("synchronize", "what", what) end
  device.current():synchronize(what)
end

return M
