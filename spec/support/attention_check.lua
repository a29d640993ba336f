-- The attention specs' GPU checks (spec/kernels/attention*_spec.lua): fresh random bf16 host data,
-- the CPU reference of a shape, and one variant run against it with its output and log-sum-exp
-- poisoned first (tolerances: attention.TOLERANCE); and the specs' plan maker (planner).
--   local AC = require("support.attention_check")
--   local data = AC.shape_data(b, h, s, d, causal); print(AC.check(plan options, data))
local ffi = require("ffi")
local cuasync = require("cuasync")
local H = require("helper")
local attention = require("cuasync.kernels.attention")
local model = require("cuasync.model.attention")
local json = require("cuasync.json")

local M = {}

-- Host data: fresh random bf16 with magnitudes in [2^-7, 1), as bits and values.
function M.random_bf16(n)
  local bits, vals = ffi.new("uint16_t[?]", n), {}
  for i = 0, n - 1 do
    -- magnitudes in [2^-7, 1): exponent 120..126, any mantissa, either sign (exact bf16 values)
    local x = (120 + H.random_u32() % 7) * 128 + H.random_u32() % 128 + (H.random_u32() % 2) * 0x8000
    bits[i], vals[i] = x, model.bf16_value(x)
  end
  local b = cuasync.alloc(n * 2)
  b:upload(bits, n * 2)
  return b, vals
end

function M.float_buffer(n) local b = cuasync.alloc(n * 4); b:poison(); return b end

-- A spec's plan maker: attention.plan of `defaults` with o's fields over them; a field set to
-- M.NONE is left out (the plan's own default then applies).
M.NONE = setmetatable({}, { __tostring = function() return "AC.NONE" end })
function M.planner(defaults)
  return function(o)
    local q = {}
    for k, v in pairs(defaults) do q[k] = v end
    for k, v in pairs(o or {}) do q[k] = v end
    for k, v in pairs(q) do if v == M.NONE then q[k] = nil end end
    return attention.plan(q)
  end
end

-- One variant against the CPU reference on one shape (data: M.shape_data of it); returns the report line.
function M.check(o, data)
  local bh, n = o.b * o.h, o.b * o.h * o.s * o.d
  local O, LSE = cuasync.alloc(n * (o.out == "f32" and 4 or 2)), M.float_buffer(bh * o.s)
  O:poison()
  local B = attention.build(o, { q = data.q, k = data.k, v = data.v, o = O, lse = LSE })
  B.run()
  cuasync.synchronize()
  local got = O:download(o.out == "f32" and "float" or "uint16_t", n)
  local lse = LSE:download("float", bh * o.s)
  local T = attention.TOLERANCE
  local worst, worst_lse = 0, 0
  for i = 0, n - 1 do
    local g = o.out == "f32" and got[i] or model.bf16_value(got[i])
    local d = math.abs(g - data.o[i])
    if not (d <= T.o.atol + T.o.rtol[o.out] * math.abs(data.o[i])) then   -- the message only for a failure
      error(("O[%d] = %s, want %s (%s)"):format(i, tostring(g), tostring(data.o[i]), json.encode(o)), 0)
    end
    worst = math.max(worst, d)
  end
  for i = 0, bh * o.s - 1 do
    local d = math.abs(lse[i] - data.lse[i])
    if not (d <= T.lse.atol + T.lse.rtol * math.abs(data.lse[i])) then
      error(("LSE[%d] = %s, want %s (%s)"):format(i, tostring(lse[i]), tostring(data.lse[i]), json.encode(o)), 0)
    end
    worst_lse = math.max(worst_lse, d)
  end
  O:close(); LSE:close()
  local grid = o.persistent and (" persistent grid %d"):format(B.config.grid[1]) or ""
  return ("b %d h %d s %d d %d causal %s q_tile %d kv_tile %d stages %d %s overlap %s out %s%s: largest difference O %.3g, LSE %.3g"):format(
    o.b, o.h, o.s, o.d, tostring(o.causal), o.q_tile, o.kv_tile, o.stages, o.schedule or "cooperative", tostring(o.overlap or false),
    o.out, grid, worst, worst_lse)
end

function M.shape_data(b, h, s, d, causal)
  local n = b * h * s * d
  local data = {}
  data.q, data.qv = M.random_bf16(n)
  data.k, data.kv = M.random_bf16(n)
  data.v, data.vv = M.random_bf16(n)
  data.o, data.lse = model.reference(data.qv, data.kv, data.vv, b * h, s, d, causal)
  return data
end

return M
