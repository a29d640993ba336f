-- The timeline of a traced kernel (issue 37): the per-warp event rings the reader hands over
-- (`raw`) as tracks, spans, instants and copy flows, read by the summary (timeline_summary.lua)
-- and the writers (trace/perfetto.lua, trace/svg.lua). Pure Lua, specified on synthetic rings.
--   raw = { kernel, cap, lost, names = { [id] = name }, slots = { { block = {x, y, z}, linear, sm,
--           cluster_rank, warp, count, lost, events = { { t, kind, role, barrier, stage, parity,
--           iteration, bytes, id }, ... } }, ... } }
--   T = timeline.build(raw)
--     T.kernel, T.cap, T.t0, T.t1 (absolute, as given), T.duration (ns), T.lost, T.dropped (ends
--     without a begin, dropped), T.problems (strings: the build never raises on bad data)
--     T.blocks[i]  = { block, linear, sm, cluster_rank, slots = { track indices, warp order } }
--     T.tracks[i]  = { block (index), linear, sm, warp, role, name, lost, events (in its ring), slot
--                      (index in raw.slots), t_begin, t_end (block_begin/end), t_first, t_last (its first
--                      and last event kept) }
--     T.spans[i]   = { track, kind = "wait" | "range", name, barrier, stage, parity, iteration,
--                      role, id, t0, t1 (ns from T.t0), open }
--     T.instants[i]= { track, kind = "issue" | "arm" | "release" | "mark", name, t, role, barrier,
--                      stage, iteration, bytes, id }
--     T.flows[i]   = { block, stage, iteration, issued, landed, latency, waited, bytes, from, to
--                      (tracks), asked (when that wait began) }: landed is an upper bound on the
--                      landing (flows() says why)
--   timeline.summary(T), summary_text(T), diagnosis(cf, pe), knee_stage(rows), window(T, track):
--   timeline_summary.lua
-- Times: a number or a 64-bit integer cdata. Relative times are differences taken before any
-- conversion, so a %globaltimer value (~1.7e18 ns, past 2^53) keeps its nanoseconds only when
-- the reader hands cdata; a number that large has already lost them (T.problems says so).
local util = require("cuasync.util")
local summary = require("cuasync.model.timeline_summary")

local M = {}

M.summary, M.summary_text = summary.summary, summary.text
M.diagnosis, M.knee_stage, M.window = summary.diagnosis, summary.knee_stage, summary.window
M.STARVED, M.FED, M.STALLED, M.KNEE = summary.STARVED, summary.FED, summary.STALLED, summary.KNEE

local KNOWN = { block_begin = true, block_end = true, wait_begin = true, wait_end = true, issue = true,
                arm = true, release = true, mark = true, range_begin = true, range_end = true }

