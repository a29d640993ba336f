-- cuasync.model.timeline: the trace's rings as spans, instants and flows, and what they say, on
-- rings of a simulated pipeline whose waits, latencies and shares are planted. No GPU.
local timeline = require("cuasync.model.timeline")

-- A warp-specialized pipeline, simulated in iteration order (each time depends on earlier ones
-- only): per block, consumer warps 0..consumers-1 and the producer warp after them, `stages`
-- stages x `iterations`. The producer waits on empty[s] until the stage's last use is released,
-- arms, spends `issue` ns issuing; the copy lands `latency` ns after the issue. Consumer c waits
-- on full[s] until it landed (+ c ns, so the warps differ), computes `compute` ns (warp 0 in
-- range 1, "mma") and releases empty[s]. Returns the raw rings and what was planted.
local function pipeline(o)
  local S, N, NC, B = o.stages or 3, o.iterations or 40, o.consumers or 4, o.blocks or 1
  local P, L, C, base = o.issue, o.latency, o.compute, o.base or 1e12
  local raw = { kernel = "pipeline_tma", cap = 1024, lost = 0, slots = {}, names = { [1] = "mma", [3] = "epilogue" } }
  local truth = { empty = 0, full = 0, flows = {}, waits = 0, rel = {} }
  local first, last = math.huge, -math.huge
  for b = 0, B - 1 do
    local off = b * 100
    local function ev(list, t, kind, f)
      local e = { t = base + off + t, kind = kind }
      for k, v in pairs(f or {}) do e[k] = v end
      list[#list + 1] = e
      first, last = math.min(first, off + t), math.max(last, off + t)
    end
    local prod, cons, ct, pt, released = {}, {}, {}, 5, {}
    ev(prod, 0, "block_begin")
    for c = 1, NC do cons[c], ct[c] = {}, 5 ev(cons[c], 0, "block_begin") end
    for i = 0, N - 1 do
      local s = i % S
      local w = { role = "producer", barrier = "empty", stage = s, parity = (math.floor(i / S) + 1) % 2, iteration = i }
      local we = math.max(pt, released[i - S] or 0)
      ev(prod, pt, "wait_begin", w) ev(prod, we, "wait_end", w)
      truth.empty, truth.waits = truth.empty + (we - pt), truth.waits + 1
      ev(prod, we, "arm", { role = "producer", barrier = "full", stage = s, iteration = i, bytes = 16384 })
      pt = we + P
      ev(prod, pt, "issue", { role = "producer", stage = s, iteration = i, bytes = 16384 })
      local first_end, rel = math.huge, 0
      for c = 1, NC do
        local f = { role = "consumer", barrier = "full", stage = s, parity = math.floor(i / S) % 2, iteration = i }
        local wb, wend = ct[c], math.max(ct[c], pt + L + c)
        ev(cons[c], wb, "wait_begin", f) ev(cons[c], wend, "wait_end", f)
        if b == 0 and c == 1 then truth.rel[i] = { wb, wend } end
        truth.full, truth.waits, first_end = truth.full + (wend - wb), truth.waits + 1, math.min(first_end, wend)
        if c == 1 then ev(cons[c], wend, "range_begin", { id = 1 }) ev(cons[c], wend + C, "range_end", { id = 1 }) end
        ev(cons[c], wend + C, "release", { role = "consumer", barrier = "empty", stage = s, iteration = i })
        ct[c], rel = wend + C, math.max(rel, wend + C)
      end
      released[i] = rel
      truth.flows[#truth.flows + 1] = { block = b + 1, stage = s, iteration = i, issued = off + pt, latency = first_end - pt }
    end
    local done = math.max(pt, unpack(ct))
    ev(cons[1], done + 5, "mark", { id = 3 })
    cons[NC + 1] = prod
    for w, events in ipairs(cons) do
      ev(events, done + 10, "block_end")
      raw.slots[#raw.slots + 1] = { block = { b, 0, 0 }, linear = b, sm = 42 + b, cluster_rank = 0, warp = w - 1,
                                    count = #events, lost = 0, events = events }
    end
  end
  truth.duration = last - first
  truth.consumer_full = truth.full / (truth.duration * NC * B)
  truth.producer_empty = truth.empty / (truth.duration * B)
  return raw, truth
end

-- The producer slow to issue (copies the limit), every stage in flight, consumers slow (compute).
local MEMORY = { issue = 600, latency = 800, compute = 100 }
local LATENCY = { issue = 50, latency = 3000, compute = 100 }
local COMPUTE = { issue = 50, latency = 1000, compute = 1000 }

local function near(want, got)   -- within 1%
  assert.is_true(type(got) == "number" and math.abs(got - want) <= 0.01 * math.abs(want), ("want %s, got %s"):format(want, got))
end

local function find(list, f) for _, x in ipairs(list) do if f(x) then return x end end end

describe("cuasync.model.timeline", function()
  describe("build", function()
    it("pairs every wait, names it as the issue does, times it from the first event; keeps ranges and instants", function()
      local raw, truth = pipeline(MEMORY)
      local T = timeline.build(raw)
      assert.same({}, T.problems)
      assert.same({ "pipeline_tma", 1e12, 1e12 + truth.duration, truth.duration }, { T.kernel, T.t0, T.t1, T.duration })
      assert.same({ 5, 1, { 1, 2, 3, 4, 5 } }, { #T.tracks, #T.blocks, T.blocks[1].slots })
      assert.same({ { 0, 0, 0 }, 0, 42, 0 }, { T.blocks[1].block, T.blocks[1].linear, T.blocks[1].sm, T.blocks[1].cluster_rank })
      assert.same({ "consumer", "consumer", "producer", "block 0 · warp 4 · producer" },
                  { T.tracks[1].role, T.tracks[4].role, T.tracks[5].role, T.tracks[5].name })
      local waits, ranges, kinds = 0, 0, {}
      for _, s in ipairs(T.spans) do if s.kind == "wait" then waits = waits + 1 assert.is_true(s.t1 >= s.t0 and not s.open) end end
      assert.equal(truth.waits, waits)
      local s = find(T.spans, function(x) return x.track == 1 and x.kind == "wait" and x.iteration == 17 end)
      assert.same({ "wait full[2] · stage 2 · it 17", "full", 2, 1, "consumer", truth.rel[17] }, { s.name, s.barrier, s.stage, s.parity, s.role, { s.t0, s.t1 } })
      assert.equal("wait empty[2] · stage 2 · it 5", find(T.spans, function(x) return x.track == 5 and x.iteration == 5 end).name)
      -- ranges, named from raw.names, and instants
      for _, s in ipairs(T.spans) do if s.kind == "range" then ranges = ranges + 1 assert.same({ "mma", 1 }, { s.name, s.track }) end end
      assert.equal(40, ranges)
      for _, x in ipairs(T.instants) do kinds[x.kind] = (kinds[x.kind] or 0) + 1 end
      assert.same({ issue = 40, arm = 40, release = 160, mark = 1 }, kinds)
      assert.equal("epilogue", find(T.instants, function(x) return x.kind == "mark" end).name)
      assert.equal("issue stage 2 · it 17 · 16384 B", find(T.instants, function(x) return x.kind == "issue" and x.iteration == 17 end).name)
      assert.equal("release empty[1] · it 4", find(T.instants, function(x) return x.kind == "release" and x.iteration == 4 end).name)
      local one = { { t = 1, kind = "range_begin", id = 7 }, { t = 3, kind = "range_end", id = 7 } }   -- an unnamed range
      assert.equal("range 7", timeline.build({ slots = { { linear = 0, warp = 0, events = one } } }).spans[1].name)
    end)

    it("flows: one per (block, stage, iteration), landed at the first consumer wait on full to end", function()
      local raw, truth = pipeline({ issue = 600, latency = 800, compute = 100, blocks = 2 })
      local T = timeline.build(raw)
      assert.same({ 80, 1, 2, 43 }, { #T.flows, T.tracks[1].block, T.tracks[6].block, T.blocks[2].sm })
      for i, f in ipairs(T.flows) do
        local w = truth.flows[i]
        assert.same({ w.block, w.stage, w.iteration, w.issued, w.latency, 16384, f.issued + f.latency, T.blocks[f.block].slots[5] },
                    { f.block, f.stage, f.iteration, f.issued, f.latency, f.bytes, f.landed, f.from })
      end
    end)

    it("keeps an unpaired begin as a span open to its slot's last event", function()
      local raw = pipeline(MEMORY)
      local ev = raw.slots[1].events
      for i = #ev, 1, -1 do if ev[i].kind == "wait_end" then table.remove(ev, i) break end end
      local T, open = timeline.build(raw), {}
      for _, s in ipairs(T.spans) do if s.open then open[#open + 1] = s end end
      assert.same({ 1, 1, "wait", 39, ev[#ev].t - T.t0, T.tracks[1].t_last, 1 },
                  { #open, open[1].track, open[1].kind, open[1].iteration, open[1].t1, open[1].t1, timeline.summary(T).rows[2].open })
    end)

    it("drops and counts an overflowed ring's ends whose begins were lost", function()
      local raw = pipeline(MEMORY)
      local ev, k, kept = raw.slots[2].events, 40, {}
      while ev[k].kind ~= "wait_end" do k = k + 1 end   -- the newest events, from a wait_end on
      for i = k, #ev do kept[#kept + 1] = ev[i] end
      raw.slots[2].events, raw.slots[2].lost, raw.lost = kept, k - 1, k - 1
      local T = timeline.build(raw)
      assert.same({ 1, k - 1, {} }, { T.dropped, T.lost, T.problems })   -- no problem: expected of an overflowed ring
      local text = timeline.summary_text(T)
      assert.truthy(text:find(("%d events lost to overflow (rings of 1024 events)"):format(k - 1), 1, true), text)
      assert.truthy(text:find("1 end without a begin dropped", 1, true), text)
      -- in a ring that did not overflow, the same is a problem
      raw.slots[2].lost, raw.lost = 0, 0
      assert.same({ "block 0 · warp 1: 1 end without a begin in a ring that did not overflow: dropped" }, timeline.build(raw).problems)
    end)

    it("reads an overflowed ring's waits over the time its ring kept, not over the whole run", function()
      -- every consumer ring keeps its newest half: the share of its waits is that of the half it kept
      local raw = pipeline(MEMORY)
      local full, window = 0, 0
      for i = 1, 4 do
        local ev = raw.slots[i].events
        local k = math.floor(#ev / 2)
        while ev[k].kind ~= "wait_begin" do k = k + 1 end
        local kept, open = {}, nil
        for j = k, #ev do
          kept[#kept + 1] = ev[j]
          if ev[j].kind == "wait_begin" and ev[j].barrier == "full" then open = ev[j].t end
          if ev[j].kind == "wait_end" and ev[j].barrier == "full" and open then full, open = full + (ev[j].t - open), nil end
        end
        window = window + (kept[#kept].t - kept[1].t)
        raw.slots[i].events, raw.slots[i].lost = kept, k - 1
        raw.lost = raw.lost + k - 1
      end
      local S = timeline.summary(timeline.build(raw))
      assert.is_true(math.abs(S.consumer_full - full / window) < 1e-9, ("%s against %s"):format(S.consumer_full, full / window))
      -- the producer's ring kept everything: its share is over the whole run, as before
      local _, truth = pipeline(MEMORY)
      assert.is_true(math.abs(S.producer_empty - truth.producer_empty) < 1e-9)
      -- over the whole run the same waits would read as about half of that
      assert.is_true(S.consumer_full > 1.5 * full / (S.duration * 4))
    end)

    it("reports a slot whose time goes backwards, never raises, and keeps durations >= 0", function()
      local raw = pipeline(MEMORY)
      local ev = raw.slots[3].events
      ev[10].t, ev[11].t = ev[11].t + 500, ev[10].t
      local T = timeline.build(raw)
      assert.equal(1, #T.problems)
      assert.truthy(T.problems[1]:find("^block 0 · warp 2: time goes backwards 1 time %(first at event 11, by 500 ns%): read at"), T.problems[1])
      for _, s in ipairs(T.spans) do assert.is_true(s.t1 >= s.t0) end
    end)

    it("an empty raw (no slots, or slots with no events) gives a clear summary", function()
      for _, raw in ipairs({ { kernel = "k", cap = 1024, lost = 0, slots = {} }, {},
                             { kernel = "k", slots = { { block = { 0, 0, 0 }, linear = 0, sm = 3, warp = 0, events = {} } } } }) do
        local T = timeline.build(raw)
        local S = timeline.summary(T)
        assert.same({ 0, 0, 0, 0, true }, { T.duration, #T.spans, #T.instants, #T.flows, T.t0 == nil })
        assert.same({ "no events", "no events recorded" }, { S.verdict, S.diagnosis })
        assert.truthy(timeline.summary_text(T):find("no events recorded\n", 1, true))
      end
      assert.equal("no events recorded (12 lost to overflow)", timeline.summary(timeline.build({ lost = 12 })).diagnosis)
    end)

    it("a plain program's waits (no role, no barrier name): user tracks, no pipeline waits", function()
      local raw = { kernel = "plain", slots = { { linear = 3, sm = 1, warp = 0, events = {
        { t = 100, kind = "wait_begin" }, { t = 160, kind = "wait_end" },
        { t = 170, kind = "wait_begin", barrier = "done" }, { t = 200, kind = "wait_end", barrier = "done" } } } } }
      local T = timeline.build(raw)
      assert.same({ "user", "block 3 · warp 0 · user" }, { T.tracks[1].role, T.tracks[1].name })
      assert.same({ "wait barrier", "wait done" }, { T.spans[1].name, T.spans[2].name })
      local S = timeline.summary(T)
      assert.same({ "no pipeline waits recorded", 60 / 100 }, { S.diagnosis, S.rows[2].share })
      assert.same({ barrier = "done", role = "user", count = 1, open = 0, total = 30, median = 30, share = 0.3 }, S.rows[1])
    end)

    it("takes 64-bit integer times exactly, and says where a number past 2^53 lost its nanoseconds", function()
      local base = 1700000000000000000ULL
      local ev = { { t = base + 1234, kind = "wait_begin", barrier = "x" }, { t = base + 1241, kind = "wait_end", barrier = "x" },
                   { t = base + 1300, kind = "block_end" } }
      local T = timeline.build({ slots = { { linear = 0, warp = 0, events = ev } } })
      assert.same({ {}, 66, true, 0, 7 }, { T.problems, T.duration, T.t0 == base + 1234, T.spans[1].t0, T.spans[1].t1 })
      for _, e in ipairs(ev) do e.t = 1.7e18 + tonumber(e.t - base) end
      T = timeline.build({ slots = { { linear = 0, warp = 0, events = ev } } })
      assert.truthy(T.problems[1]:find("^times past 2%^53 ns came as Lua numbers"), T.problems[1])
    end)

    it("skips what it cannot read (an unknown kind, a slot that is no table, an event without a time), saying so", function()
      local raw = { slots = { { linear = 0, warp = 0, events = { { t = 1, kind = "wobble" }, { t = 2, kind = "wobble" },
                                                                  { kind = "mark", id = 1 }, { t = 5, kind = "mark", id = 2 } } }, 7 } }
      local T = timeline.build(raw)
      assert.same({ 1, { "2 events of unknown kind \"wobble\": skipped", "block 0 · warp 0: event 3 has no time (t = nil): skipped",
                         "slot 2 is 7, not a table: skipped" } }, { #T.instants, T.problems })
      assert.has.error(function() timeline.build("x") end, "cuasync.timeline.build: raw must be a table (got string)")
      assert.has.error(function() timeline.build({ slots = 3 }) end, "cuasync.timeline.build: raw.slots must be a table (got number)")
      assert.has.error(function() timeline.summary({}) end, "cuasync.timeline.summary: T must be a timeline from timeline.build(raw) (got an empty table)")
    end)
  end)

  describe("summary", function()
    local function check(regime, verdict, words)
      local raw, truth = pipeline(regime)
      local T = timeline.build(raw)
      local S = timeline.summary(T)
      near(truth.consumer_full, S.consumer_full)
      near(truth.producer_empty, S.producer_empty)
      assert.equal(verdict, S.verdict)
      for _, w in ipairs(words) do assert.truthy(S.diagnosis:find(w, 1, true), S.diagnosis) end
      local empty, full = S.rows[1], S.rows[2]
      assert.same({ { producer = 1, consumer = 4 }, "empty", "producer", 40, "full", "consumer", 160 },
                  { S.roles, empty.barrier, empty.role, empty.count, full.barrier, full.role, full.count })
      near(truth.full, full.total)
      near(truth.full / (truth.duration * 4), full.share)
      return S, truth, T
    end

    it("plants three regimes and reads their shares back within 1%, and the diagnosis' words", function()
      local S = check(MEMORY, "memory-bound", { "memory-bound: consumers wait on full", "while the producer waits on empty",
                                                "the stages are not the limit" })
      assert.is_true(S.consumer_full > 0.7 and S.producer_empty < 0.01, S.diagnosis)   -- the producer is busy issuing
      S = check(LATENCY, "memory-bound", { "memory-bound: consumers wait on full", "every stage is in flight: more stages may help" })
      assert.is_true(S.consumer_full > 0.8 and S.producer_empty > 0.8, S.diagnosis)
      S = check(COMPUTE, "compute-bound", { "compute-bound: the producer waits on empty", "(stages sit full)" })
      assert.is_true(S.consumer_full < timeline.FED and S.producer_empty > 0.8, S.diagnosis)
    end)

    it("per stage: the median issue -> landed latency, as planted", function()
      local S, truth = check(MEMORY, "memory-bound", {})
      assert.equal(3, #S.stages)
      for _, st in ipairs(S.stages) do
        local lat = {}
        for _, f in ipairs(truth.flows) do if f.stage == st.stage then lat[#lat + 1] = f.latency end end
        table.sort(lat)
        local n = #lat   -- 14 or 13 copies: an odd count's middle, an even count's two middles
        assert.same({ n, n, (lat[math.floor((n + 1) / 2)] + lat[math.ceil((n + 1) / 2)]) / 2 }, { st.copies, st.landed, st.median })
      end
      assert.equal(801, S.stages[1].median)   -- consumer warp 0 ends its wait 1 ns after the landing
      assert.same({ 14, 13, 13 }, { S.stages[1].waited, S.stages[2].waited, S.stages[3].waited })
      -- compute-bound: the data is there before the consumers ask, so landed is when they came,
      -- later than the landing (an upper bound, loose), and no such wait waited
      local C = timeline.summary(timeline.build((pipeline(COMPUTE))))
      assert.same({ 0, 0, true }, { C.stages[2].waited, C.stages[3].waited, C.stages[2].median > COMPUTE.latency })
    end)

    it("diagnosis: the thresholds decide, and a balanced pipeline says so", function()
      assert.same({ 0.20, 0.05, 0.20, 0.05 }, { timeline.STARVED, timeline.FED, timeline.STALLED, timeline.KNEE })
      assert.same({ "balanced", "balanced", "compute-bound", "memory-bound" }, { (timeline.diagnosis(0.10, 0.50)),
                  (timeline.diagnosis(0.01, 0.05)), (timeline.diagnosis(0.049, 0.20)), (timeline.diagnosis(0.20, 0)) })
      assert.same({ "balanced", "balanced: consumers wait on full 12.0%, the producer waits on empty 50.0%" },
                  { timeline.diagnosis(0.12, 0.5) })
      assert.equal("memory-bound: consumers wait on full 30.0% while the producer waits on empty n/a (no producer warp traced)",
                   select(2, timeline.diagnosis(0.3, nil)))
    end)

    it("summary_text: the table in aligned columns, the shares and the diagnosis", function()
      local text, lines = timeline.summary_text(timeline.build((pipeline(COMPUTE)))), {}
      for l in text:gmatch("[^\n]+") do lines[#lines + 1] = l end
      assert.truthy(lines[1]:find("^timeline of pipeline_tma: %d+%.%d+ µs, 5 warps %(1 producer, 4 consumer%)$"), lines[1])
      assert.truthy(lines[2]:find("^barrier  role      waits  open  total µs  median ns  share$"), lines[2])
      assert.truthy(lines[3]:find("^empty    producer     40     0  "), lines[3])
      local function w(s) return select(2, s:gsub("[^\128-\191]", "")) end   -- characters, not bytes
      assert.same({ w(lines[2]), w(lines[2]) }, { w(lines[3]), w(lines[4]) })
      assert.truthy(text:find("stage  copies  landed  waited  median issue→landed ns\n", 1, true), text)
      assert.truthy(text:find("\ncompute-bound: the producer waits on empty", 1, true), text)
      assert.truthy(text:find("\nproducer waits on empty %d+%.%d%% · consumers wait on full %d+%.%d%%\n"), text)
    end)
  end)

  describe("knee_stage", function()
    it("the smallest stage count from which consumers stop waiting on full", function()
      local rows = { { stages = 2, consumer_full = 0.6 }, { stages = 3, consumer_full = 0.3 }, { stages = 4, consumer_full = 0.04 },
                     { stages = 5, consumer_full = 0.06 }, { stages = 6, consumer_full = 0.02 }, { stages = 8, consumer_full = 0.01 } }
      assert.same({ 6, 4 }, { timeline.knee_stage(rows), timeline.knee_stage(rows, 0.1) })   -- 4 dips below, 5 waits again
      assert.same({}, { timeline.knee_stage({ { stages = 2, consumer_full = 0.5 } }), timeline.knee_stage({}) })
      -- several rows of one count: the one waiting most; a row without a share is skipped
      assert.equal(8, timeline.knee_stage({ { stages = 6, consumer_full = 0.01 }, { stages = 6, consumer_full = 0.2 },
                                            { stages = 7 }, { stages = 8, consumer_full = 0 } }))
      assert.has.error(function() timeline.knee_stage({ { stages = 0, consumer_full = 0 } }) end,
                       "cuasync.timeline.knee_stage: rows[1].stages must be a positive integer (got 0)")
      assert.has.error(function() timeline.knee_stage({ { stages = 2, consumer_full = 1.5 } }) end,
                       "cuasync.timeline.knee_stage: rows[1].consumer_full must be a share in [0, 1] (got 1.5)")
      assert.has.error(function() timeline.knee_stage({}, 0) end, "cuasync.timeline.knee_stage: threshold must be a share in (0, 1] (got 0)")
    end)

    it("finds the depth at which a simulated latency-bound pipeline stops starving its consumers", function()
      local rows = {}
      for stages = 2, 10 do
        local T = timeline.build((pipeline({ issue = 50, latency = 600, compute = 100, stages = stages, iterations = 200 })))
        rows[#rows + 1] = { stages = stages, consumer_full = timeline.summary(T).consumer_full }
      end
      local knee = timeline.knee_stage(rows)
      assert.is_number(knee)
      -- the knee waits below the threshold, one stage fewer above it; two stages starve
      assert.is_true(rows[knee - 1].consumer_full < timeline.KNEE and rows[knee - 2].consumer_full >= timeline.KNEE)
      assert.is_true(rows[1].consumer_full > 0.5)
    end)
  end)
end)
