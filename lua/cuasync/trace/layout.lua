-- The trace buffer's layout, as kernels-src/cuasync/trace.cuh writes it: a header, one slot
-- header per traced warp, then each slot's three rings of events (0 the warp's own, placed by
-- the slot's counter; 1 its producer's, 2 its consumer's, placed by the pipeline iteration).
local ffi = require("ffi")

ffi.cdef [[
typedef struct cuasync_trace_header { uint32_t magic, slots, cap, dropped, epoch, pad_[3]; } cuasync_trace_header;
typedef struct cuasync_trace_params { uint64_t buf; uint32_t slots, epoch; } cuasync_trace_params;
typedef struct cuasync_trace_slot { uint32_t count, sm, block, rank; } cuasync_trace_slot;
typedef struct cuasync_trace_event { uint64_t t; uint32_t dur, a, b, epoch; uint64_t aux; } cuasync_trace_event;
]]

local M = { MAGIC = 0x52545543 }   -- 'CUTR'
M.HEADER, M.SLOT, M.EVENT = ffi.sizeof("cuasync_trace_header"), ffi.sizeof("cuasync_trace_slot"), ffi.sizeof("cuasync_trace_event")
M.KINDS = { [1] = "wait", [3] = "issue", [4] = "arm", [5] = "release", [6] = "mark", [7] = "range_begin",
            [8] = "range_end", [9] = "block_begin", [10] = "sync" }
M.RINGS = 3
M.ROLES = { [1] = "producer", [2] = "consumer" }

-- The bytes a launch of `slots` slots of `events` events needs.
function M.bytes(slots, events) return M.HEADER + M.SLOT * slots + M.EVENT * M.RINGS * events * slots end

return M