local function problem(T, fmt, ...) T.problems[#T.problems + 1] = fmt:format(...) end

local function is_time(t)
  if type(t) == "number" then return t == t and t > -math.huge and t < math.huge end
  -- a 64-bit integer cdata subtracts from itself; a pointer or a struct does not
  return type(t) == "cdata" and pcall(function() return tonumber(t - t) end)
end

local function stage_of(barrier, stage)
  return (barrier or "barrier") .. (stage ~= nil and ("[" .. tostring(stage) .. "]") or "")
end

-- The issue's wording: "wait full[2] · stage 2 · it 17".
local function wait_name(e)
  local parts = { "wait " .. stage_of(e.barrier, e.stage) }
  if e.stage ~= nil then parts[#parts + 1] = "stage " .. tostring(e.stage) end
  if e.iteration ~= nil then parts[#parts + 1] = "it " .. tostring(e.iteration) end
  return table.concat(parts, " · ")
end

local function instant_name(e, names)
  local parts
  if e.kind == "mark" then return names[e.id] or ("mark " .. tostring(e.id)) end
  if e.kind == "issue" then parts = { "issue" .. (e.stage ~= nil and (" stage " .. tostring(e.stage)) or "") }
  else parts = { e.kind .. " " .. stage_of(e.barrier, e.stage) } end
  if e.iteration ~= nil then parts[#parts + 1] = "it " .. tostring(e.iteration) end
  if e.bytes ~= nil then parts[#parts + 1] = tostring(e.bytes) .. " B" end
  return table.concat(parts, " · ")
end

-- A wait_end closes the open wait_begin that carries the same fields (the contract repeats them).
local function wait_key(e)
  return table.concat({ tostring(e.role), tostring(e.barrier), tostring(e.stage), tostring(e.parity),
                        tostring(e.iteration) }, "\0")
end

-- The first and last valid time over every slot (nil, nil where there is none).
local function extent(slots)
  local lo, hi, big
  for _, slot in ipairs(slots) do
    if type(slot) == "table" and type(slot.events) == "table" then
      for _, e in ipairs(slot.events) do
        local t = type(e) == "table" and e.t
        if t and is_time(t) then
          if lo == nil or t < lo then lo = t end
          if hi == nil or t > hi then hi = t end
          if type(t) == "number" and math.abs(t) > 2 ^ 53 then big = true end
        end
      end
    end
  end
  return lo, hi, big
end

local function block_key(slot)
  if slot.linear ~= nil then return "l" .. tostring(slot.linear) end
  local b = type(slot.block) == "table" and slot.block or {}
  return ("b%s,%s,%s"):format(tostring(b[1]), tostring(b[2]), tostring(b[3]))
end

-- One slot's events as the track's spans and instants, appended to T.
local function read_slot(T, ti, slot, rel)
  local track = T.tracks[ti]
  local events = type(slot.events) == "table" and slot.events or {}
  local open, ranges = {}, {}   -- wait key -> { begin, t }; range id -> stack of { begin, t }
  local last, back, first_back, back_by = nil, 0, nil, 0
  local unpaired = 0
  local roles = {}
  local function wait_span(b, tb, te, is_open)
    T.spans[#T.spans + 1] = { track = ti, kind = "wait", name = wait_name(b), barrier = b.barrier, stage = b.stage,
                              parity = b.parity, iteration = b.iteration, role = b.role, t0 = tb, t1 = te,
                              open = is_open or nil, seq = #T.spans }
  end
  local function range_span(b, tb, te, is_open)
    T.spans[#T.spans + 1] = { track = ti, kind = "range", id = b.id, name = T.names[b.id] or ("range " .. tostring(b.id)),
                              t0 = tb, t1 = te, open = is_open or nil, seq = #T.spans }
  end
  for i, e in ipairs(events) do
    if type(e) ~= "table" then
      problem(T, "%s: event %d is %s, not a table: skipped", track.name, i, util.describe(e))
    elseif not is_time(e.t) then
      problem(T, "%s: event %d has no time (t = %s): skipped", track.name, i, util.describe(e.t))
    elseif not KNOWN[e.kind] then
      T.unknown[tostring(e.kind)] = (T.unknown[tostring(e.kind)] or 0) + 1
    else
      local t = rel(e.t)
      -- a ring is in time order: an event before the one ahead of it is read at that one's time
      if last and t < last then
        back = back + 1
        if not first_back then first_back, back_by = i, last - t end
        t = last
      end
      last = t
      track.t_first = track.t_first or t
      if e.role ~= nil then roles[e.role] = (roles[e.role] or 0) + 1 end
      local k = e.kind
      if k == "block_begin" then track.t_begin = track.t_begin or t
      elseif k == "block_end" then track.t_end = t
      elseif k == "wait_begin" then
        local key = wait_key(e)
        if open[key] then
          problem(T, "%s: %s begins again before its end (event %d): the first kept as open", track.name, wait_name(e), i)
          wait_span(open[key].e, open[key].t, t, true)
        end
        open[key] = { e = e, t = t }
      elseif k == "wait_end" then
        local key = wait_key(e)
        local b = open[key]
        if b then wait_span(b.e, b.t, t) open[key] = nil
        else T.dropped = T.dropped + 1 unpaired = unpaired + 1 end
      elseif k == "range_begin" then
        ranges[e.id] = ranges[e.id] or {}
        table.insert(ranges[e.id], { e = e, t = t })
      elseif k == "range_end" then
        local stack = ranges[e.id]
        local b = stack and table.remove(stack)
        if b then range_span(b.e, b.t, t) else T.dropped = T.dropped + 1 unpaired = unpaired + 1 end
      else
        T.instants[#T.instants + 1] = { track = ti, kind = k, name = instant_name(e, T.names), t = t, role = e.role,
                                        barrier = e.barrier, stage = e.stage, iteration = e.iteration, bytes = e.bytes, id = e.id,
                                        seq = #T.instants }
      end
    end
  end
  -- an unpaired begin (a hung kernel, or a ring cut short) stays open to the slot's last event
  for _, b in pairs(open) do wait_span(b.e, b.t, last, true) end
  for _, stack in pairs(ranges) do for _, b in ipairs(stack) do range_span(b.e, b.t, last, true) end end
  if back > 0 then
    problem(T, "%s: time goes backwards %d time%s (first at event %d, by %s ns): read at the time of the event before",
            track.name, back, back == 1 and "" or "s", first_back, tostring(back_by))
  end
  -- an overflowed ring lost the begins of its first ends: expected, counted in T.dropped only
  if unpaired > 0 and (tonumber(slot.lost) or 0) == 0 then
    problem(T, "%s: %d end%s without a begin in a ring that did not overflow: dropped", track.name, unpaired,
            unpaired == 1 and "" or "s")
  end
  -- the role most of its events carry; "user" where none does (ties: by name, for one answer)
  local best, n = nil, 0
  for r, c in pairs(roles) do if c > n or (c == n and tostring(r) < tostring(best)) then best, n = r, c end end
  track.role = best and tostring(best) or "user"
  track.name = track.name .. " · " .. track.role
  track.t_last = last
end

-- One flow per (block, stage, iteration) with an issue: issued is its first issue; landed the
-- earliest end of a consumer wait on full[stage] of that iteration in that block. That wait
-- ended once the data was there, so landed is an upper bound on the landing, never the landing
-- itself: a consumer that came late ends its wait late. waited: that wait lasted, so the data
-- landed while it spun and the bound is tight; false: the data was there before it was asked
-- for (a compute-bound kernel), and landed says when the consumer came. nil where none ended.
local function flows(T)
  local by, list = {}, {}
  local function key(track, stage, it) return tostring(T.tracks[track].block) .. "\0" .. tostring(stage) .. "\0" .. tostring(it) end
  for _, x in ipairs(T.instants) do
    if x.kind == "issue" then
      local k = key(x.track, x.stage, x.iteration)
      local f = by[k]
      if not f then
        f = { block = T.tracks[x.track].block, stage = x.stage, iteration = x.iteration, issued = x.t, from = x.track }
        by[k] = f
        list[#list + 1] = f
      elseif x.t < f.issued then f.issued, f.from = x.t, x.track end
      if x.bytes then f.bytes = (f.bytes or 0) + x.bytes end
    end
  end
  for _, s in ipairs(T.spans) do
    if s.kind == "wait" and not s.open and s.role == "consumer" and s.barrier == "full" then
      local f = by[key(s.track, s.stage, s.iteration)]
      if f and (f.landed == nil or s.t1 < f.landed) then
        f.landed, f.asked, f.to, f.waited = s.t1, s.t0, s.track, s.t1 > s.t0
      end
    end
  end
  for _, f in ipairs(list) do f.latency = f.landed and f.landed - f.issued end
  table.sort(list, function(a, b)
    if a.block ~= b.block then return a.block < b.block end
    if a.issued ~= b.issued then return a.issued < b.issued end
    return tostring(a.stage) < tostring(b.stage)
  end)
  return list
end

-- T is a timeline from M.build (the writers' argument check), else a named error for `where`.
function M.check(T, where)
  if type(T) ~= "table" or type(T.tracks) ~= "table" or type(T.spans) ~= "table" or type(T.flows) ~= "table"
     or type(T.blocks) ~= "table" then
    util.fail(where, ("T must be a timeline from timeline.build(raw) (got %s)"):format(util.describe(T)))
  end
end

function M.build(raw)
  util.kind("timeline.build", "raw", raw, "table")
  local slots = raw.slots == nil and {} or raw.slots
  util.kind("timeline.build", "raw.slots", slots, "table")
  local names = type(raw.names) == "table" and raw.names or {}
  local T = { kernel = raw.kernel, cap = raw.cap, names = names, problems = {}, dropped = 0, unknown = {},
              blocks = {}, tracks = {}, spans = {}, instants = {}, flows = {} }
  local t0, t1, big = extent(slots)
  T.t0, T.t1 = t0, t1
  T.duration = t0 and tonumber(t1 - t0) or 0
  if big then
    problem(T, "times past 2^53 ns came as Lua numbers, which have lost their last bits (256 ns at 1.7e18): hand them over as 64-bit integers (cdata)")
  end
  local function rel(t) return tonumber(t - t0) end
  -- tracks in block order, then warp order, so a block's warps sit together
  local order, lost = {}, 0
  for i, slot in ipairs(slots) do
    if type(slot) == "table" then order[#order + 1] = i
    else problem(T, "slot %d is %s, not a table: skipped", i, util.describe(slot)) end
  end
  local function lin(s) return tonumber(s.linear) or math.huge end
  table.sort(order, function(a, b)
    local sa, sb = slots[a], slots[b]
    if lin(sa) ~= lin(sb) then return lin(sa) < lin(sb) end
    if (tonumber(sa.warp) or 0) ~= (tonumber(sb.warp) or 0) then return (tonumber(sa.warp) or 0) < (tonumber(sb.warp) or 0) end
    return a < b
  end)
  local blocks = {}
  for _, i in ipairs(order) do
    local slot = slots[i]
    lost = lost + (tonumber(slot.lost) or 0)
    local bk = block_key(slot)
    local b = blocks[bk]
    if not b then
      b = { block = slot.block, linear = slot.linear, sm = slot.sm, cluster_rank = slot.cluster_rank, slots = {} }
      blocks[bk] = b
      T.blocks[#T.blocks + 1] = b
      b.index = #T.blocks
    elseif b.sm ~= slot.sm then
      problem(T, "block %s: its warps report SM %s and SM %s", tostring(slot.linear), tostring(b.sm), tostring(slot.sm))
    end
    local ti = #T.tracks + 1
    b.slots[#b.slots + 1] = ti
    T.tracks[ti] = { block = b.index, linear = slot.linear, sm = slot.sm, warp = slot.warp, lost = tonumber(slot.lost) or 0,
                     slot = i, events = type(slot.events) == "table" and #slot.events or 0,
                     name = ("block %s · warp %s"):format(tostring(slot.linear), tostring(slot.warp)) }
    read_slot(T, ti, slot, rel)
  end
  T.lost = tonumber(raw.lost) or lost
  for k, n in pairs(T.unknown) do problem(T, "%d event%s of unknown kind %s: skipped", n, n == 1 and "" or "s", util.describe(k)) end
  table.sort(T.problems)
  -- seq: ring order, so equal times keep it (table.sort is not stable)
  table.sort(T.spans, function(a, b)
    if a.track ~= b.track then return a.track < b.track end
    if a.t0 ~= b.t0 then return a.t0 < b.t0 end
    if a.t1 ~= b.t1 then return a.t1 > b.t1 end   -- the enclosing span first
    return a.seq < b.seq
  end)
  table.sort(T.instants, function(a, b)
    if a.track ~= b.track then return a.track < b.track end
    if a.t ~= b.t then return a.t < b.t end
    return a.seq < b.seq
  end)
  for _, list in ipairs({ T.spans, T.instants }) do for _, x in ipairs(list) do x.seq = nil end end
  T.unknown = nil
  T.flows = flows(T)
  return T
end

return M
