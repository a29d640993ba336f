-- Random valid single-thread mbarrier operation sequences, driven by the CPU model so that every
-- operation is defined in PTX: arrivals never exceed pending, the expected count stays >= 1,
-- tx-count stays within +-(2^20-1). Each op is { code, bytes, n } as spec/support/kernels/mbarrier_model.cu
-- reads them; `predict` replays a sequence on the model and returns what the hardware must report.
local mbarrier = require("cuasync.model.mbarrier")

local M = { ARRIVE = 1, ARRIVE_DROP = 2, EXPECT_TX = 3, COMPLETE_TX = 4, ARRIVE_EXPECT_TX = 5, CP_ASYNC_NOINC = 6 }
M.NAMES = { "arrive", "arrive_drop", "expect_tx", "complete_tx", "arrive_expect_tx", "cp_async_noinc" }
local MAX_TX = mbarrier.MAX_TX

-- rand(n) -> 1..n
function M.sequence(rand, max_ops)
  local counts = { 1, 1, 2, 3, 4, 5, 8, 32, 100, 1023 }
  local count = rand(10) == 1 and rand(MAX_TX) or counts[rand(#counts)]
  local mb = mbarrier.new(count)
  local ops = {}
  local function amount(n)   -- 1..n, often all of it (so that phases complete)
    if n <= 1 or rand(3) == 1 then return n end
    return rand(n)
  end
  local function tx_bytes(room)   -- 0..room, mostly small
    room = math.min(room, MAX_TX)
    if room <= 0 then return 0 end
    local r = rand(4)
    local b = r == 1 and rand(math.min(room, 64)) or r == 2 and rand(math.min(room, 16384))
              or r == 3 and rand(room) or 0
    return math.min(b, room)
  end
  for _ = 1, max_ops do
    local choice = rand(6)
    local op
    if choice == 6 and mb.pending >= 1 then   -- a cp.async's noinc arrival: one arrival, once the copy landed
      op = { M.CP_ASYNC_NOINC, 4, 1 }
    elseif (choice == 1 or choice == 5) and mb.pending >= 1 then
      if choice == 1 then
        op = { M.ARRIVE, 0, amount(mb.pending) }
      else
        op = { M.ARRIVE_EXPECT_TX, tx_bytes(MAX_TX - mb.tx), amount(mb.pending) }
      end
    elseif choice == 2 and mb.pending >= 1 and mb.expected >= 2 then
      op = { M.ARRIVE_DROP, 0, amount(math.min(mb.pending, mb.expected - 1)) }
    elseif choice == 3 or (mb.pending == 0 and mb.tx < 0) then
      -- with nothing pending, the phase waits on tx alone: bring it back towards zero, often exactly
      local room = math.min(MAX_TX, MAX_TX - mb.tx)
      op = { M.EXPECT_TX, (mb.tx < 0 and rand(2) == 1) and math.min(-mb.tx, room) or tx_bytes(room), 1 }
    else
      local room = math.min(MAX_TX, MAX_TX + mb.tx)
      op = { M.COMPLETE_TX, (mb.tx > 0 and rand(2) == 1) and math.min(mb.tx, room) or tx_bytes(room), 1 }
    end
    M.apply(mb, op)
    ops[#ops + 1] = op
  end
  return count, ops
end

function M.apply(mb, op)
  local code, bytes, n = op[1], op[2], op[3]
  if code == M.ARRIVE then return mb:arrive(n)
  elseif code == M.ARRIVE_DROP then return mb:arrive_drop(n)
  elseif code == M.EXPECT_TX then mb:expect_tx(bytes)
  elseif code == M.COMPLETE_TX then mb:complete_tx(bytes)
  elseif code == M.CP_ASYNC_NOINC then mb:cp_async_arrive(true):land()
  else return mb:arrive_expect_tx(bytes, n) end
end

-- The model's prediction after each op: { word = test_wait bits as the kernel packs them,
-- pending = the token's pending count or 0xFFFFFFFF, state = text }.
function M.predict(count, ops)
  local mb = mbarrier.new(count)
  local tokens, out = {}, {}
  for k, op in ipairs(ops) do
    local t = M.apply(mb, op)
    local pend = 0xFFFFFFFF
    if t then tokens[#tokens + 1] = t; pend = mb:pending_count(t) end
    local w = (mb:test_wait_parity(0) and 1 or 0) + (mb:test_wait_parity(1) and 2 or 0)
    for j, tok in ipairs(tokens) do
      if mb:test_wait(tok) then w = w + 2 ^ (j + 1) end
    end
    out[k] = { word = w, pending = pend, state = mb:state() }
  end
  return out
end

function M.describe(op)
  local code, bytes, n = op[1], op[2], op[3]
  local name = M.NAMES[code]
  if code == M.EXPECT_TX or code == M.COMPLETE_TX then return ("%s(%d)"):format(name, bytes) end
  if code == M.CP_ASYNC_NOINC then return name end
  if code == M.ARRIVE_EXPECT_TX then return ("%s(%d, %d)"):format(name, bytes, n) end
  return ("%s(%d)"):format(name, n)
end

return M
