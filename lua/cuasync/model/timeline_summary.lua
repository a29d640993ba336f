-- What a timeline (timeline.lua) says: per barrier × role, how often and how long warps waited
-- and what share of their time that was; per stage, how long a copy took to land; one line of
-- diagnosis; and the knee a stage sweep reads. Pure Lua.
--   S = summary(T): S.kernel, S.duration (ns), S.roles ({ [role] = tracks }), S.rows ({ barrier,
--       role, count, open, total, median (ns), share }), S.stages ({ stage, copies, landed, waited,
--       median (issue -> landed, ns) }), S.producer_empty, S.consumer_full (shares or nil),
--       S.verdict, S.diagnosis, S.lost, S.dropped, S.problems
-- A share is wait time ÷ (T.duration × the tracks of that role): the part of that role's warps'
-- time spent waiting. A role no track carries as its main role counts the tracks that wait in it.
local util = require("cuasync.util")

local M = {}

-- The diagnosis' thresholds, as shares of a role's time:
M.STARVED = 0.20   -- consumers wait on full at least this much: memory-bound (the data comes late)
M.FED = 0.05       -- consumers wait on full less than this: fed (the data was there when asked for)
M.STALLED = 0.20   -- the producer waits on empty at least this much: every stage is taken
M.KNEE = 0.05      -- knee_stage: consumers have stopped waiting on full below this share

local function median(list)
  if #list == 0 then return nil end
  table.sort(list)
  local n = #list
  if n % 2 == 1 then return list[(n + 1) / 2] end
  return (list[n / 2] + list[n / 2 + 1]) / 2
end

local function pct(x) return x and ("%.1f%%"):format(100 * x) or "n/a" end

-- verdict, line for the consumers' share waiting on full (cf) and the producer's on empty (pe).
-- A TMA producer waits on empty in either bound case (it runs ahead until every stage is
-- taken): what tells them apart is whether consumers wait on full.
function M.diagnosis(cf, pe)
  if cf and cf >= M.STARVED then
    local why = pe == nil and "no producer warp traced"
                or pe >= M.STALLED and "every stage is in flight: more stages may help"
                or "the stages are not the limit: the copies are"
    return "memory-bound", ("memory-bound: consumers wait on full %s while the producer waits on empty %s (%s)"):format(
      pct(cf), pct(pe), why)
  end
  if (cf or 0) < M.FED and pe and pe >= M.STALLED then
    return "compute-bound", ("compute-bound: the producer waits on empty %s (stages sit full) while consumers wait on full %s"):format(
      pct(pe), pct(cf))
  end
  return "balanced", ("balanced: consumers wait on full %s, the producer waits on empty %s"):format(pct(cf), pct(pe))
end

local function check_timeline(where, T)
  if type(T) ~= "table" or type(T.tracks) ~= "table" or type(T.spans) ~= "table" then
    util.fail(where, ("T must be a timeline from timeline.build(raw) (got %s)"):format(util.describe(T)))
  end
end

-- The time track tr's events were recorded over: the whole run (T.duration), unless its ring
-- overflowed and kept only its newest events (then from the first one kept to its last): an
-- overflowed ring's waits or ranges over the whole run would read as a fraction of what they are.
function M.window(T, tr)
  if (tr.lost or 0) > 0 and tr.t_first and tr.t_last then return tr.t_last - tr.t_first end
  return T.duration or 0
end

