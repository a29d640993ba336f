-- The trace buffer of a traced module: made for each launch configuration (grown when a larger
-- one comes), its counts reset and the launch's epoch set before each launch (two memsets), an
-- event recorded after it to tell when it is done (trace/read.lua refuses a read before then).
local ffi = require("ffi")
local native = require("cuasync.native")
local util = require("cuasync.util")
local capture = require("cuasync.capture")
local layout = require("cuasync.trace.layout")
require("cuasync.cdef.memory")
require("cuasync.cdef.event")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN
local HEADER, SLOT = layout.HEADER, layout.SLOT
-- where the per-launch memsets write: the parameters' epoch; the header from dropped on
local EPOCH_AT = ffi.offsetof("cuasync_trace_params", "epoch")
local DROPPED_AT = ffi.offsetof("cuasync_trace_header", "dropped")

local M = { HEADERS = 256 }   -- pinned headers, one per launch in turn

-- A freshly loaded module of a traced program: where its buffer pointer lives.
function M.attach(mod)
  mod.trace = { options = mod.program.trace, generation = native.state.generation }
  -- trace.cuh comes with every cuasync device header that waits; a source with none has no buffer
  local ok, v = pcall(mod.global, mod, "cuasync_trace")
  if not ok then mod.trace.missing = true return end
  mod.trace.global = v.ptr
  v:close()
end

-- The traced blocks of a grid, and the slots (warps of them) a launch needs.
local function slots_of(o, c)
  local blocks = c.grid[1] * c.grid[2] * c.grid[3]
  local traced = type(o.blocks) == "table" and #o.blocks or math.ceil(blocks / o.blocks)
  return traced * math.ceil(c.block[1] * c.block[2] * c.block[3] / 32)
end

local function free_later(t)
  local dev, host, ev, gen = t.dev, t.host, t.event, t.generation
  return function()
    if gen ~= native.state.generation then return end
    local function free()
      if dev then C.cuasync_mem_free(dev, errbuf, ERRLEN) end
      if host then C.cuasync_mem_free_host(host, errbuf, ERRLEN) end
      if ev then C.cuasync_event_destroy(ev, errbuf, ERRLEN) end
    end
    if not capture.defer(free) then free() end
  end
end

-- Kernel:prepare's hook for a traced module: the buffer made big enough for this configuration;
-- returns the function go() calls before each launch (the launch's epoch set, the counts zeroed;
-- the header and parameters written where they changed) and after it (remember what ran, and an
-- event to tell when it is done).
local epoch = 0   -- each launch's: a ring keeps events of earlier launches, which are not read

function M.prepare(k, c)
  local t = k.module.trace
  if t.missing then return nil end
  -- before any allocation: a capture would record it, and a graph could not reset the buffer
  if capture.state.active then
    util.fail("launch", ("kernel '%s' is traced: a graph cannot hold it (its trace buffer is reset before every launch); build the graph from a program without trace"):format(k.name))
  end
  local o = t.options
  local slots = slots_of(o, c)
  local bytes = layout.bytes(slots, o.events)
  if not t.dev or t.bytes < bytes then
    if t.guard then
      -- the last launch may still write into the old buffer: wait for it before it is freed
      native.check(C.cuasync_event_synchronize(t.event, errbuf, ERRLEN))
      t.guard, t.kernel = nil, nil   -- the old launch's events go with the old buffer
      collectgarbage()
    end
    local d, h, ev = ffi.new("CUdeviceptr[1]"), ffi.new("void *[1]"), ffi.new("CUevent[1]")
    native.check(C.cuasync_mem_alloc(d, bytes, errbuf, ERRLEN))
    t.dev, t.bytes = d[0], bytes
    t.written = nil   -- a new buffer has no header yet (the driver may give back the old address)
    native.check(C.cuasync_mem_alloc_host(h, (HEADER + ffi.sizeof("cuasync_trace_params")) * M.HEADERS, errbuf, ERRLEN))
    t.host = h[0]
    native.check(C.cuasync_event_create(ev, errbuf, ERRLEN))
    t.event = ev[0]
    t.guard = ffi.gc(ffi.new("char[1]"), free_later(t))
  end
  local header = ffi.new("cuasync_trace_header")
  header.magic, header.slots, header.cap = layout.MAGIC, slots, o.events
  local params = ffi.new("cuasync_trace_params")
  params.slots = slots
  local PARAMS = ffi.sizeof(params)
  local name = k.name
  local mod = k.module
  return function(stream)
    if capture.state.active then
      util.fail("launch", ("kernel '%s' is traced: a graph cannot hold it (its trace buffer is reset before every launch); build the graph from a program without trace"):format(name))
    end
    -- one buffer a module: a launch on another stream while the last one runs would reset it under it
    if t.kernel and t.stream ~= stream then
      local done = ffi.new("int[1]")
      native.check(C.cuasync_event_query(t.event, done, errbuf, ERRLEN))
      if done[0] == 0 then
        util.fail("launch", ("kernel '%s' is traced, and its module's last traced launch ('%s') still runs on another stream: a module's traced launches share one buffer (launch them on one stream, or synchronize first)"):format(name, t.kernel))
      end
    end
    epoch = epoch % 0xFFFFFFFF + 1
    -- Each operation queued here sits between the kernel and the one before it on the stream
    -- (H200, the 1 GiB copy: two small copies and a memset cost it 2.3-2.5%, two memsets
    -- 0.7-1.0%). So a launch queues two memsets: the epoch into the kernel's parameters and zeros
    -- over the counts (header.dropped and the slot headers); the header's other words and the
    -- parameters' buffer and slots are copied only when they change (a new buffer, another
    -- kernel or configuration of the module).
    if t.written ~= slots or t.written_dev ~= t.dev then
      params.buf, params.epoch = t.dev, epoch   -- the buffer now (a larger launch may have made a new one)
      -- the copy runs later: each such launch takes its own of HEADERS pinned headers, so a
      -- launch queued behind another does not change the header that one is still to copy
      local src = ffi.cast("uint8_t *", t.host) + (HEADER + PARAMS) * (epoch % M.HEADERS)
      ffi.copy(src, header, HEADER)
      ffi.copy(src + HEADER, params, PARAMS)
      native.check(C.cuasync_mem_htod_async(t.dev, src, HEADER, stream, errbuf, ERRLEN))
      native.check(C.cuasync_mem_htod_async(t.global, src + HEADER, PARAMS, stream, errbuf, ERRLEN))
      t.written, t.written_dev = slots, t.dev
    else
      native.check(C.cuasync_mem_set32_async(t.global + EPOCH_AT, epoch, 1, stream, errbuf, ERRLEN))
    end
    native.check(C.cuasync_mem_set8_async(t.dev + DROPPED_AT, 0, HEADER - DROPPED_AT + SLOT * slots, stream, errbuf, ERRLEN))
    -- the counts now belong to this epoch: a launch that then fails leaves t.epoch behind it,
    -- and trace/read.lua refuses the read rather than return the last launch's events cut down
    t.reset_epoch = epoch
  end, function(stream)
    t.kernel, t.slots, t.config, t.epoch, t.stream = name, slots, { grid = c.grid, block = c.block }, epoch, stream
    -- what M.last reads (the sweep's traced run); weak: it keeps no module alive
    M.last_launch = setmetatable({ module = mod, name = name }, { __mode = "v" })
    native.check(C.cuasync_event_record(t.event, stream, errbuf, ERRLEN))
  end
end

return M
