-- Streams and events: metatyped handles with an idempotent :close().
local ffi = require("ffi")
local native = require("cuasync.native")
local device = require("cuasync.device")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

ffi.cdef [[
typedef struct cuasync_stream { CUstream handle; int open; } cuasync_stream;
typedef struct cuasync_event { CUevent handle; int open; } cuasync_event;
]]

local M = {}
local Stream, Event = {}, {}

function Stream:synchronize()
  native.check(C.cuasync_stream_synchronize(self.handle, "waiting for a stream", errbuf, ERRLEN))
end

function Stream:close()
  if self.open ~= 0 then
    self.open = 0
    native.check(C.cuasync_stream_destroy(self.handle, errbuf, ERRLEN))
  end
end

local stream_t = ffi.metatype("cuasync_stream", {
  __index = Stream,
  __gc = function(s) if s.open ~= 0 then s.open = 0; C.cuasync_stream_destroy(s.handle, errbuf, ERRLEN) end end,
})

-- cuasync.stream{ non_blocking = true }
function M.stream(opts)
  device.current()
  local h = ffi.new("CUstream[1]")
  native.check(C.cuasync_stream_create(h, opts and opts.non_blocking and 1 or 0, errbuf, ERRLEN))
  return stream_t(h[0], 1)
end

-- The CUstream of a stream object or nil (the default stream).
function M.handle(s)
  if s == nil then return nil end
  if ffi.istype(stream_t, s) then
    if s.open == 0 then error("cuasync.stream: the stream is closed", 3) end
    return s.handle
  end
  error(("cuasync.stream: expected a cuasync.stream() or nil (got %s)"):format(type(s)), 3)
end

function Event:record(stream)
  native.check(C.cuasync_event_record(self.handle, M.handle(stream), errbuf, ERRLEN))
  return self
end

function Event:synchronize()
  native.check(C.cuasync_event_synchronize(self.handle, errbuf, ERRLEN))
end

-- Milliseconds from self to later (both recorded, later completed).
local ms = ffi.new("float[1]")
function Event:elapsed(later)
  native.check(C.cuasync_event_elapsed(ms, self.handle, later.handle, errbuf, ERRLEN))
  return ms[0]
end

function Event:close()
  if self.open ~= 0 then
    self.open = 0
    native.check(C.cuasync_event_destroy(self.handle, errbuf, ERRLEN))
  end
end

local event_t = ffi.metatype("cuasync_event", {
  __index = Event,
  __gc = function(e) if e.open ~= 0 then e.open = 0; C.cuasync_event_destroy(e.handle, errbuf, ERRLEN) end end,
})

function M.event()
  device.current()
  local h = ffi.new("CUevent[1]")
  native.check(C.cuasync_event_create(h, errbuf, ERRLEN))
  return event_t(h[0], 1)
end

M.stream_t, M.event_t = stream_t, event_t
return M
