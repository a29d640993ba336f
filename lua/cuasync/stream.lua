-- Streams and events: metatyped handles with an idempotent :close().
local ffi = require("ffi")
local native = require("cuasync.native")
local device = require("cuasync.device")
local handle = require("cuasync.handle")
local util = require("cuasync.util")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

ffi.cdef [[
typedef struct cuasync_stream { CUstream handle; int open; } cuasync_stream;
typedef struct cuasync_event { CUevent handle; int open; } cuasync_event;
]]

local M = {}
local Stream, Event = {}, {}

function Stream:synchronize()
  if self.open == 0 then util.fail("stream.synchronize", "the stream is closed") end
  native.check(C.cuasync_stream_synchronize(self.handle, "waiting for a stream", errbuf, ERRLEN))
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
  return stream_t(h[0], 1)
end

-- The CUstream of a stream object or nil (the default stream).
function M.handle(s)
  if s == nil then return nil end
  if ffi.istype(stream_t, s) then
    if s.open == 0 then util.fail("stream", "the stream is closed") end
    return s.handle
  end
  util.fail("stream", ("expected a cuasync.stream() or nil (got %s)"):format(util.describe(s)))
end

function Event:record(stream)
  if self.open == 0 then util.fail("event.record", "the event is closed") end
  native.check(C.cuasync_event_record(self.handle, M.handle(stream), errbuf, ERRLEN))
  return self
end

function Event:synchronize()
  if self.open == 0 then util.fail("event.synchronize", "the event is closed") end
  native.check(C.cuasync_event_synchronize(self.handle, errbuf, ERRLEN))
end

-- Milliseconds from self to later (both recorded, later completed).
local ms = ffi.new("float[1]")
function Event:elapsed(later)
  if not ffi.istype("cuasync_event", later) then
    util.fail("event.elapsed", ("later must be a cuasync.event() (got %s)"):format(util.describe(later)))
  end
  if self.open == 0 or later.open == 0 then util.fail("event.elapsed", "the event is closed") end
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
return M
