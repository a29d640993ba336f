-- The timed rounds of a batch, and what a row says of them (measure.lua builds and verifies;
-- this file times): a warm-up on the chip before the first round (S.warmup_ms), the variants
-- beside the baseline in interleaved rounds, each bench after S.settle_ms of untimed runs, the
-- GPU's conditions sampled after each variant's
-- bench of a round (NVML: clocks, power, temperature, clock-event reasons), more rounds for
-- the leaders while they are tied (rounds = "auto", up to S.max_rounds), and per row: the
-- baseline's figure in the same rounds (base_ms: ratio = base_ms / ms), the spread of its
-- rounds and whether it is stable (model/spread.lua), and its ceiling (model/ceiling.lua).
local device = require("cuasync.device")
local streams = require("cuasync.stream")
local conditions = require("cuasync.conditions")
local buffer = require("cuasync.buffer")
local errors = require("cuasync.errors")
local bench = require("cuasync.tools.bench")
local probe = require("cuasync.tools.probe")
local row = require("cuasync.tools.sweep.row")
local stop = require("cuasync.tools.sweep.stop")
local spread = require("cuasync.model.spread")
local ceiling = require("cuasync.model.ceiling")
local summarize = require("cuasync.model.conditions").summarize

local M = { SLOW_FACTOR = 2, SLOW_AFTER = 1, AUTO_STEP = 2 }