function M.summary(T)
  check_timeline("timeline.summary", T)
  local S = { kernel = T.kernel, duration = T.duration or 0, roles = {}, rows = {}, stages = {},
              lost = T.lost or 0, dropped = T.dropped or 0, problems = T.problems or {}, tracks = #T.tracks }
  for _, tr in ipairs(T.tracks) do S.roles[tr.role] = (S.roles[tr.role] or 0) + 1 end
  -- tracks that wait in a role, for a role no track carries as its main one
  local waiting = {}
  local rows, order = {}, {}
  for _, s in ipairs(T.spans) do
    if s.kind == "wait" then
      local role = s.role or "user"
      waiting[role] = waiting[role] or {}
      waiting[role][s.track] = true
      local key = tostring(s.barrier) .. "\0" .. role
      local r = rows[key]
      if not r then
        r = { barrier = s.barrier, role = role, count = 0, open = 0, total = 0, waits = {} }
        rows[key] = r
        order[#order + 1] = r
      end
      r.count, r.total = r.count + 1, r.total + (s.t1 - s.t0)
      r.waits[#r.waits + 1] = s.t1 - s.t0
      if s.open then r.open = r.open + 1 end
    end
  end
  -- the time of the tracks of a role (those waiting in it, for a role no track carries as its main one)
  local function time_of(role)
    local t, main = 0, (S.roles[role] or 0) > 0
    for i, tr in ipairs(T.tracks) do
      if (main and tr.role == role) or (not main and (waiting[role] or {})[i]) then t = t + M.window(T, tr) end
    end
    return t
  end
  local function share(total, role)
    local t = time_of(role)
    if S.duration <= 0 or t <= 0 then return nil end
    return total / t
  end
  for _, r in ipairs(order) do
    r.median, r.waits = median(r.waits), nil
    r.share = share(r.total, r.role)
    S.rows[#S.rows + 1] = r
  end
  local rank = { producer = 1, consumer = 2 }
  table.sort(S.rows, function(a, b)
    local x, y = rank[a.role] or 3, rank[b.role] or 3
    if x ~= y then return x < y end
    if a.role ~= b.role then return a.role < b.role end
    return tostring(a.barrier) < tostring(b.barrier)
  end)
  local pe, cf = rows["empty\0producer"], rows["full\0consumer"]
  S.producer_empty = share(pe and pe.total or 0, "producer")
  S.consumer_full = share(cf and cf.total or 0, "consumer")
  -- per stage: issue -> landed (an upper bound: timeline.lua's flows say why)
  local by = {}
  for _, f in ipairs(T.flows or {}) do
    local st = by[tostring(f.stage)]
    if not st then
      st = { stage = f.stage, copies = 0, landed = 0, waited = 0, lat = {} }
      by[tostring(f.stage)] = st
      S.stages[#S.stages + 1] = st
    end
    st.copies = st.copies + 1
    if f.latency then st.landed, st.lat[#st.lat + 1] = st.landed + 1, f.latency end
    if f.waited then st.waited = st.waited + 1 end
  end
  for _, st in ipairs(S.stages) do st.median, st.lat = median(st.lat), nil end
  table.sort(S.stages, function(a, b)
    local x, y = tonumber(a.stage), tonumber(b.stage)
    if x and y then return x < y end
    return tostring(a.stage) < tostring(b.stage)
  end)
  if T.t0 == nil then
    S.verdict = "no events"
    S.diagnosis = "no events recorded" .. (S.lost > 0 and (" (%d lost to overflow)"):format(S.lost) or "")
  elseif not pe and not cf then
    S.verdict, S.diagnosis = "no pipeline waits", "no pipeline waits recorded"
  else
    S.verdict, S.diagnosis = M.diagnosis(S.consumer_full, S.producer_empty)
  end
  return S
end

-- Characters, not bytes: "µs" and "→" are two and three bytes of UTF-8.
local function width(s) return select(2, s:gsub("[^\128-\191]", "")) end

-- Lines of cells, columns aligned: left-aligned where left[i], else right-aligned.
local function columns(lines, left)
  local w = {}
  for _, l in ipairs(lines) do for i, c in ipairs(l) do w[i] = math.max(w[i] or 0, width(c)) end end
  local out = {}
  for _, l in ipairs(lines) do
    local t = {}
    for i, c in ipairs(l) do
      local pad = (" "):rep(w[i] - width(c))
      t[i] = left[i] and (c .. pad) or (pad .. c)
    end
    out[#out + 1] = (table.concat(t, "  "):gsub("%s+$", ""))
  end
  return out
end

local function ns(x) return x and ("%.0f"):format(x) or "-" end

function M.text(T)
  check_timeline("timeline.summary_text", T)
  local S = M.summary(T)
  local roles = {}
  for role, n in pairs(S.roles) do roles[#roles + 1] = ("%d %s"):format(n, role) end
  table.sort(roles)
  local out = { ("timeline of %s: %.3f µs, %d warp%s%s"):format(tostring(S.kernel or "a kernel"), S.duration / 1000,
                S.tracks, S.tracks == 1 and "" or "s", #roles > 0 and (" (" .. table.concat(roles, ", ") .. ")") or "") }
  if #S.rows > 0 then
    local lines = { { "barrier", "role", "waits", "open", "total µs", "median ns", "share" } }
    for _, r in ipairs(S.rows) do
      lines[#lines + 1] = { tostring(r.barrier or "(unnamed)"), r.role, tostring(r.count), tostring(r.open),
                            ("%.3f"):format(r.total / 1000), ns(r.median), r.share and pct(r.share) or "-" }
    end
    for _, l in ipairs(columns(lines, { true, true })) do out[#out + 1] = l end
  end
  if #S.stages > 0 then
    local lines = { { "stage", "copies", "landed", "waited", "median issue→landed ns" } }
    for _, st in ipairs(S.stages) do
      lines[#lines + 1] = { tostring(st.stage), tostring(st.copies), tostring(st.landed), tostring(st.waited), ns(st.median) }
    end
    for _, l in ipairs(columns(lines, {})) do out[#out + 1] = l end
    out[#out + 1] = "(landed: the first consumer wait on full[stage] to end, an upper bound on the landing; tight"
    out[#out + 1] = " where that wait waited, loose where the data was there before the consumer asked)"
  end
  if S.producer_empty or S.consumer_full then
    out[#out + 1] = ("producer waits on empty %s · consumers wait on full %s"):format(pct(S.producer_empty), pct(S.consumer_full))
  end
  out[#out + 1] = S.diagnosis
  if S.lost > 0 then
    out[#out + 1] = ("%d event%s lost to overflow (rings of %s events): the oldest events of those warps are missing"):format(
      S.lost, S.lost == 1 and "" or "s", tostring(T.cap or "?"))
  end
  if S.dropped > 0 then out[#out + 1] = ("%d end%s without a begin dropped"):format(S.dropped, S.dropped == 1 and "" or "s") end
  for _, p in ipairs(S.problems) do out[#out + 1] = "problem: " .. p end
  return table.concat(out, "\n") .. "\n"
end

-- The smallest stage count from which consumers wait on full less than `threshold` (M.KNEE) at
-- every measured count: a count that dips below it and a larger one that waits again is no
-- knee. rows: { { stages = n, consumer_full = share }, ... }; a row without a share is skipped;
-- several rows of one count: the one waiting most. nil where none qualifies.
function M.knee_stage(rows, threshold)
  local where = "timeline.knee_stage"
  util.list(where, "rows", rows)
  threshold = threshold == nil and M.KNEE or threshold
  if type(threshold) ~= "number" or not (threshold > 0 and threshold <= 1) then
    util.fail(where, ("threshold must be a share in (0, 1] (got %s)"):format(util.describe(threshold)))
  end
  local worst, counts = {}, {}
  for i, r in ipairs(rows) do
    util.kind(where, ("rows[%d]"):format(i), r, "table")
    util.count(where, ("rows[%d].stages"):format(i), r.stages)
    local cf = r.consumer_full
    if cf ~= nil then
      if type(cf) ~= "number" or not (cf >= 0 and cf <= 1) then
        util.fail(where, ("rows[%d].consumer_full must be a share in [0, 1] (got %s)"):format(i, util.describe(cf)))
      end
      if worst[r.stages] == nil then counts[#counts + 1] = r.stages end
      worst[r.stages] = math.max(worst[r.stages] or 0, cf)
    end
  end
  table.sort(counts)
  local knee
  for i = #counts, 1, -1 do
    if worst[counts[i]] < threshold then knee = counts[i] else break end
  end
  return knee
end

return M
