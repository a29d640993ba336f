-- A ring of shared-memory stages: the arithmetic every staged kernel needs (copy_bulk, the
-- patterns, tile_copy), written once. Pure Lua: the device's limit is passed in.
--   local r = ring.plan{ stages = 10, stage_bytes = 4096, align = 1024, barriers = 1 }
--   r.pitch (bytes between stage starts), r.data_bytes, r.barrier_bytes, r.smem (all of it)
--   ring.fit(r, smem_optin, "copy", "stages * chunk")   -- raises naming the limit and the excess
local util = require("cuasync.util")

local M = {}

M.BARRIER_BYTES = 8   -- one mbarrier (an 8-byte-aligned 64-bit word)

local function round_up(x, a) return math.ceil(x / a) * a end
M.round_up = round_up

-- plan{ stages, stage_bytes, align = 16, barriers = 0 (mbarriers per stage, after the data) }
function M.plan(o)
  util.kind("ring", "plan's argument", o, "table")
  local where = type(o.where) == "string" and o.where or "ring"
  local stages = util.int_in(where, "stages", o.stages, 1, 1024)
  local stage_bytes = util.int_in(where, "stage_bytes", o.stage_bytes, 1, 2 ^ 31)
  local align = util.int_in(where, "align", o.align or 16, 1, 4096)
  local barriers = util.int_in(where, "barriers", o.barriers or 0, 0, 64)
  local pitch = round_up(stage_bytes, align)
  local data = stages * pitch
  local bar = stages * barriers * M.BARRIER_BYTES
  return { stages = stages, stage_bytes = stage_bytes, align = align, pitch = pitch, data_bytes = data,
           barrier_offset = round_up(data, M.BARRIER_BYTES), barrier_bytes = bar,
           smem = round_up(data, M.BARRIER_BYTES) + bar }
end

-- Raise when the ring (plus `extra` bytes) does not fit `optin` bytes per block.
function M.fit(r, optin, where, what, extra)
  local need = r.smem + (extra or 0)
  if need > optin then
    util.fail(where, ("%s = %d bytes of shared memory%s exceeds the device's %d bytes per block (smem_optin) by %d: fewer stages or smaller stages"):format(
      what or "stages * stage_bytes", r.data_bytes,
      (r.barrier_bytes + (extra or 0)) > 0 and (" (plus %d for barriers)"):format(r.barrier_bytes + (extra or 0)) or "",
      optin, need - optin))
  end
  return r
end

return M