-- A note for the run's text, said once (S.result: the run in progress).
function M.note(S, text)
  local R = S.result
  if not R then return end
  R.notes = R.notes or {}
  for _, n in ipairs(R.notes) do if n == text then return end end
  R.notes[#R.notes + 1] = text
end

-- The flush before each rep (S.flush_l2): a memset over twice the L2, made on first use.
local function flusher(S)
  if not S.flush_l2 then return nil end
  if not S.flush_buf then S.flush_buf = buffer.alloc(2 * device.current().l2_bytes) end
  local buf = S.flush_buf
  return function() buf:fill(0) end
end

-- The chip brought to the power and clock state of the work before the first timed round: the
-- first of `all` (the baseline, else the first variant) run for S.warmup_ms. A cold chip runs
-- the first variants at clocks it cannot hold (QuACK's 200 ms warm-up, for the same reason).
local function warm(S, all)
  if S.host or (S.warmup_ms or 0) <= 0 or not all[1] then return end
  local run, t0 = all[1].run, streams.now_ns()
  local ok, err = pcall(function()
    repeat
      for _ = 1, 4 do run() end
      streams.synchronize({ timeout_ms = S.timeout_ms })
    until streams.now_ns() - t0 >= S.warmup_ms * 1e6
  end)
  if not ok then
    M.note(S, ("the warm-up on %s raised (%s): the rounds began on a cold chip"):format(
      all[1].baseline and all[1].label or "the first variant", errors.message(err)))
    return
  end
  M.note(S, ("warm-up: %s run for %d ms before the first timed round of each batch (warmup_ms)"):format(
    all[1].baseline and all[1].label or "the batch's first variant", S.warmup_ms))
end

-- The sampler of the GPU's conditions, or nil (a host sweep; NVML missing or failing: said once,
-- and the rows are measured without them).
local function sampler(S)
  if S.host then return nil end
  local dev = device.current()
  local ok, first, why = pcall(conditions.sample, dev)
  if not ok or not first then
    M.note(S, ("no clock, power, temperature or clock-event reasons in the rows: %s"):format(
      ok and tostring(why) or errors.message(first)))
    return nil
  end
  return function(v)
    local fine, s, lost = pcall(conditions.sample, dev)
    if not fine or not s then
      M.note(S, ("an NVML sample failed in the rounds (%s): the rows' conditions have fewer samples"):format(
        fine and tostring(lost) or errors.message(s)))
      return
    end
    for field, text in pairs(s.missing or {}) do M.note(S, ("NVML could not read %s: %s (the rows leave it out)"):format(field, text)) end
    v.samples = v.samples or {}
    v.samples[#v.samples + 1] = s
  end
end

-- The baseline's figures in the rounds a variant ran (its ids), in its order.
local function base_at(base, v)
  if not base or base.error then return nil end
  local by = {}
  for i, id in ipairs(base.ids) do by[id] = base.times[i] end
  local t = {}
  for _, id in ipairs(v.ids) do t[#t + 1] = by[id] end
  return #t == #v.ids and t or nil
end

-- More rounds for the variants tied with the best (and the baseline) until the best is
-- separated or every leader has had S.max_rounds. Each time keeps its round's id (v.ids), so
-- a variant that joins the leaders later is paired with the rounds it ran, not by position.
local function auto(S, all, base, observe)
  local had = S.rounds
  while not stop.requested() do
    local view = {}
    for _, v in ipairs(all) do
      if not v.baseline and not v.error and not v.slow then
        view[#view + 1] = { times = v.times, round_ids = v.ids, base_times = base_at(base, v), batch = "auto", work = v.work, v = v }
      end
    end
    local lead, why = spread.decide(view, had, S.max_rounds)
    if #lead == 0 then return why end
    local sub = {}
    if base and not base.error then sub[1] = { run = base.run, of = base } end
    for _, l in ipairs(lead) do sub[#sub + 1] = { run = l.v.run, of = l.v, work = l.v.work } end
    local n = math.min(M.AUTO_STEP, S.max_rounds - had)
    local call = S.host and function(...) return stop.pcall("the auto rounds", ...) end or pcall
    local ok, err = call(bench.rounds, sub, { rounds = n, reps = S.reps, before = flusher(S), keep_going = true,
      host = S.host or nil, warmup = S.host and 0 or nil, observe = observe and function(p) observe(p.of) end,
      settle_ms = not S.host and S.settle_ms or nil })
    if not ok then M.note(S, "auto rounds stopped: " .. errors.message(err)) return "error" end
    for _, p in ipairs(sub) do
      if p.error then p.of.error = p.error end
      for k, t in ipairs(p.times) do
        table.insert(p.of.times, t)
        table.insert(p.of.ids, had + k)
      end
    end
    had = had + n
  end
  return "stopped"
end

-- What a row keeps of its rounds: the baseline's figure in the same rounds beside it (its ratio
-- is to that), the spread, the conditions, the ceiling.
local function fill(S, v, base, dev, batch)
  local r = v.row
  r.kind, r.ms, r.times, r.slow, r.cost = "measured", v.ms, v.times, v.slow, v.ms / (v.work or 1)
  r.gbps = v.bytes and v.bytes / (v.ms * 1e6) or nil
  r.tflops = v.flops and v.flops / (v.ms * 1e9) or nil
  r.round_ids, r.batch, r.work = v.ids, batch, v.work
  r.base_times = base_at(base, v)
  r.base_ms = r.base_times and bench.median(r.base_times) or nil
  r.ratio = r.base_ms and r.base_ms / v.ms or nil
  spread.mark(r, S.spread_limit)
  r.sm_mhz, r.mem_mhz, r.power_w, r.temp_c, r.reasons = nil, nil, nil, nil, nil
  if v.samples and #v.samples > 0 then
    local c = summarize(v.samples)
    r.sm_mhz, r.mem_mhz, r.power_w, r.temp_c = c.sm_mhz, c.mem_mhz, c.power_w, c.temp_c
    r.reasons = c.reasons and table.concat(c.reasons, "+") or nil   -- nil: not read; "": none seen
  end
  r.ceiling, r.ceiling_of, r.of_copy = nil, nil, nil
  if dev then
    local why = ceiling.fill(r, dev, { flops = v.flops, bytes = v.bytes, dtype = v.dtype }, r.sm_mhz, S.copy_gbps)
    if why then M.note(S, why) end
  end
end

-- Batch ids: unique across the processes of one sweep (workers, shards, repeated runs), so that
-- rows of different rounds are never paired as if they shared them.
local batches, TOKEN = 0, ("%x%x"):format(os.time() % 0x10000, tonumber(streams.now_ns() % 0x1000000))

-- The measured copy bandwidth a byte row is also read against (cuasync.probe.memory's
-- cuMemcpyDtoD, measured once per device and driver, then cached): S.copy_gbps, or false.
local function copy_bandwidth(S, variants)
  local bytes = false
  for _, v in ipairs(variants) do bytes = bytes or v.bytes ~= nil end
  if not bytes then return end
  local ok, res = pcall(probe.memory, device.current())
  S.copy_gbps = ok and res.dtod_gbps or false
  if not ok then M.note(S, "no of_copy column: cuasync.probe.memory raised (" .. errors.message(res) .. ")") end
end

-- Time the variants (each { run, row, bytes, flops, dtype }) beside the baseline; fill their
-- rows. best_cost: the best ms per unit of work known from earlier batches (the early-exit bar).
-- Returns the baseline's row.
function M.time(S, variants, gpu, best_cost)
  local all, base = {}, nil
  if S.baseline and #variants > 0 then
    base = { label = S.baseline.name, run = S.baseline_run or S.baseline.run, baseline = true }
    all[1] = base
  end
  for _, v in ipairs(variants) do
    v.work, v.label = v.bytes or v.flops, v.row and ("#" .. tostring(v.row.index))
    all[#all + 1] = v
  end
  if #variants == 0 then return nil end
  -- the probe first: on a cache miss it runs for seconds, which would undo the warm-up
  if not S.host and S.copy_gbps == nil then copy_bandwidth(S, variants) end
  warm(S, all)
  local observe = sampler(S)
  -- keep_going: a variant that raises in the timed rounds fails alone, the others are measured
  -- a host sweep's rounds run its variants' code and nothing else: a region the sweep cannot poll
  local call = S.host and function(...) return stop.pcall(("the timed rounds of %d variants"):format(#variants), ...) end or pcall
  local ok, err = call(bench.rounds, all, { rounds = S.rounds, reps = S.reps, host = S.host or nil, warmup = S.host and 0 or nil,
    before = flusher(S), keep_going = true, observe = observe, settle_ms = not S.host and S.settle_ms or nil,
    early_exit = S.rounds > M.SLOW_AFTER and { after = M.SLOW_AFTER, factor = M.SLOW_FACTOR, best = best_cost } or nil })
  if not ok then
    for _, v in ipairs(variants) do row.set(v.row, "failed", "timing: " .. tostring(err), "timing") end
    return nil
  end
  for _, v in ipairs(all) do
    v.ids = {}
    for i = 1, #v.times do v.ids[i] = i end
  end
  if S.auto_rounds then
    local why = auto(S, all, base, observe)
    for _, v in ipairs(all) do v.ms = not v.error and bench.median(v.times) or nil end
    if why == "cap" then
      M.note(S, ("rounds = \"auto\": the leaders were still tied after %d rounds (max_rounds): the best line says so"):format(S.max_rounds))
    end
  end
  if base and base.error then
    M.note(S, ("the baseline %s raised in the timed rounds (%s): no ratios"):format(base.label, errors.message(base.error)))
    base = nil
  end
  batches = batches + 1
  local batch = ("%s:%s:%d"):format(TOKEN, tostring(gpu or "host"), batches)
  local dev = not S.host and device.current() or nil
  for _, v in ipairs(variants) do
    if v.error then
      row.set(v.row, "failed", "timing: " .. errors.message(v.error), "timing")
    else
      v.row.gpu = gpu
      fill(S, v, base, dev, batch)
    end
  end
  return base and { name = base.label, ms = base.ms, gbps = S.baseline.bytes and S.baseline.bytes / (base.ms * 1e6) or nil,
                    tflops = S.baseline.flops and S.baseline.flops / (base.ms * 1e9) or nil, times = base.times }
end

return M
