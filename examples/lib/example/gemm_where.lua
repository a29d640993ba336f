-- example.gemm_where(b, ms): where a built GEMM's time goes, from its timeline (docs/timeline.md):
-- b is gemm.build's result for a plan built with trace = { blocks = "all", names = gemm.TRACE_NAMES },
-- ms the untraced variant's median (the sweep's). Runs it once verified, reads the trace, returns
-- { consumer_full, producer_empty, epilogue, tail, tail_us, landed_ns, diagnosis } (shares of 1):
--   epilogue: the "epilogue" ranges' time over the consumer warps' time (as the summary's shares:
--     the time their rings kept, timeline.window);
--   tail: how long the blocks traced sit done before the last one ends (their mean), over ms: the
--     quantization the tile count leaves on the SMs (a persistent grid has one block an SM).
local cuasync = require("cuasync")
local timeline = require("cuasync.model.timeline")

return function(b, ms)
  b.poison(); b.run(); cuasync.synchronize()
  local ok, why = b.verify()
  if not ok then return nil, "the traced variant failed its check: " .. tostring(why) end
  local T = b.kernel:trace()
  local sum = T:summary()
  local epi, window = 0, 0   -- the epilogue's share: over the time the consumer tracks' rings kept, as the summary's
  for _, sp in ipairs(T.spans) do if sp.kind == "range" and sp.name == "epilogue" then epi = epi + (sp.t1 - sp.t0) end end
  for _, tr in ipairs(T.tracks) do if tr.role == "consumer" then window = window + timeline.window(T, tr) end end
  -- each block's end: its tracks' last event (block_end where a kernel records one; the GEMM's
  -- do not, so a block's last store drain after its last event is not in the tail)
  local ends, last = {}, 0
  for _, tr in ipairs(T.tracks) do
    local e = tr.t_end or tr.t_last
    if e then
      ends[tr.block] = math.max(ends[tr.block] or 0, e)
      last = math.max(last, e)
    end
  end
  local idle, n = 0, 0
  for _, e in pairs(ends) do idle, n = idle + (last - e), n + 1 end
  local tail_us = n > 0 and idle / n / 1e3 or 0
  local lat = {}
  for _, st in ipairs(sum.stages or {}) do if st.median then lat[#lat + 1] = st.median end end
  table.sort(lat)
  return { consumer_full = sum.consumer_full, producer_empty = sum.producer_empty,
           epilogue = window > 0 and epi / window or nil,
           tail_us = tail_us, tail = ms and tail_us / (ms * 1e3) or nil, landed_ns = lat[math.ceil(#lat / 2)],
           diagnosis = sum.diagnosis, blocks = n, lost = T.lost }
end
