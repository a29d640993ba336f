-- The trace buffer's layout, as kernels-src/cuasync/trace.cuh writes it: a header, one slot
-- header per traced warp, then each slot's ring of events.
local ffi = require("ffi")

ffi.cdef [[
typedef struct cuasync_trace_header { uint32_t magic, slots, cap, dropped, pad_[4]; } cuasync_trace_header;
typedef struct cuasync_trace_slot { uint32_t count, sm, block, rank; } cuasync_trace_slot;
typedef struct cuasync_trace_event { uint64_t t; uint32_t a, b; } cuasync_trace_event;
]]

local M = { MAGIC = 0x52545543 }   -- 'CUTR'
M.HEADER, M.SLOT, M.EVENT = ffi.sizeof("cuasync_trace_header"), ffi.sizeof("cuasync_trace_slot"), ffi.sizeof("cuasync_trace_event")
M.KINDS = { "wait_begin", "wait_end", "issue", "arm", "release", "mark", "range_begin", "range_end", "block_begin" }
M.ROLES = { [1] = "producer", [2] = "consumer" }

-- The bytes a launch of `slots` slots of `events` events needs.
function M.bytes(slots, events) return M.HEADER + M.SLOT * slots + M.EVENT * events * slots end

return M
